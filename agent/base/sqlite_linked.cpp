// For programs that link libsqlite3 themselves (the unit tests,
// querypilot-eval): the routine table through which the agent's SQLite calls
// go, taken from the linked library, so that the agent is compiled once, as
// the extension is, and tested as it ships.
//
// SQLITE_CORE keeps sqlite3ext.h from renaming the calls below: they are the
// library's own. A throwaway connection hands the table to an auto-extension
// before main() runs; nothing in the agent calls SQLite earlier.
#define SQLITE_CORE 1
#include <sqlite3ext.h>

extern "C" {
const sqlite3_api_routines* sqlite3_api = nullptr;

static int QuerypilotCaptureRoutines(sqlite3*, char**, const sqlite3_api_routines* api) {
  sqlite3_api = api;
  return SQLITE_OK;
}
}

namespace {

struct CaptureRoutines {
  CaptureRoutines() {
    auto entry = reinterpret_cast<void (*)(void)>(QuerypilotCaptureRoutines);
    sqlite3_auto_extension(entry);
    sqlite3* db = nullptr;
    sqlite3_open(":memory:", &db);
    sqlite3_close(db);
    sqlite3_cancel_auto_extension(entry);
  }
} capture_routines;

}  // namespace
