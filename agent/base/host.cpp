#include "agent/base/sqlite.h"

namespace querypilot {
namespace {

// Depth of OpenOwnConnection on this thread.
thread_local int opening_own = 0;

// SQLITE_CONFIG_SINGLETHREAD leaves a build's mutexes off at run time, which
// sqlite3_threadsafe() (the build's setting) does not tell: a connection
// opened with SQLITE_OPEN_FULLMUTEX then has no mutex of its own
// (sqlite3_db_mutex gives NULL), as it has in every other mode. Read once:
// process-wide because SQLite's configuration is (sqlite3_config applies
// before any connection, to all of them).
bool MutexesOn() {
  static const bool on = [] {
    sqlite3* db = nullptr;
    const int rc = OpenOwnConnection(
        ":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX);
    const bool mutex = rc == SQLITE_OK && sqlite3_db_mutex(db) != nullptr;
    sqlite3_close(db);
    return mutex;
  }();
  return on;
}

}  // namespace

HostSqlite Host() {
  HostSqlite h;
#ifdef QUERYPILOT_LOADABLE_EXTENSION
  h.progress_handler = sqlite3_api->progress_handler != nullptr;
  h.authorizer = sqlite3_api->set_authorizer != nullptr;
  h.column_metadata =
      sqlite3_api->column_table_name != nullptr && sqlite3_api->column_origin_name != nullptr;
  h.table_column_metadata = sqlite3_api->table_column_metadata != nullptr;
  h.column_decltype = sqlite3_api->column_decltype != nullptr;
#endif
  h.threads = sqlite3_threadsafe() != 0 && MutexesOn();
  return h;
}

int OpenOwnConnection(const char* filename, sqlite3** db, int flags) {
  ++opening_own;
  const int rc = sqlite3_open_v2(filename, db, flags, nullptr);
  --opening_own;
  return rc;
}

bool OpeningOwnConnection() {
  return opening_own > 0;
}

bool HostKeywordCheck(std::string_view word) {
  // sqlite3_keyword_check came with 3.24; a host table without it has none.
  if (sqlite3_libversion_number() < 3024000) return false;
#ifdef QUERYPILOT_LOADABLE_EXTENSION
  if (sqlite3_api->keyword_check == nullptr) return false;
#endif
  return sqlite3_keyword_check(word.data(), static_cast<int>(word.size())) != 0;
}

}  // namespace querypilot
