// The record tables: what QueryPilot did and knows, as read-only eponymous
// tables, one per row of RecordTables() (agent/session/session.h). See
// record_tables.cpp.
#pragma once

#include <memory>

#include "agent/base/sqlite.h"

namespace querypilot {
class Session;
}

namespace querypilot::ext {

// Registers every record table on `db`, each holding `session`: SQLITE_OK,
// or the code of the first that failed, with *err naming it.
int RegisterRecordTables(sqlite3* db, const std::shared_ptr<Session>& session, char** err);

}  // namespace querypilot::ext
