// Critic: checks generated SQL with SQLite itself before anything runs.
//
// 1. sqlite3_prepare_v2 on the host connection, under an authorizer that
//    allows reads only: every write, ATTACH/DETACH, transactions, PRAGMA
//    statements, file and extension functions (load_extension, readfile,
//    writefile, edit, fts3_tokenizer, fsdir, zipfile, sha3_query) and
//    QueryPilot's own functions (no recursive ask) are denied. Preparing
//    also finds syntax errors and unknown tables and columns without running
//    anything.
// 2. sqlite3_stmt_readonly must be true.
// 3. Exactly one statement: anything after the first is refused.
// The authorizer is installed only while preparing and removed afterwards
// (SQLite has no call that reads a host's own authorizer back, so a host's
// authorizer is cleared by an ask).
#pragma once

#include <string>
#include <string_view>

#include "agent/sql/statement.h"
#include "agent/base/status.h"

struct sqlite3;

namespace querypilot {

// A prepared, read-only, single statement, or why not: kRefused (a write or
// forbidden operation; never retried), kMultipleStatements, kNoSql (nothing
// but comments), or the classified prepare error (kSyntaxError,
// kColumnNotFound, ...) with SQLite's own message. Where the host's SQLite
// has no authorizer, every query is refused with NoAuthorizerMessage().
Result<Statement> CheckSql(sqlite3* db, std::string_view sql);

// Why nothing runs on a SQLite built with SQLITE_OMIT_AUTHORIZATION.
std::string NoAuthorizerMessage();

}  // namespace querypilot
