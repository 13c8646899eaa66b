// Analyse: what kind of failure an attempt met, and a hint grounded in the
// real schema that tells the model how to fix it.
//
// Pure functions of SQLite's error text, the failed SQL and the Schema.
#pragma once

#include <string>
#include <string_view>

#include "agent/schema.h"
#include "agent/status.h"

namespace querypilot {

// The kind of a SQLite error message from prepare or step ("no such column:
// x" -> kColumnNotFound). Unknown messages are kExecutionError.
ErrorKind ClassifySqliteError(std::string_view message);

// The name an error is about, without its qualifier: "no such column: o.totl"
// -> "totl"; also "no such table:" and "ambiguous column name:". "" for
// other messages.
std::string MissingName(std::string_view message);

// A short hint for the model, or "" when there is nothing useful to add.
// Examples: "did you mean 'customers'? The tables are: customers, orders";
// "o is orders; orders has columns id, customer_id, total; did you mean
// 'total'?"; "SQLite has no YEAR(); use strftime('%Y', column)".
std::string ComputeHint(ErrorKind kind, std::string_view message, std::string_view sql,
                        const Schema& schema);

// Names within `max_distance` edits of `name` (case-insensitive) or sharing a
// word with it, closest first, at most `limit`.
std::vector<std::string> ClosestNames(std::string_view name,
                                      const std::vector<std::string>& candidates, size_t limit);

}  // namespace querypilot
