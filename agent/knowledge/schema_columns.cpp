#include "agent/knowledge/schema_columns.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/create_table.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

// A column as pragma_table_xinfo gives it (name, type, notnull, pk, hidden
// from `first`) onto `t`; hidden columns of virtual tables are left out.
void AddColumn(Statement& st, int first, TableInfo* t, bool* generated) {
  const int64_t hidden = st.ColumnInt(first + 4);
  if (hidden == 1) return;  // hidden columns of virtual tables
  *generated = *generated || hidden == 2 || hidden == 3;
  ColumnInfo c;
  c.name = st.ColumnText(first);
  c.type = st.ColumnText(first + 1);
  c.not_null = st.ColumnInt(first + 2) != 0;
  c.primary_key = st.ColumnInt(first + 3) != 0;
  t->columns.push_back(std::move(c));
}

// The columns and foreign keys of the tables and views of `database` in
// `schema` (`at`: their places by name), by one statement each over
// pragma_table_list rather than one per table: a schema of thousands of
// tables is common. False, with nothing added, when either statement fails
// (a view over a missing table fails its pragma, and so the whole
// statement): the caller then reads table by table.
bool ReadDatabaseAtOnce(sqlite3* db, const std::string& database,
                        const std::unordered_map<std::string, size_t>& at, Schema* schema,
                        std::vector<bool>* generated) {
  // Virtual tables are left to the caller: listing their columns connects
  // them, and QueryPilot's own answer tables are never connected here.
  constexpr const char* kWhere =
      "WHERE l.schema = ?1 AND l.type IN ('table', 'view') "
      "AND l.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'";
  auto cols = Statement::Prepare(
      db, fmt::format("SELECT l.name, c.cid, c.name, c.type, c.\"notnull\", c.pk, c.hidden "
                      "FROM pragma_table_list AS l, pragma_table_xinfo(l.name, l.schema) AS c "
                      "{} ORDER BY l.name, c.cid",
                      kWhere));
  auto fks = Statement::Prepare(
      db, fmt::format("SELECT l.name, f.\"from\", f.\"table\", f.\"to\" "
                      "FROM pragma_table_list AS l, pragma_foreign_key_list(l.name, l.schema) "
                      "AS f {} ORDER BY l.name, f.id, f.seq",
                      kWhere));
  if (!cols.ok() || !fks.ok()) return false;
  cols->Bind(1, database);
  fks->Bind(1, database);
  std::vector<std::pair<size_t, ColumnInfo>> columns;
  std::vector<bool> has_generated(schema->tables.size(), false);
  std::vector<std::pair<size_t, ForeignKeyInfo>> keys;
  int rc;
  while ((rc = cols->Step()) == SQLITE_ROW) {
    auto it = at.find(cols->ColumnText(0));
    if (it == at.end()) continue;
    TableInfo one;
    bool generated_one = false;
    AddColumn(*cols, 2, &one, &generated_one);
    if (generated_one) has_generated[it->second] = true;
    if (!one.columns.empty()) columns.emplace_back(it->second, std::move(one.columns[0]));
  }
  if (rc != SQLITE_DONE) return false;
  while ((rc = fks->Step()) == SQLITE_ROW) {
    auto it = at.find(fks->ColumnText(0));
    if (it == at.end()) continue;
    keys.emplace_back(it->second,
                      ForeignKeyInfo{fks->ColumnText(1), fks->ColumnText(2), fks->ColumnText(3)});
  }
  if (rc != SQLITE_DONE) return false;
  for (auto& [n, c] : columns) schema->tables[n].columns.push_back(std::move(c));
  for (auto& [n, k] : keys) schema->tables[n].foreign_keys.push_back(std::move(k));
  for (size_t n = 0; n < has_generated.size(); ++n) {
    if (has_generated[n]) (*generated)[n] = true;
  }
  return true;
}

// The columns and foreign keys of ordinary table `t` from its CREATE text,
// each column's name checked, and its declared type, NOT NULL and primary key
// read, by sqlite3_table_column_metadata: SQLite's parsed schema, with no
// statement compiled. False, with `t` unchanged, when the text is not read
// for certain (ReadCreateTable) or does not name exactly the columns SQLite
// holds (their count, each one found): the pragmas read it then. A table
// read so has no generated column (ReadCreateTable refuses any AS).
bool ReadFromDeclaration(sqlite3* db, const DeclaredText& text, TableInfo* t) {
  if (text.sql.empty() || text.columns < 0 || t->is_view || t->is_virtual) return false;
  std::optional<DeclaredTable> declared = ReadCreateTable(text.sql);
  if (!declared || declared->columns.size() != static_cast<size_t>(text.columns)) return false;
  // Distinct names, each one found: exactly the table's columns.
  std::vector<std::string> folded;
  for (const std::string& c : declared->columns) folded.push_back(text::Lower(c));
  std::sort(folded.begin(), folded.end());
  if (std::adjacent_find(folded.begin(), folded.end()) != folded.end()) return false;
  std::vector<ColumnInfo> columns;
  columns.reserve(declared->columns.size());
  for (std::string& name : declared->columns) {
    const char* type = nullptr;
    int not_null = 0, primary_key = 0;
    if (sqlite3_table_column_metadata(db, t->database.c_str(), t->name.c_str(), name.c_str(), &type,
                                      nullptr, &not_null, &primary_key, nullptr) != SQLITE_OK)
      return false;
    ColumnInfo c;
    c.name = std::move(name);
    c.type = type ? type : "";
    c.not_null = not_null != 0;
    c.primary_key = primary_key != 0;
    columns.push_back(std::move(c));
  }
  t->columns = std::move(columns);
  t->foreign_keys = std::move(declared->foreign_keys);
  return true;
}

}  // namespace

Status ReadColumnsAndKeys(sqlite3* db, const std::vector<DatabaseInfo>& databases,
                          const std::vector<DeclaredText>& declared, Schema* schema,
                          std::vector<bool>* generated) {
  std::vector<bool> done(schema->tables.size(), false);
  if (Host().table_column_metadata && declared.size() == schema->tables.size()) {
    for (size_t n = 0; n < schema->tables.size(); ++n)
      done[n] = ReadFromDeclaration(db, declared[n], &schema->tables[n]);
  }
  for (const DatabaseInfo& d : databases) {
    std::unordered_map<std::string, size_t> at;  // its tables and views, by name
    bool some_done = false;
    for (size_t n = 0; n < schema->tables.size(); ++n) {
      const TableInfo& t = schema->tables[n];
      if (t.database != d.name || t.is_virtual) continue;
      if (done[n]) {
        some_done = true;
      } else {
        at.emplace(t.name, n);
      }
    }
    // A database read from its declarations but for a few tables (views):
    // those few table by table, below, rather than the pragmas of all.
    if (at.empty() || some_done || !ReadDatabaseAtOnce(db, d.name, at, schema, generated)) continue;
    for (const auto& [name, n] : at) done[n] = true;
  }
  if (std::all_of(done.begin(), done.end(), [](bool b) { return b; })) return Status::Ok();
  // The rest table by table: each statement prepared once and run for every
  // table.
  auto cols = Statement::Prepare(
      db,
      "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?1, ?2) ORDER BY cid");
  if (!cols.ok()) return cols.status();
  auto fks = Statement::Prepare(
      db,
      "SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1, ?2) ORDER BY id, seq");
  if (!fks.ok()) return fks.status();
  for (size_t n = 0; n < schema->tables.size(); ++n) {
    if (done[n]) continue;
    TableInfo& t = schema->tables[n];
    cols->Reset();
    cols->Bind(1, t.name);
    cols->Bind(2, t.database);
    bool has_generated = false;
    while (cols->Step() == SQLITE_ROW) AddColumn(*cols, 0, &t, &has_generated);
    if (has_generated) (*generated)[n] = true;
    fks->Reset();
    fks->Bind(1, t.name);
    fks->Bind(2, t.database);
    while (fks->Step() == SQLITE_ROW) {
      t.foreign_keys.push_back({fks->ColumnText(0), fks->ColumnText(1), fks->ColumnText(2)});
    }
  }
  return Status::Ok();
}

}  // namespace querypilot
