// The columns and foreign keys of a schema's tables, as IntrospectSchema()
// (agent/knowledge/schema.h) reads them: by one statement per database over
// pragma_table_list where it can, else table by table.
#pragma once

#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/sql/database_list.h"

struct sqlite3;

namespace querypilot {

// The columns and foreign keys of every table of `schema`, read from the
// databases listed; `generated[n]` is set where table n has a generated
// column.
Status ReadColumnsAndKeys(sqlite3* db, const std::vector<DatabaseInfo>& databases, Schema* schema,
                          std::vector<bool>* generated);

}  // namespace querypilot
