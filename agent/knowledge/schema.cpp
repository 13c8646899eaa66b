#include "agent/knowledge/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/linking.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

// One value as a short SQL literal for the prompt's sample rows.
std::string SampleLiteral(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
    case SQLITE_BLOB:
      return fmt::format("<blob {} bytes>", sqlite3_column_bytes(stmt, i));
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

// Leaves out of `t` what the host's authorizer will not let a statement of
// `host` read. Statements are prepared on `host`, never stepped: the
// authorizer is asked as each is prepared, and SQLITE_IGNORE turns a column
// into NULL, which SQLite then reports as having no origin. False when the
// host lets nothing of the table be read.
bool KeepReadableColumns(sqlite3* host, TableInfo* t) {
  if (t->columns.empty()) return true;
  auto prepare = [&](const std::vector<std::string>& names, int* code) {
    return Statement::Prepare(
        host, fmt::format("SELECT {} FROM {}", fmt::join(names, ", "), t->SqlName()), nullptr,
        code);
  };
  std::vector<std::string> names;
  for (const auto& c : t->columns) names.push_back(QuoteIdentifier(c.name));
  int code = SQLITE_OK;
  auto all = prepare(names, &code);
  std::vector<bool> keep(t->columns.size(), true);
  if (all.ok() && *all) {
    // Only a table's own column has an origin whatever it holds; a view's
    // column may be an expression, which has none either.
    if (!Host().column_metadata || t->is_view) return true;
    for (size_t i = 0; i < keep.size(); ++i) {
      keep[i] = sqlite3_column_origin_name(all->get(), static_cast<int>(i)) != nullptr;
    }
  } else if ((code & 0xff) == SQLITE_AUTH) {
    for (size_t i = 0; i < keep.size(); ++i) {
      int one = SQLITE_OK;
      auto single = prepare({names[i]}, &one);
      keep[i] = single.ok();
    }
  } else {
    return true;  // a view over a missing table, a module not loaded: not the host's rules
  }
  std::vector<ColumnInfo> kept;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(t->columns[i]));
  }
  t->columns = std::move(kept);
  return !t->columns.empty();
}

}  // namespace

int64_t ReadSchemaVersion(sqlite3* db) {
  // One number for every database of the connection: a change to any
  // schema, an ATTACH or a DETACH gives another.
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&h](std::string_view part) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  bool any = false;
  for (const DatabaseInfo& d : ListDatabases(db).value_or(std::vector<DatabaseInfo>{})) {
    if (d.name == "temp") {
      // The temp schema is small, and QueryPilot's own answer tables come
      // and go in it: what counts is the rest of it.
      auto st = Statement::Prepare(
          db, "SELECT type, name, coalesce(sql, '') FROM temp.sqlite_master ORDER BY name");
      if (!st.ok()) continue;
      mix(d.name);
      while (st->Step() == SQLITE_ROW) {
        if (IsAnswerTable(st->ColumnText(2))) continue;
        mix(st->ColumnText(0));
        mix(st->ColumnText(1));
        mix(st->ColumnText(2));
      }
      continue;
    }
    auto st =
        Statement::Prepare(db, fmt::format("PRAGMA {}.schema_version", QuoteIdentifier(d.name)));
    if (!st.ok() || st->Step() != SQLITE_ROW) continue;
    mix(d.name);
    mix(d.file);
    mix(std::to_string(st->ColumnInt(0)));
    any = true;
  }
  return any ? static_cast<int64_t>(h >> 1) : -1;
}

Result<Schema> IntrospectSchema(sqlite3* db, int sample_rows, sqlite3* host) {
  if (!host) host = db;
  Schema schema;
  schema.schema_version = ReadSchemaVersion(db);
  std::vector<DatabaseInfo> databases = ListDatabases(db).value_or(std::vector<DatabaseInfo>{});
  // main first (the prompt of a plain database is unchanged), then temp and
  // the attached databases in SQLite's order.
  std::stable_partition(databases.begin(), databases.end(),
                        [](const DatabaseInfo& d) { return d.name == "main"; });
  for (const DatabaseInfo& d : databases) {
    // pragma_table_list (3.37+) marks virtual-table shadow tables as 'shadow'.
    auto list = Statement::Prepare(
        db,
        fmt::format(
            "SELECT l.name, l.type, m.sql, l.wr FROM pragma_table_list AS l "
            "LEFT JOIN {}.sqlite_master AS m ON m.name = l.name AND m.type IN ('table', 'view') "
            "WHERE l.schema = ?1 AND l.type IN ('table', 'view', 'virtual') "
            "AND l.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY l.name",
            QuoteIdentifier(d.name)));
    if (!list.ok()) return list.status();
    list->Bind(1, d.name);
    while (list->Step() == SQLITE_ROW) {
      if (list->ColumnText(1) == "virtual" && IsAnswerTable(list->ColumnText(2))) continue;
      TableInfo t;
      t.name = list->ColumnText(0);
      t.database = d.name;
      t.is_view = list->ColumnText(1) == "view";
      t.is_virtual = list->ColumnText(1) == "virtual";
      t.without_rowid = list->ColumnInt(3) != 0;
      schema.tables.push_back(std::move(t));
    }
  }
  // Attached tables are always shown qualified ("world.city"); others where
  // their name is not unique.
  for (TableInfo& t : schema.tables) {
    int same = 0;
    for (const TableInfo& u : schema.tables) same += text::EqualsIgnoreCase(t.name, u.name) ? 1 : 0;
    t.qualified = same > 1 || (t.database != "main" && t.database != "temp");
  }
  std::set<const TableInfo*> hidden;  // tables the host lets nothing of be read
  for (TableInfo& t : schema.tables) {
    auto cols = Statement::Prepare(
        db,
        "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?1, ?2) ORDER BY cid");
    if (!cols.ok()) return cols.status();
    cols->Bind(1, t.name);
    cols->Bind(2, t.database);
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
        db,
        "SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1, ?2) ORDER BY id, seq");
    if (!fks.ok()) return fks.status();
    fks->Bind(1, t.name);
    fks->Bind(2, t.database);
    while (fks->Step() == SQLITE_ROW) {
      t.foreign_keys.push_back({fks->ColumnText(0), fks->ColumnText(1), fks->ColumnText(2)});
    }
    if (!KeepReadableColumns(host, &t)) {
      hidden.insert(&t);
      continue;
    }
    if (sample_rows > 0 && !t.columns.empty()) {
      std::vector<std::string> names;
      for (const auto& c : t.columns) names.push_back(QuoteIdentifier(c.name));
      auto rows =
          Statement::Prepare(db, fmt::format("SELECT {} FROM {} LIMIT {}", fmt::join(names, ", "),
                                             t.SqlName(), sample_rows));
      // A view over a missing table, or a virtual table whose module is not
      // loaded, cannot be sampled; its columns are still worth showing.
      if (rows.ok()) {
        while (rows->Step() == SQLITE_ROW) {
          std::vector<std::string> row;
          for (int i = 0; i < rows->ColumnCount(); ++i)
            row.push_back(SampleLiteral(rows->get(), i));
          t.sample_rows.push_back(std::move(row));
        }
      }
    }
  }
  if (!hidden.empty()) {
    std::vector<TableInfo> shown;
    for (TableInfo& t : schema.tables) {
      if (!hidden.count(&t)) shown.push_back(std::move(t));
    }
    schema.tables = std::move(shown);
  }
  return schema;
}

Result<std::shared_ptr<const Schema>> SchemaCache::Get(sqlite3* db, int sample_rows,
                                                       sqlite3* host) {
  int64_t version = ReadSchemaVersion(db);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (schema_ && schema_->schema_version == version && sample_rows_ == sample_rows)
      return schema_;
  }
  auto fresh = IntrospectSchema(db, sample_rows, host);
  if (!fresh.ok()) return fresh.status();
  Schema schema = std::move(fresh).value();
  RenderInto(&schema);
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
