// What the CREATE TABLE text of an ordinary table declares, read without
// SQLite: its columns' names and its foreign keys. Pure: the text SQLite
// keeps in sqlite_schema is all it reads.
//
// SQLite's pragmas (table_xinfo, foreign_key_list) say the same, but each
// compiles a statement of its own for each table: on a schema of a thousand
// tables that is most of what reading the schema costs. The schema reader
// (agent/knowledge/schema_columns.h) takes the names from here, checks them
// against SQLite (their count, and each name found with its type, NOT NULL
// and key by sqlite3_table_column_metadata), and asks the pragmas for any
// table whose text this reading does not follow.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"

namespace querypilot {

struct DeclaredTable {
  // The columns' names in their order, as SQLite keeps them (unquoted).
  std::vector<std::string> columns;
  // The foreign keys, in the order PRAGMA foreign_key_list lists them (by id,
  // then seq): SQLite numbers them from the last declared. `from_column` is
  // the column's name as declared; `to_table` and `to_column` as written,
  // unquoted; `to_column` is empty where no column is named.
  std::vector<ForeignKeyInfo> foreign_keys;
};

// The columns and foreign keys `sql`, a CREATE TABLE statement as
// sqlite_schema keeps it, declares; nullopt when it holds anything this
// reading does not follow for certain: a generated column (any AS or
// GENERATED word), a name written as a string literal, a foreign key in any
// form but `REFERENCES t`, `REFERENCES t(c)` or `FOREIGN KEY (a, ...)
// REFERENCES t[(c, ...)]`, text that does not parse. Never throws.
std::optional<DeclaredTable> ReadCreateTable(std::string_view sql);

}  // namespace querypilot
