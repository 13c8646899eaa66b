// The schema model: tables, views, columns and keys as the model is told about
// them, and their rendering as CREATE TABLE text. Pure values: reading them
// from a live connection is agent/knowledge/schema.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace querypilot
