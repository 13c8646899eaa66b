#include "agent/quality/findings.h"

#include <array>
#include <nlohmann/json.hpp>

#include "agent/base/enum_names.h"

namespace querypilot {

const std::vector<FindingRow>& FindingRows() {
  // Critical findings are strong evidence of a wrong answer, measured on
  // published systems' SQL over real databases (eval/README.md); notes read
  // the question's words, or their evidence may be the data itself (on
  // Spider train's gold they sent back 5.4% of right answers).
  // clang-format off
  static const std::vector<FindingRow> rows = {
      // finding                    name                  tier           also_note hollow confidence strategy prompt
      {Finding::kValueElsewhere,    "value_elsewhere",    Tier::kCritical, false, false, false, "pivot",   "result.pivot",
       "a compared literal occurs only in other columns (grounding.h)"},
      {Finding::kValueNotFound,     "value_not_found",    Tier::kCritical, false, false, false, "rewrite", "result.rewrite",
       "a compared literal does not occur in its column; near values do (grounding.h)"},
      {Finding::kNullAbsent,        "null_absent",        Tier::kCritical, false, false, false, "rewrite", "result.null",
       "IS NULL on a column that holds no NULL (grounding.h)"},
      {Finding::kJoinOnKeys,        "join_on_keys",       Tier::kCritical, false, false, false, "rewrite", "result.join",
       "a join equates two tables' own keys that no foreign key links"},
      {Finding::kHintColumnUnused,  "hint_column_unused", Tier::kCritical, false, false, false, "rewrite", "result.hint",
       "a \"Hint:\" line names a column the SQL never reads"},
      {Finding::kForeignKeyIds,     "foreign_key_ids",    Tier::kCritical, true,  false, true,  "reshape", "result.ids",
       "a column returns foreign-key ids the question does not ask for"},
      {Finding::kPercentageBounds,  "percentage_bounds",  Tier::kCritical, false, false, false, "relax",   "result.percentage",
       "a lone percentage below 0, above 100, or exactly 0 or 100"},
      {Finding::kEmptyResult,       "empty_result",       Tier::kNote,     false, true,  false, "",        "",
       "the result has no rows"},
      {Finding::kZeroCount,         "zero_count",         Tier::kNote,     false, true,  false, "",        "",
       "a lone COUNT that is 0"},
      {Finding::kAllNull,           "all_null",           Tier::kNote,     false, true,  false, "",        "",
       "a column NULL in every row"},
      {Finding::kTies,              "ties",               Tier::kNote,     false, false, true,  "",        "",
       "`= (SELECT MAX(...))` returns rows tied for the top"},
      {Finding::kTooManyRows,       "too_many_rows",      Tier::kNote,     false, false, true,  "",        "",
       "one item (or N) asked for, more returned"},
      {Finding::kValueMissing,      "value_missing",      Tier::kNote,     false, false, true,  "",        "",
       "a compared literal with nothing near it anywhere (grounding.h)"},
      {Finding::kDuplicateRows,     "duplicate_rows",     Tier::kNote,     false, false, true,  "",        "",
       "identical rows without DISTINCT or GROUP BY"},
      {Finding::kSlowScan,          "slow_scan",          Tier::kNote,     false, false, false, "",        "",
       "a full scan that no index serves (performance.h)"},
      {Finding::kTruncated,         "truncated",          Tier::kInfo,     false, false, false, "",        "",
       "max_rows cut the result"},
  };
  // clang-format on
  return rows;
}

const FindingRow& RowOf(Finding f) {
  // The rows are in the order of the enum (findings_test.cpp checks it).
  return FindingRows()[static_cast<size_t>(f)];
}

std::optional<Finding> FindingNamed(std::string_view name) {
  for (const FindingRow& row : FindingRows()) {
    if (row.name == name) return row.finding;
  }
  return std::nullopt;
}

namespace {

// One name a tier, in Tier's order.
constexpr std::array<std::string_view, 3> kTierNames = {"critical", "note", "info"};
static_assert(kTierNames.size() == static_cast<size_t>(Tier::kInfo) + 1);

}  // namespace

std::string_view TierName(Tier t) {
  return EnumName(kTierNames, t, "info");
}

std::optional<Tier> TierNamed(std::string_view name) {
  if (std::optional<Tier> t = EnumNamed<Tier>(kTierNames, name)) return t;
  if (name == "warning") return Tier::kNote;  // a note's name in earlier reflections
  return std::nullopt;
}

std::string FindingsJson() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const FindingRow& row : FindingRows()) {
    nlohmann::ordered_json j;
    j["name"] = row.name;
    j["tier"] = TierName(row.tier);
    j["severities"] = nlohmann::ordered_json::array({TierName(row.tier)});
    if (row.also_note) j["severities"].push_back(TierName(Tier::kNote));
    if (!row.strategy.empty()) j["strategy"] = row.strategy;
    if (!row.prompt.empty()) j["prompt"] = row.prompt;
    j["doc"] = row.doc;
    out.push_back(std::move(j));
  }
  return out.dump();
}

}  // namespace querypilot
