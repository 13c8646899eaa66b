// Schema: what the model is told about the host database.
//
// The data model and its rendering are pure; Introspect() reads a live
// connection (tables, views, columns, types, keys, a few sample rows) and
// SchemaCache keeps the result per connection until PRAGMA schema_version
// changes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "agent/status.h"

struct sqlite3;

namespace querypilot {

struct ColumnInfo {
  std::string name;
  std::string type;
  bool primary_key = false;
  bool not_null = false;

  // True when the declared type gives TEXT affinity or none (CHAR, TEXT,
  // CLOB, or no type): the columns that hold names and labels.
  bool HoldsText() const;
};

struct ForeignKeyInfo {
  std::string from_column;
  std::string to_table;
  std::string to_column;  // empty: the parent's primary key
};

struct TableInfo {
  std::string name;
  bool is_view = false;
  std::vector<ColumnInfo> columns;
  std::vector<ForeignKeyInfo> foreign_keys;
  std::vector<std::vector<std::string>> sample_rows;  // rendered as SQL literals

  const ColumnInfo* FindColumn(std::string_view column) const;  // case-insensitive
};

struct Schema {
  int64_t schema_version = -1;
  std::vector<TableInfo> tables;
  // RenderSchema(*this), filled by SchemaCache so that a warm ask() does not
  // render a large schema again; "" in a Schema built any other way.
  std::string rendered;
  // EstimateTokens(RenderTable(t)) for each table, in order; filled with
  // `rendered` (empty otherwise).
  std::vector<size_t> table_tokens;

  const TableInfo* FindTable(std::string_view name) const;  // case-insensitive
};

// `name` as a double-quoted SQL identifier ("a""b" for a"b).
std::string QuoteIdentifier(std::string_view name);

// The schema as compact CREATE TABLE text for a prompt, with sample rows as
// comments. Deterministic: the same Schema always renders the same text.
std::string RenderSchema(const Schema& schema);

// One table as RenderSchema() shows it.
std::string RenderTable(const TableInfo& table);

// Reads the main database of `db`: user tables and views (not sqlite_* nor
// virtual-table shadow tables), their columns and foreign keys, and up to
// `sample_rows` rows of each table. Runs only read-only statements.
Result<Schema> IntrospectSchema(sqlite3* db, int sample_rows);

// PRAGMA schema_version of main, or -1.
int64_t ReadSchemaVersion(sqlite3* db);

// A connection's cached Schema. Get() re-reads the schema when the
// connection's schema_version or `sample_rows` changed since the last read.
class SchemaCache {
 public:
  SchemaCache() = default;
  SchemaCache(const SchemaCache&) = delete;
  SchemaCache& operator=(const SchemaCache&) = delete;

  Result<std::shared_ptr<const Schema>> Get(sqlite3* db, int sample_rows);

  // How many times Get() had to read the schema (for tests and benchmarks).
  int64_t introspections() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Schema> schema_;
  int sample_rows_ = -1;
  int64_t introspections_ = 0;
};

}  // namespace querypilot
