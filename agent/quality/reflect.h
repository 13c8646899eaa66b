// Reflect: after each attempt, decide whether the answer stands or the agent
// should try again, and say why. The record is stored as JSON in
// agent_runs.reflection.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/quality/findings.h"

namespace querypilot {

// One thing reflection found: a result finding (findings.h), or the error of
// an attempt that failed.
struct ReflectionIssue {
  ReflectionIssue() = default;
  // A result finding, at its row's tier.
  ReflectionIssue(Finding f, std::string msg)
      : finding(f), tier(RowOf(f).tier), message(std::move(msg)) {}
  // A result finding raised as a note, below its row's tier, when its row
  // says also_note; any other finding is raised at its row's tier, as the
  // constructor raises it. Never raises a finding above its row's tier.
  static ReflectionIssue Note(Finding f, std::string msg);
  // The error of a failed attempt: critical, named by its ErrorKind.
  static ReflectionIssue Error(ErrorKind kind, std::string msg);

  std::optional<Finding> finding;  // nullopt for an error
  ErrorKind error = ErrorKind::kNone;
  Tier tier = Tier::kCritical;
  std::string message;
  // Value grounding only: the literal, its column ("table.column") and the
  // real values (or "table.column" places) proposed instead.
  std::string literal;
  std::string column;
  std::vector<std::string> values;

  // The finding's name (findings.cpp) or the error's (ErrorKindName), as
  // "kind" in the reflection's JSON.
  std::string_view kind() const;
  // "critical" (a new attempt is wanted), "note" or "info" (TierName).
  std::string_view severity() const { return TierName(tier); }
  bool critical() const { return tier == Tier::kCritical; }
};

struct Reflection {
  bool is_acceptable = false;
  bool should_refine = false;
  std::vector<ReflectionIssue> issues;
  // For a result that ran but looks wrong, how the next attempt should
  // change it: the strategy of its strongest critical finding (findings.cpp):
  // "rewrite" (use the real values of a column), "pivot" (the value lives in
  // another column), "reshape" (the result's shape does not fit the
  // question), "relax" (a number the data cannot give: percentage_bounds).
  // "" otherwise (errors choose their strategy from their kind).
  std::string strategy;
  std::string reasoning;

  // Number of critical issues.
  size_t critical() const;

  // {"is_acceptable":..,"should_refine":..,"issues":[{kind,severity,message,
  //  [literal,column,values]}],["strategy":..,]"reasoning":..}
  std::string ToJson() const;
};

// The notes among `issues` that bear on whether the result is right: result
// findings raised as notes whose row says counts_toward_confidence.
size_t ConfidenceNotes(const std::vector<ReflectionIssue>& issues);

// What one attempt produced, as far as reflection needs to know.
struct AttemptOutcome {
  Status error;             // OK when the SQL ran
  size_t rows_seen = 0;     // rows read while checking the result
  bool complete = false;    // all rows were read (rows_seen is the row count)
  bool truncated = false;   // max_rows cut the result
  int refusals_before = 0;  // earlier attempts of this run that were refused
  // Findings about a result that ran (CheckResult, value grounding).
  std::vector<ReflectionIssue> result_issues;
};

// Critical errors a new attempt might fix refine; provider failures and a
// repeated query do not. A refused query refines once per run (the model may
// have misread the question, or followed text stored in the data); a second
// refusal ends the run. A result that ran is accepted unless
// a result finding is critical; then the reflection refines with the
// strategy of its strongest finding (the first in findings.cpp's order).
// Notes, such as an empty result, are recorded only: an empty answer can be
// the right one.
Reflection Reflect(const AttemptOutcome& outcome);

}  // namespace querypilot
