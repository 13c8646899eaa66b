// BoundedLookup: QueryPilot's own read-only queries over the user's data
// (value grounding, the value index), sharing one time budget.
//
// Each query is built by the caller with quoted identifiers and bound
// parameters, checked by the critic like any generated SQL, and run by the
// executor with what is left of the budget. A failed or cut-short query
// gives no rows; callers treat "no rows" from an expired lookup as unknown.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "agent/base/value.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"

struct sqlite3;

namespace querypilot {

class BoundedLookup {
 public:
  // `stop`: how a query past the budget ends (agent/sql/executor.h); never
  // StopMethod::kWatchdog, which would end the statement that asked.
  // `target`: the connection and how its SQL is checked.
  BoundedLookup(SqlTarget target, int budget_ms, StopMethod stop = StopMethod::kBetweenSteps);

  bool expired() const;

  // Up to `max_rows` rows of `sql`, `params` bound as text to ?1, ?2, ...
  std::vector<Row> Rows(const std::string& sql, const std::vector<std::string>& params,
                        size_t max_rows);
  // The text values of the first column of those rows.
  std::vector<std::string> Texts(const std::string& sql, const std::vector<std::string>& params,
                                 size_t max_rows);

 private:
  SqlTarget target_;
  std::chrono::steady_clock::time_point deadline_;
  StopMethod stop_;
};

}  // namespace querypilot
