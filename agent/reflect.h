// Reflect: after each attempt, decide whether the answer stands or the agent
// should try again, and say why. The record is stored as JSON in
// agent_runs.reflection.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "agent/status.h"

namespace querypilot {

struct ReflectionIssue {
  std::string kind;      // an ErrorKind name, or "empty_result", "truncated"
  std::string severity;  // "critical", "warning" or "info"
  std::string message;
};

struct Reflection {
  bool is_acceptable = false;
  bool should_refine = false;
  std::vector<ReflectionIssue> issues;
  std::string reasoning;

  // {"is_acceptable":..,"should_refine":..,"issues":[{kind,severity,message}],"reasoning":..}
  std::string ToJson() const;
};

// What one attempt produced, as far as reflection needs to know.
struct AttemptOutcome {
  Status error;            // OK when the SQL ran
  size_t rows_seen = 0;    // rows read while checking the result
  bool complete = false;   // all rows were read (rows_seen is the row count)
  bool truncated = false;  // max_rows cut the result
};

// Critical errors a new attempt might fix refine; refused SQL, provider
// failures and a repeated query do not. An empty result is recorded as a
// warning and accepted: an empty answer can be the right one.
Reflection Reflect(const AttemptOutcome& outcome);

}  // namespace querypilot
