// Program: what SQLite compiles a statement into, read back with EXPLAIN,
// and the functions that program calls.
//
// Preparing a statement asks the connection's authorizer, and stepping its
// EXPLAIN lists the program without running any of it: no table is read, no
// lock is taken, no function is called. The listing is SQLite's own account
// of what the statement would do, views (TEMP or not), CTEs, subqueries and
// generated columns included, so the functions it calls are judged from it
// rather than from the SQL's text.
//
// The functions SQL that QueryPilot runs for a model may call
// (JudgeCalledFunctions): SQLite's own, known to read nothing outside the
// database (its core, date, math, JSON, aggregate and window functions, and
// the auxiliary functions of its FTS3, FTS5, R*Tree and Geopoly
// extensions), and those the user names in the `allow_functions` setting
// (ParseFunctionNames, agent/config.h).
// Any other (the sqlite3 shell's writefile, readfile and edit, an
// application's own, an application's function that takes a built-in's
// name, load_extension) is refused with its name.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/status.h"

struct sqlite3;

namespace querypilot {

// The program SQLite prepares for the one statement `sql` on `db`: every
// instruction of its EXPLAIN listing (opcode and operands, not the
// comments), one a line, the fields separated by tabs. Two statements with
// the same program compute the same rows in the same order from the same
// data (their result columns' names aside). An error when it does not
// prepare.
Result<std::string> ProgramOf(sqlite3* db, std::string_view sql);

// A function a program calls: its name (lower case) and the number of
// arguments of the definition SQLite picked (-1: any number).
struct CalledFunction {
  std::string name;
  int args = -1;
  auto operator<=>(const CalledFunction&) const = default;
};

// The functions `program` (ProgramOf) calls: each instruction that calls a
// scalar, aggregate or window function names it in P4 as "name(args)".
// Functions SQLite computes inline (coalesce, iif, likely, ...) call
// nothing and are not listed.
std::set<CalledFunction> FunctionsCalled(const std::string& program);

// What PRAGMA function_list says of each definition on a connection.
struct FunctionDefinitions {
  bool listed = false;         // the list could be read
  bool knows_builtin = false;  // it has the builtin column (SQLite 3.31+)
  // {name, arguments} -> {a built-in definition, a definition not built in}.
  std::map<CalledFunction, std::pair<bool, bool>> kinds;
};
FunctionDefinitions ReadFunctionDefinitions(sqlite3* db);

// Whether every function `program` calls may be called on `db`: Ok, or
// kRefused naming the first that may not and how to allow it. A function
// may be called when `allowed` (the user's allow_functions) names it, or
// when it is SQLite's own: built in by SQLite's account (PRAGMA
// function_list's builtin column), no definition of the application's
// taking its place (a definition with the same name and arguments that is
// not built in), and not one that reaches outside the database
// (load_extension, sqlite_log); or one of the auxiliary functions SQLite's
// own extensions register (FTS3, FTS5, R*Tree, Geopoly; the JSON functions
// of a SQLite before 3.38, where JSON was an extension). Where the host's
// SQLite cannot list its functions with that column, SQLite's own are told
// by name.
Status JudgeCalledFunctions(sqlite3* db, const std::string& program,
                            const std::set<std::string>& allowed);

// The same for the one statement `sql` on `db`: its program is listed first
// (an error when it does not prepare, or when EXPLAIN cannot list it).
Status JudgeFunctionsOf(sqlite3* db, std::string_view sql, const std::set<std::string>& allowed);

}  // namespace querypilot
