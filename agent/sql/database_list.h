// The databases of a connection, read from the connection's own state.
//
// The statement PRAGMA database_list takes no lock on any database. The
// table-valued pragma_database_list would: it is a table of main, and a
// statement reading it begins a read transaction there, which SQLite keeps
// while any statement of the connection runs; inside ask() that is the
// asking statement, through the model call (agent/sql/read_connection.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace querypilot {

// One database of a connection: its name and file ("" for memory and temp).
struct DatabaseInfo {
  std::string name;
  std::string file;
};

// main, temp (once the connection has used it) and each attached database,
// in the connection's order; nullopt when the list cannot be read (a host
// authorizer that denies the pragma, for one).
std::optional<std::vector<DatabaseInfo>> ListDatabases(sqlite3* db);

// True when `database` holds a table or view that is not QueryPilot's own
// (answer tables, temp.ask), or when that cannot be read.
bool HasUserTables(sqlite3* db, const std::string& database);

}  // namespace querypilot
