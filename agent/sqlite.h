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

namespace querypilot {

// True when the SQLite in use can say which table column a result column
// comes from (built with SQLITE_ENABLE_COLUMN_METADATA, as Debian's is). A
// host without it leaves those routines null in the extension's table.
inline bool HasColumnMetadata() {
#ifdef QUERYPILOT_LOADABLE_EXTENSION
  return sqlite3_api->column_table_name != nullptr && sqlite3_api->column_origin_name != nullptr;
#else
  return true;
#endif
}

}  // namespace querypilot
