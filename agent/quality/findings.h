// Findings: everything the checks of a result that ran can find, one row
// each (findings.cpp), in priority order. A check raises a Finding; its name,
// tier, strategy and correction text are read from its row, and the name is
// written only where it leaves QueryPilot (agent_attempts.reflection,
// agent_config('findings')).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace querypilot {

// In priority order: when several critical findings send a result back, the
// strategy is the first one's (value evidence first, then joins and hints,
// then shape, then counts).
enum class Finding {
  // Critical: proven by the data and the SQL.
  kValueElsewhere,    // a compared literal occurs only in other columns (grounding.h)
  kValueNotFound,     // a compared literal does not occur; near values do (grounding.h)
  kNullAbsent,        // IS NULL on a column that has no NULL (grounding.h)
  kJoinOnKeys,        // a join equates two tables' own keys that no foreign key links
  kHintColumnUnused,  // a "Hint:" line names a column the SQL never reads
  kForeignKeyIds,     // a column returns foreign-key ids the question does not ask for
  kPercentageBounds,  // a lone percentage below 0, above 100, or exactly 0 or 100
  // Notes: read from the question's words, or the data may explain them.
  kEmptyResult,    // no rows
  kZeroCount,      // a lone COUNT that is 0
  kAllNull,        // a column NULL in every row
  kTies,           // `= (SELECT MAX(...))` rows tied for the top
  kTooManyRows,    // one item (or N) asked for, more returned
  kValueMissing,   // a compared literal with nothing near it anywhere (grounding.h)
  kDuplicateRows,  // identical rows without DISTINCT or GROUP BY
  kSlowScan,       // a full scan no index serves (performance.h)
  // Info: a fact about the result.
  kTruncated,  // max_rows cut the result
};

// critical: the result is sent back for another attempt; note: recorded in
// the reflection only (severity "warning"); info: a fact, recorded only.
enum class Tier { kCritical, kNote, kInfo };

struct FindingRow {
  Finding finding;
  std::string_view name;  // in the reflection's JSON and agent_config('findings')
  Tier tier;              // the tier the finding is raised at
  // A critical finding that is raised as a note when its evidence is only
  // the question's words (foreign_key_ids: the question names nothing the
  // ids stand for).
  bool also_note;
  // A note that explains an answer away (no rows, a COUNT of 0, a column
  // NULL in every row: an aggregate over no rows): among candidate answers
  // (agent/quality/agreement.h), one it describes loses to one with rows.
  bool hollow;
  // Critical findings only ("" for the rest): the strategy recorded in
  // agent_attempts.strategy when this finding is the strongest ("pivot",
  // "rewrite", "reshape", "relax"), and the name of the editable prompt text
  // (DefaultPromptTexts) that tells the model what to do about it.
  std::string_view strategy;
  std::string_view prompt;
};

// Every finding's row, in priority order (the order of enum Finding).
const std::vector<FindingRow>& FindingRows();

// The row of `f`. Never fails: every Finding has a row (findings_test.cpp).
const FindingRow& RowOf(Finding f);

// The finding called `name`, as it reads in a reflection's JSON; nullopt for
// any other text.
std::optional<Finding> FindingNamed(std::string_view name);

// "critical", "warning" or "info": a tier as a reflection's JSON says it.
std::string_view SeverityName(Tier t);

// The table as JSON, for agent_config('findings'): one object per finding in
// priority order, {"name", "tier" ("critical" | "note" | "info"),
// "severities" (what the reflection may say: ["critical", "warning"] for a
// critical finding also raised as a note), "strategy", "prompt"}, the last two
// for critical findings only.
std::string FindingsJson();

}  // namespace querypilot
