// QueryPilot's rules for SQL it did not write: the authorizer that judges a
// statement while it is prepared, and the judgement of a whole text (one
// query, nothing after it), on whatever connection it is given. The check
// connection (agent/sql/check_connection.h) applies them to its mirror of a
// host's connection; the critic (agent/sql/critic.h) to a connection of
// QueryPilot's own directly. They decide by what SQLite's authorizer asks;
// what the statement's code does as it steps is held by PRAGMA query_only
// (agent/sql/query_only.h).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/own_surface.h"
#include "agent/base/sqlite.h"
#include "agent/base/status.h"
#include "agent/sql/statement.h"

struct sqlite3;

namespace querypilot {

// What QueryPilot's authorizer knows of the names a statement may use. Names
// are lower-case.
struct AuthRules {
  std::set<std::string> own_functions;
  std::set<std::string> own_modules;
  // Tables of the host's databases that are QueryPilot's own (answer tables,
  // temp.ask): {database, name}.
  std::set<std::pair<std::string, std::string>> own_tables;
  // Functions and modules a fresh connection of the same SQLite library has
  // (the mirror stubs only the host's others). Empty when unknown.
  std::set<std::string> library_functions;
  std::set<std::string> library_modules;
  // Every module the mirror knows (the library's and the stubs).
  std::set<std::string> known_modules;
  // Every table, view and virtual table of the host's databases: {database,
  // name}. A name read that is none of these is an eponymous virtual table's.
  std::set<std::pair<std::string, std::string>> tables;
  // The databases that hold a table of each name, in the order SQLite reads
  // a bare name: temp, main, then the attached ones.
  std::map<std::string, std::vector<std::string>> table_databases;
  // The module of each virtual table of the host's databases: {database,
  // name} -> module.
  std::map<std::pair<std::string, std::string>, std::string> virtual_tables;
};

// What QueryPilot's authorizer saw while one statement was prepared.
struct AuthVerdict {
  std::string denied;     // the first denial, for the error message; "" if none
  int first_action = -1;  // the first action code asked about (SQLITE_SELECT for a query)
};

// Prepares `sql` on `db` under QueryPilot's authorizer with `rules`, then
// removes the authorizer (only ever on a connection of QueryPilot's own).
// Returns SQLite's result code; `*stmt` receives the statement (finalize it),
// `*tail` the unparsed rest.
int PrepareUnderRules(sqlite3* db, std::string_view sql, const AuthRules& rules,
                      AuthVerdict* verdict, struct sqlite3_stmt** stmt, const char** tail);

// What QueryPilot's rules say of `sql` on one connection.
struct RulesJudgement {
  Status status;   // Ok, or refused / more than one statement / no SQL / the prepare error
  Statement stmt;  // the first statement, prepared on that connection (when it prepared)
  size_t statement_bytes = 0;  // its length in `sql`, when Ok
  int rc = SQLITE_OK;          // the first statement's prepare result
  std::string message;         // SQLite's own message when it did not prepare
};

// Prepares the first statement of `sql` on `db` under QueryPilot's authorizer
// with `rules` and judges it: a query (the first question asked is
// SQLITE_SELECT), nothing denied; then judges every statement after it, by
// SQLite's parser, so that only semicolons, comments and white space may
// follow. The one judgement the check connection and QueryPilot's own
// connections share.
RulesJudgement JudgeUnderRules(sqlite3* db, std::string_view sql, const AuthRules& rules);

}  // namespace querypilot
