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
// then shape, then counts). What each one means is its row's `doc`.
enum class Finding {
  // Critical: proven by the data and the SQL.
  kValueElsewhere,
  kValueNotFound,
  kNullAbsent,
  kJoinOnKeys,
  kHintColumnUnused,
  kForeignKeyIds,
  kPercentageBounds,
  // Notes: read from the question's words, or the data may explain them.
  kEmptyResult,
  kZeroCount,
  kAllNull,
  kTies,
  kTooManyRows,
  kValueMissing,
  kDuplicateRows,
  kSlowScan,
  // Info: a fact about the result.
  kTruncated,
};

// critical: the result is sent back for another attempt; note: recorded in
// the reflection only; info: a fact, recorded only. Named by TierName()
// everywhere it leaves QueryPilot.
enum class Tier { kCritical, kNote, kInfo };

struct FindingRow {
  Finding finding;
  std::string_view name;  // in the reflection's JSON and agent_config('findings')
  Tier tier;              // the tier the finding is raised at
  // A critical finding that may be raised as a note
  // (ReflectionIssue::Note) when its evidence is only the question's words
  // (foreign_key_ids: the question names nothing the ids stand for). A
  // finding whose row says false is always raised at its row's tier.
  bool also_note;
  // A note that explains an answer away (no rows, a COUNT of 0, a column
  // NULL in every row: an aggregate over no rows): among candidate answers
  // (agent/quality/agreement.h), one it describes loses to one with rows.
  bool hollow;
  // Raised as a note, it bears on whether the answer is right and is
  // counted among a run's notes (ConfidenceNotes, reflect.h): not a hollow
  // note (counted on its own), not a note on speed (slow_scan), not a fact.
  bool counts_toward_confidence;
  // Critical findings only ("" for the rest): the strategy recorded in
  // agent_attempts.strategy when this finding is the strongest ("pivot",
  // "rewrite", "reshape", "relax"), and the name of the editable prompt text
  // (DefaultPromptTexts) that tells the model what to do about it.
  std::string_view strategy;
  std::string_view prompt;
  // What the finding means, in one sentence (agent_config('findings')).
  std::string_view doc;
};

// Every finding's row, in priority order (the order of enum Finding).
const std::vector<FindingRow>& FindingRows();

// The row of `f`. Never fails: every Finding has a row (findings_test.cpp).
const FindingRow& RowOf(Finding f);

// The finding called `name`, as it reads in a reflection's JSON; nullopt for
// any other text.
std::optional<Finding> FindingNamed(std::string_view name);

// "critical", "note" or "info": a tier as the reflection's JSON
// ("severity") and agent_config('findings') ("tier", "severities") say it.
std::string_view TierName(Tier t);

// The tier TierName() names; "warning", the name a note had in reflections
// recorded before, is kNote too. nullopt for any other text.
std::optional<Tier> TierNamed(std::string_view name);

// The table as JSON, for agent_config('findings'): one object per finding in
// priority order, {"name", "tier" ("critical" | "note" | "info"),
// "severities" (what the reflection may say: ["critical", "note"] for a
// critical finding also raised as a note), "strategy", "prompt", "doc"},
// strategy and prompt for critical findings only.
std::string FindingsJson();

}  // namespace querypilot
