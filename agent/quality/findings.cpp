#include "agent/quality/findings.h"

#include <nlohmann/json.hpp>

namespace querypilot {

const std::vector<FindingRow>& FindingRows() {
  // Critical findings are strong evidence of a wrong answer, measured on
  // published systems' SQL over real databases (eval/README.md); notes read
  // the question's words, or their evidence may be the data itself (on
  // Spider train's gold they sent back 5.4% of right answers).
  // clang-format off
  static const std::vector<FindingRow> rows = {
      // finding                    name                  tier             also_note hollow strategy  prompt
      {Finding::kValueElsewhere,    "value_elsewhere",    Tier::kCritical, false, false, "pivot",   "result.pivot"},
      {Finding::kValueNotFound,     "value_not_found",    Tier::kCritical, false, false, "rewrite", "result.rewrite"},
      {Finding::kNullAbsent,        "null_absent",        Tier::kCritical, false, false, "rewrite", "result.null"},
      {Finding::kJoinOnKeys,        "join_on_keys",       Tier::kCritical, false, false, "rewrite", "result.join"},
      {Finding::kHintColumnUnused,  "hint_column_unused", Tier::kCritical, false, false, "rewrite", "result.hint"},
      {Finding::kForeignKeyIds,     "foreign_key_ids",    Tier::kCritical, true,  false, "reshape", "result.ids"},
      {Finding::kPercentageBounds,  "percentage_bounds",  Tier::kCritical, false, false, "relax",   "result.percentage"},
      {Finding::kEmptyResult,       "empty_result",       Tier::kNote,     false, true,  "",        ""},
      {Finding::kZeroCount,         "zero_count",         Tier::kNote,     false, true,  "",        ""},
      {Finding::kAllNull,           "all_null",           Tier::kNote,     false, true,  "",        ""},
      {Finding::kTies,              "ties",               Tier::kNote,     false, false, "",        ""},
      {Finding::kTooManyRows,       "too_many_rows",      Tier::kNote,     false, false, "",        ""},
      {Finding::kValueMissing,      "value_missing",      Tier::kNote,     false, false, "",        ""},
      {Finding::kDuplicateRows,     "duplicate_rows",     Tier::kNote,     false, false, "",        ""},
      {Finding::kSlowScan,          "slow_scan",          Tier::kNote,     false, false, "",        ""},
      {Finding::kTruncated,         "truncated",          Tier::kInfo,     false, false, "",        ""},
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

std::string_view SeverityName(Tier t) {
  switch (t) {
    case Tier::kCritical:
      return "critical";
    case Tier::kNote:
      return "warning";
    case Tier::kInfo:
      return "info";
  }
  return "info";
}

std::string FindingsJson() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const FindingRow& row : FindingRows()) {
    nlohmann::ordered_json j;
    j["name"] = row.name;
    j["tier"] = row.tier == Tier::kCritical ? "critical"
                : row.tier == Tier::kNote   ? "note"
                                            : "info";
    j["severities"] = nlohmann::ordered_json::array({SeverityName(row.tier)});
    if (row.also_note) j["severities"].push_back(SeverityName(Tier::kNote));
    if (!row.strategy.empty()) j["strategy"] = row.strategy;
    if (!row.prompt.empty()) j["prompt"] = row.prompt;
    out.push_back(std::move(j));
  }
  return out.dump();
}

}  // namespace querypilot
