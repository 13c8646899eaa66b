// Analyse: what kind of failure an attempt met, and a hint grounded in the
// real schema that tells the model how to fix it.
//
// Pure functions of SQLite's error text, the failed SQL and the Schema.
#pragma once

#include <string>
#include <string_view>

#include "agent/base/status.h"
#include "agent/knowledge/schema.h"
#include "agent/sql/sqlite_errors.h"
#include "agent/sql/sqlrefs.h"

namespace querypilot {

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

}  // namespace querypilot
