// Tables checked under the host's rules a group at a time
// (agent/knowledge/host_reads.h).
#include "agent/knowledge/host_reads.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "agent/base/sqlite.h"
#include "agent/sql/statement.h"

namespace querypilot {

Result<std::vector<bool>> HostReadsThese(sqlite3* host, const Schema& schema,
                                         const std::vector<bool>& generated,
                                         const std::vector<size_t>& places) {
  constexpr size_t kAtOnce = 50;
  std::vector<bool> all(places.size(), false);
  std::vector<size_t> group;  // places' indexes
  auto check = [&]() -> Status {
    size_t width = 0, reads = 0;
    for (size_t k : group) width = std::max(width, schema.tables[places[k]].columns.size());
    std::string sql = "EXPLAIN ";
    for (size_t k : group) {
      const TableInfo& t = schema.tables[places[k]];
      std::vector<std::string> values;
      for (const ColumnInfo& c : t.columns) values.push_back("q." + QuoteIdentifier(c.name));
      values.resize(width, "NULL");
      sql += fmt::format("{}SELECT {} FROM {} AS q", k == group.front() ? "" : " UNION ALL ",
                         fmt::join(values, ", "), t.SqlName());
    }
    int code = SQLITE_OK;
    auto st = Statement::Prepare(host, sql, nullptr, &code);
    if ((code & 0xff) == SQLITE_INTERRUPT) return Status(ErrorKind::kInterrupted, "interrupted");
    if (!st.ok()) return Status::Ok();
    int rc;
    while ((rc = st->Step()) == SQLITE_ROW) {
      const auto* op = reinterpret_cast<const char*>(sqlite3_column_text(st->get(), 1));
      const std::string_view name = op ? op : "";
      if (name == "Column" || name == "Rowid" || name == "VColumn") ++reads;
    }
    if ((rc & 0xff) == SQLITE_INTERRUPT) return Status(ErrorKind::kInterrupted, "interrupted");
    size_t want = 0;
    for (size_t k : group) want += schema.tables[places[k]].columns.size();
    if (rc != SQLITE_DONE || reads != want) return Status::Ok();
    for (size_t k : group) all[k] = true;
    return Status::Ok();
  };
  for (size_t k = 0; k < places.size(); ++k) {
    const size_t n = places[k];
    const TableInfo& t = schema.tables[n];
    if (t.columns.empty() || t.is_view || t.is_virtual || generated[n]) continue;
    group.push_back(k);
    if (group.size() < kAtOnce && k + 1 < places.size()) continue;
    if (Status st = check(); !st.ok()) return st;
    group.clear();
  }
  if (!group.empty()) {
    if (Status st = check(); !st.ok()) return st;
  }
  return all;
}

Result<std::vector<bool>> HostReadsAll(sqlite3* host, const Schema& schema,
                                       const std::vector<bool>& generated) {
  std::vector<size_t> places(schema.tables.size());
  for (size_t n = 0; n < places.size(); ++n) places[n] = n;
  return HostReadsThese(host, schema, generated, places);
}

}  // namespace querypilot
