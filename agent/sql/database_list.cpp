#include "agent/sql/database_list.h"

#include <fmt/format.h>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/sql/statement.h"

namespace querypilot {

std::optional<std::vector<DatabaseInfo>> ListDatabases(sqlite3* db) {
  auto list = Statement::Prepare(db, "PRAGMA database_list");  // columns: seq, name, file
  if (!list.ok()) return std::nullopt;
  std::vector<DatabaseInfo> out;
  int rc;
  while ((rc = list->Step()) == SQLITE_ROW)
    out.push_back({list->ColumnText(1), list->ColumnText(2)});
  if (rc != SQLITE_DONE) return std::nullopt;
  return out;
}

bool HasUserTables(sqlite3* db, const std::string& database) {
  auto st = Statement::Prepare(db, fmt::format("SELECT coalesce(sql, '') FROM {}.sqlite_master "
                                               "WHERE type IN ('table', 'view')",
                                               QuoteIdentifier(database)));
  if (!st.ok()) return true;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    if (!IsAnswerTable(st->ColumnText(0))) return true;
  }
  return rc != SQLITE_DONE;
}

}  // namespace querypilot
