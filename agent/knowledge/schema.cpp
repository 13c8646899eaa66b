#include "agent/knowledge/schema.h"

#include <fmt/format.h>

#include "agent/knowledge/linking.h"
#include "agent/base/sqlite.h"
#include "agent/sql/statement.h"
#include "agent/base/text.h"

namespace querypilot {
namespace {

// One value as a short SQL literal for the prompt's sample rows.
std::string SampleLiteral(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_NULL: return "NULL";
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
    case SQLITE_BLOB: return fmt::format("<blob {} bytes>", sqlite3_column_bytes(stmt, i));
    default: {
      std::string v(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)),
                    static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
      std::string out = "'";
      for (char c : text::Truncate(v, 40)) {
        if (c == '\'') out.push_back('\'');
        out.push_back(c == '\n' || c == '\r' ? ' ' : c);
      }
      return out + "'";
    }
  }
}

}  // namespace

int64_t ReadSchemaVersion(sqlite3* db) {
  auto st = Statement::Prepare(db, "PRAGMA main.schema_version");
  if (!st.ok() || st->Step() != SQLITE_ROW) return -1;
  return st->ColumnInt(0);
}

Result<Schema> IntrospectSchema(sqlite3* db, int sample_rows) {
  Schema schema;
  schema.schema_version = ReadSchemaVersion(db);
  // pragma_table_list (3.37+) marks virtual-table shadow tables as 'shadow'.
  auto list = Statement::Prepare(
      db,
      "SELECT name, type FROM pragma_table_list WHERE schema = 'main' "
      "AND type IN ('table', 'view', 'virtual') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
      "ORDER BY name");
  if (!list.ok()) return list.status();
  while (list->Step() == SQLITE_ROW) {
    TableInfo t;
    t.name = list->ColumnText(0);
    t.is_view = list->ColumnText(1) == "view";
    schema.tables.push_back(std::move(t));
  }
  for (TableInfo& t : schema.tables) {
    auto cols = Statement::Prepare(
        db, "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?1, 'main') ORDER BY cid");
    if (!cols.ok()) return cols.status();
    cols->Bind(1, t.name);
    while (cols->Step() == SQLITE_ROW) {
      if (cols->ColumnInt(4) == 1) continue;  // hidden columns of virtual tables
      ColumnInfo c;
      c.name = cols->ColumnText(0);
      c.type = cols->ColumnText(1);
      c.not_null = cols->ColumnInt(2) != 0;
      c.primary_key = cols->ColumnInt(3) != 0;
      t.columns.push_back(std::move(c));
    }
    auto fks = Statement::Prepare(
        db, "SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1, 'main') ORDER BY id, seq");
    if (!fks.ok()) return fks.status();
    fks->Bind(1, t.name);
    while (fks->Step() == SQLITE_ROW) {
      t.foreign_keys.push_back({fks->ColumnText(0), fks->ColumnText(1), fks->ColumnText(2)});
    }
    if (sample_rows > 0 && !t.columns.empty()) {
      std::vector<std::string> names;
      for (const auto& c : t.columns) names.push_back(QuoteIdentifier(c.name));
      auto rows = Statement::Prepare(
          db, fmt::format("SELECT {} FROM main.{} LIMIT {}", fmt::join(names, ", "),
                          QuoteIdentifier(t.name), sample_rows));
      // A view over a missing table, or a virtual table whose module is not
      // loaded, cannot be sampled; its columns are still worth showing.
      if (rows.ok()) {
        while (rows->Step() == SQLITE_ROW) {
          std::vector<std::string> row;
          for (int i = 0; i < rows->ColumnCount(); ++i) row.push_back(SampleLiteral(rows->get(), i));
          t.sample_rows.push_back(std::move(row));
        }
      }
    }
  }
  return schema;
}

Result<std::shared_ptr<const Schema>> SchemaCache::Get(sqlite3* db, int sample_rows) {
  int64_t version = ReadSchemaVersion(db);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (schema_ && schema_->schema_version == version && sample_rows_ == sample_rows) return schema_;
  }
  auto fresh = IntrospectSchema(db, sample_rows);
  if (!fresh.ok()) return fresh.status();
  Schema schema = std::move(fresh).value();
  schema.rendered.clear();
  for (const TableInfo& t : schema.tables) {
    std::string table = RenderTable(t);
    schema.table_tokens.push_back(EstimateTokens(table));
    schema.rendered += table;
  }
  auto shared = std::make_shared<const Schema>(std::move(schema));
  std::lock_guard<std::mutex> lock(mu_);
  schema_ = shared;
  sample_rows_ = sample_rows;
  ++introspections_;
  return shared;
}

int64_t SchemaCache::introspections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return introspections_;
}

}  // namespace querypilot
