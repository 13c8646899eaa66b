// Critic: checks generated SQL with SQLite itself before anything runs.
//
// On a host's connection (one QueryPilot is loaded into), QueryPilot never
// sets an authorizer: SQLite cannot give the host's back. Its own rules are
// applied on the connection's check connection (agent/sql/check_connection.h),
// a private mirror of what SQL there can name, under QueryPilot's authorizer:
//   1. a query: SELECT, VALUES or WITH ... SELECT (the authorizer's first
//      question is SQLITE_SELECT), never EXPLAIN;
//   2. no write, ATTACH/DETACH, transaction or PRAGMA statement; no function
//      or table that reaches outside the database (load_extension, readfile,
//      writefile, edit, fts3_tokenizer, sha3_query, fsdir, zipfile, the raw
//      page readers); no table-valued pragma but those that read the schema;
//      nothing of QueryPilot's own (its functions, its tables, answer tables);
//   3. exactly one statement: anything after the first is refused.
// Then it is prepared on the host's connection, where the host's authorizer
// (if any) decides as for any statement of the host's, and
// sqlite3_stmt_readonly must be true; last, the program SQLite compiled it
// into there may call only SQLite's own functions and those the user allows
// (agent/sql/program.h): a view of the host's, TEMP or not, that calls the
// shell's writefile() is refused with the function's name.
// On a connection of QueryPilot's own (or a test's) the same rules run on it
// directly: the authorizer is set while preparing and removed after. Which
// of the two a connection is, the caller says with its SqlTarget
// (agent/sql/check_connection.h); a bare sqlite3* is not accepted.
#pragma once

#include <string>
#include <string_view>

#include "agent/base/status.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/statement.h"

struct sqlite3;

namespace querypilot {

// A prepared, read-only, single statement, or why not: kRefused (a write or
// forbidden operation; never retried), kMultipleStatements, kNoSql (nothing
// but comments), or the classified prepare error (kSyntaxError,
// kColumnNotFound, ...) with SQLite's own message. Where the host's SQLite
// has no authorizer, every query is refused with NoAuthorizerMessage().
// On a host's connection the prepare there runs under PRAGMA query_only
// (agent/sql/query_only.h), and a connection that does not allow it refuses
// the query. A default-made `target` (no connection) refuses every SQL.
Result<Statement> CheckSql(const SqlTarget& target, std::string_view sql);

// Why nothing runs on a SQLite built with SQLITE_OMIT_AUTHORIZATION.
std::string NoAuthorizerMessage();

}  // namespace querypilot
