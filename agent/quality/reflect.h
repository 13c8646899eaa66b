// Reflect: after each attempt, decide whether the answer stands or the agent
// should try again, and say why. The record is stored as JSON in
// agent_runs.reflection.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/status.h"

namespace querypilot {

struct ReflectionIssue {
  ReflectionIssue() = default;
  ReflectionIssue(std::string k, std::string sev, std::string msg)
      : kind(std::move(k)), severity(std::move(sev)), message(std::move(msg)) {}

  std::string kind;      // an ErrorKind name, a result check's kind (result_check.h),
                         // a grounding kind (grounding.h), or "truncated"
  std::string severity;  // "critical" (a new attempt is wanted), "warning" or "info"
  std::string message;
  // Value grounding only: the literal, its column ("table.column") and the
  // real values (or "table.column" places) proposed instead.
  std::string literal;
  std::string column;
  std::vector<std::string> values;
};

struct Reflection {
  bool is_acceptable = false;
  bool should_refine = false;
  std::vector<ReflectionIssue> issues;
  // For a result that ran but looks wrong, how the next attempt should
  // change it: "rewrite" (use the real values of a column), "pivot" (the
  // value lives in another column), "reshape" (the result's shape does not
  // fit the question), "relax" (filters or joins matched nothing).
  // "" otherwise (errors choose their strategy from their kind).
  std::string strategy;
  std::string reasoning;

  // Number of critical issues.
  size_t critical() const;

  // {"is_acceptable":..,"should_refine":..,"issues":[{kind,severity,message,
  //  [literal,column,values]}],["strategy":..,]"reasoning":..}
  std::string ToJson() const;
};

// What one attempt produced, as far as reflection needs to know.
struct AttemptOutcome {
  Status error;            // OK when the SQL ran
  size_t rows_seen = 0;    // rows read while checking the result
  bool complete = false;   // all rows were read (rows_seen is the row count)
  bool truncated = false;  // max_rows cut the result
  int refusals_before = 0; // earlier attempts of this run that were refused
  // Findings about a result that ran (CheckResult, value grounding).
  std::vector<ReflectionIssue> result_issues;
};

// Critical errors a new attempt might fix refine; provider failures and a
// repeated query do not. A refused query refines once per run (the model may
// have misread the question, or followed text stored in the data); a second
// refusal ends the run. A result that ran is accepted unless
// a result finding is critical; then the reflection refines with the
// strategy of its strongest finding (value evidence first, then shape, then
// relax). Warnings, such as an empty result, are recorded only: an empty
// answer can be the right one.
Reflection Reflect(const AttemptOutcome& outcome);

}  // namespace querypilot
