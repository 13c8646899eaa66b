// The one way agent/ and ext/ include SQLite.
//
// Inside the loadable extension every sqlite3_* call goes through the routine
// table the host hands to sqlite3_querypilot_init (sqlite3ext.h); elsewhere
// (unit tests, tools) the same sources link libsqlite3 directly.
#pragma once

#ifdef QUERYPILOT_LOADABLE_EXTENSION
#include <sqlite3ext.h>
extern "C" {
SQLITE_EXTENSION_INIT3
}
#else
#include <sqlite3.h>
#endif

#include <string_view>

namespace querypilot {

// What the SQLite in use provides of the routines a build may leave out. A
// host's SQLite is not ours: it may be compiled with SQLITE_OMIT_* options,
// which leave those routines null in the table the extension is handed
// (better-sqlite3 omits progress callbacks). QueryPilot never calls a routine
// this says is missing.
struct HostSqlite {
  // sqlite3_progress_handler (SQLITE_OMIT_PROGRESS_CALLBACK): without it a
  // query past its budget can only be stopped with sqlite3_interrupt.
  bool progress_handler = true;
  // sqlite3_set_authorizer (SQLITE_OMIT_AUTHORIZATION): without it generated
  // SQL cannot be checked, so QueryPilot runs none.
  bool authorizer = true;
  // Which table column a result column comes from
  // (SQLITE_ENABLE_COLUMN_METADATA, as Debian's and better-sqlite3's have).
  bool column_metadata = true;
  // sqlite3_table_column_metadata: a table's column by name, with its
  // declared type, NOT NULL and primary key, read from the connection's
  // parsed schema without compiling a statement.
  bool table_column_metadata = true;
  // sqlite3_column_decltype (SQLITE_OMIT_DECLTYPE).
  bool column_decltype = true;
  // sqlite3_threadsafe() != 0 and SQLite's mutexes are on at run time (a
  // host may switch them off with SQLITE_CONFIG_SINGLETHREAD, as go-dqlite
  // does): connections may be used from other threads, so the value index
  // can be built beside the asks (else it is built in slices during asks).
  bool threads = true;
};

// Read from the routine table in use (one definition, in host.cpp).
HostSqlite Host();

// Opens a connection of QueryPilot's own (its read, check, value index and
// history connections), as sqlite3_open_v2 does. SQLite runs every automatic
// extension (sqlite3_auto_extension, as libquerypilot_preload.so registers
// QueryPilot) inside each open: sqlite3_querypilot_init leaves the
// connections opened here alone, so QueryPilot is never registered in its
// own connections (their functions are SQLite's library's alone).
int OpenOwnConnection(const char* filename, sqlite3** db, int flags);

// True on the thread that is inside OpenOwnConnection.
bool OpeningOwnConnection();

// True when the SQLite in use reads `word` as a keyword
// (sqlite3_keyword_check); false where it has no such routine.
bool HostKeywordCheck(std::string_view word);

}  // namespace querypilot
