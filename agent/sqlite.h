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
