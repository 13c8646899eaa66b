// The scan that fills a ValueStore from a source database (value_scan.h).
#include "agent/knowledge/value_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/knowledge/value_index.h"

namespace querypilot {
namespace {

// Tables sized by one compound statement (SQLite allows 500 arms by
// default): a schema of thousands of tables is common, and a statement per
// table costs more in its prepare than in its reading.
constexpr size_t kSizedAtOnce = 32;

// What Sizes() reads of one table.
struct Size {
  bool read = false;  // false: the table could not be read (gone, locked)
  std::optional<int64_t> max_rowid;
  std::optional<int64_t> count;  // when asked for
};

// max(rowid), and count(*) where `count[i]`, of each table `names[i]` of
// `database`: kSizedAtOnce tables a statement, each alone where their
// statement fails (a table dropped since it was listed), so that one table
// costs only itself. Stops at `deadline` (when given): the tables not
// reached are not read.
std::vector<Size> Sizes(sqlite3* db, const std::string& database,
                        const std::vector<std::string>& names, const std::vector<bool>& count,
                        const std::optional<std::chrono::steady_clock::time_point>& deadline) {
  std::vector<Size> out(names.size());
  // Each aggregate alone in its subquery, so that SQLite reads max(rowid)
  // by a seek and count(*) by counting the b-tree's cells.
  auto arm = [&](size_t i) {
    const std::string from = QuoteIdentifier(database) + "." + QuoteIdentifier(names[i]);
    return fmt::format("SELECT {0}, (SELECT max(rowid) FROM {1}), {2}", i, from,
                       count[i] ? fmt::format("(SELECT count(*) FROM {})", from) : "NULL");
  };
  auto read = [&](const std::string& sql) {
    auto st = Statement::Prepare(db, sql);
    if (!st.ok()) return false;
    std::vector<std::pair<size_t, Size>> rows;
    int rc;
    while ((rc = st->Step()) == SQLITE_ROW) {
      Size size;
      size.read = true;
      if (!st->ColumnIsNull(1)) size.max_rowid = st->ColumnInt(1);
      if (!st->ColumnIsNull(2)) size.count = st->ColumnInt(2);
      rows.emplace_back(static_cast<size_t>(st->ColumnInt(0)), size);
    }
    if (rc != SQLITE_DONE) return false;
    for (auto& [i, size] : rows) {
      if (i < out.size()) out[i] = size;
    }
    return true;
  };
  for (size_t from = 0; from < names.size(); from += kSizedAtOnce) {
    if (deadline && std::chrono::steady_clock::now() >= *deadline) break;
    const size_t to = std::min(names.size(), from + kSizedAtOnce);
    std::vector<std::string> arms;
    for (size_t i = from; i < to; ++i) arms.push_back(arm(i));
    if (to - from > 1 && read(fmt::format("{}", fmt::join(arms, " UNION ALL ")))) continue;
    for (size_t i = from; i < to; ++i) read(arms[i - from]);
  }
  return out;
}

}  // namespace

bool ScanLimits::expired() const {
  if (cancel && cancel->load(std::memory_order_relaxed)) return true;
  return deadline && std::chrono::steady_clock::now() >= *deadline;
}

size_t ChunkSizer::Rows(size_t columns, std::chrono::steady_clock::time_point now) const {
  double ms = limits_.max_chunk_ms > 0 ? limits_.max_chunk_ms : -1;
  if (limits_.deadline) {
    const double left = std::chrono::duration<double, std::milli>(*limits_.deadline - now).count();
    // A margin: what a chunk costs varies, and the deadline is a promise.
    ms = ms < 0 ? left * 0.5 : std::min(ms, left * 0.5);
  }
  if (ms < 0) return limits_.chunk_rows;
  if (ms_per_cell_ <= 0) return std::min(limits_.chunk_rows, kFirstChunkRows);
  const double rows = ms / (ms_per_cell_ * static_cast<double>(std::max<size_t>(columns, 1)));
  if (rows >= static_cast<double>(limits_.chunk_rows)) return limits_.chunk_rows;
  // Not even the least chunk fits before the deadline: none is read.
  if (limits_.deadline && rows < kLeastChunkRows) return 0;
  return std::max(kLeastChunkRows, static_cast<size_t>(rows));
}

void ChunkSizer::Measured(double ms, size_t cells) {
  if (cells < kMeasuredCells) return;
  // The dearer of the last chunk and a decaying memory of the dearest:
  // chunks cost more as the store grows, and a slow one is no accident.
  ms_per_cell_ = std::max(ms / static_cast<double>(cells), ms_per_cell_ * 0.75);
}

std::optional<std::vector<SourceTable>> ReadSourceTables(
    sqlite3* db, const std::string& database, const std::set<std::string>* only,
    const std::map<std::string, std::string>* held) {
  std::vector<std::pair<int64_t, SourceTable>> sized;
  std::vector<SourceTable> known;  // held by the store as they are
  auto list = Statement::Prepare(
      db, fmt::format(
              "SELECT l.name, l.wr, m.sql FROM pragma_table_list AS l JOIN {}.sqlite_master AS m"
              " ON m.name = l.name AND m.type = 'table' WHERE l.schema = ?1 AND l.type = 'table'"
              " AND l.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY l.name",
              QuoteIdentifier(database)));
  if (!list.ok()) return std::nullopt;
  list->Bind(1, database);
  int rc;
  while ((rc = list->Step()) == SQLITE_ROW) {
    SourceTable t;
    t.name = list->ColumnText(0);
    if (only && !only->count(t.name)) continue;
    t.rowid = list->ColumnInt(1) == 0;
    t.create_sql = list->ColumnText(2);
    if (held) {
      auto it = held->find(t.name);
      if (it != held->end() && it->second == t.create_sql) {
        t.known = true;
        known.push_back(std::move(t));
        continue;
      }
    }
    sized.push_back({0, std::move(t)});
  }
  if (rc != SQLITE_DONE) return std::nullopt;
  list = Statement();
  // Their columns are read as each is reached (ReadTextColumns): an ask's
  // slice of a schema of thousands of tables reads a few of them.
  std::vector<std::string> to_size;
  std::vector<size_t> sized_at;
  for (size_t n = 0; n < sized.size(); ++n) {
    if (!sized[n].second.rowid) continue;
    to_size.push_back(sized[n].second.name);
    sized_at.push_back(n);
  }
  const std::vector<Size> sizes =
      Sizes(db, database, to_size, std::vector<bool>(to_size.size(), false), std::nullopt);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i].read && sizes[i].max_rowid) sized[sized_at[i]].first = *sizes[i].max_rowid;
  }
  std::stable_sort(sized.begin(), sized.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SourceTable> out = std::move(known);
  for (auto& [size, t] : sized) out.push_back(std::move(t));
  return out;
}

Result<Statement> PrepareTextColumns(sqlite3* db) {
  return Statement::Prepare(
      db, "SELECT name, type FROM pragma_table_xinfo(?1, ?2) WHERE hidden = 0 ORDER BY cid");
}

bool ReadTextColumns(Statement& cols, const std::string& database, SourceTable* t) {
  cols.Reset();
  cols.Bind(1, t->name);
  cols.Bind(2, database);
  int rc;
  t->text_columns.clear();
  while ((rc = cols.Step()) == SQLITE_ROW) {
    ColumnInfo c;
    c.name = cols.ColumnText(0);
    c.type = cols.ColumnText(1);
    if (c.HoldsText()) t->text_columns.push_back(c.name);
  }
  cols.Reset();
  return rc == SQLITE_DONE;
}

std::set<std::string> CatchUp(sqlite3* db, const std::string& database, ValueStore& store,
                              const std::string& source, int64_t count_rows_up_to,
                              std::optional<std::chrono::steady_clock::time_point> deadline,
                              bool* finished, std::set<std::string>* checked) {
  std::set<std::string> changed;
  if (finished) *finished = true;
  // The rowid tables read whole, sized kSizedAtOnce at a time (Sizes).
  std::vector<TableProgress> done;
  for (TableProgress& p : store.Tables(source)) {
    if (!p.done || !p.error.empty()) continue;
    if (checked && checked->count(p.table)) continue;  // by an earlier call
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
      if (finished) *finished = false;
      break;
    }
    if (!p.rowid) {
      store.ForgetTable(source, p.table);
      changed.insert(p.table);
      continue;
    }
    done.push_back(std::move(p));
  }
  std::vector<std::string> names;
  std::vector<bool> count;
  for (const TableProgress& p : done) {
    names.push_back(p.table);
    count.push_back(count_rows_up_to > 0 && p.rows_read <= count_rows_up_to);
  }
  const std::vector<Size> sizes = Sizes(db, database, names, count, deadline);
  for (size_t i = 0; i < done.size(); ++i) {
    const TableProgress& p = done[i];
    const Size& size = sizes[i];
    if (!size.read) {
      // Not reached before the deadline, or gone: the next scan forgets it.
      if (deadline && std::chrono::steady_clock::now() >= *deadline && finished) *finished = false;
      continue;
    }
    if (checked) checked->insert(p.table);
    const bool grew = size.max_rowid && *size.max_rowid >= p.next_rowid;
    const bool shrank = size.count && *size.count < p.rows_read;
    if (shrank) {
      store.ForgetTable(source, p.table);
      changed.insert(p.table);
    } else if (grew) {
      store.Reopen(p.id);
      changed.insert(p.table);
    }
  }
  return changed;
}

}  // namespace querypilot
