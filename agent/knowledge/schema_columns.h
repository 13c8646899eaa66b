// The columns and foreign keys of a schema's tables, as IntrospectSchema()
// (agent/knowledge/schema.h) reads them: an ordinary table's from its CREATE
// TABLE text (ReadCreateTable, agent/knowledge/create_table.h) checked
// against SQLite's parsed schema (sqlite3_table_column_metadata), which
// compiles no statement; the rest by one statement per database over
// pragma_table_list where it can, else table by table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/sql/database_list.h"

struct sqlite3;

namespace querypilot {

// What sqlite_schema and pragma_table_list say of a table: its CREATE text
// ("" for a view, a virtual table or none) and its number of columns
// (hidden ones too; -1 when not known).
struct DeclaredText {
  std::string sql;
  int64_t columns = -1;
};

// The columns and foreign keys of every table of `schema`, read from the
// databases listed; `declared[n]`, when there is one for table n, is what
// sqlite_schema says of it. `generated[n]` is set where table n has a
// generated column. What is read is the same whichever way it is read:
// names, declared types, NOT NULL, primary key and foreign keys as SQLite's
// pragmas give them, in their order.
Status ReadColumnsAndKeys(sqlite3* db, const std::vector<DatabaseInfo>& databases,
                          const std::vector<DeclaredText>& declared, Schema* schema,
                          std::vector<bool>* generated);

}  // namespace querypilot
