// The scan that fills a ValueStore from a source database (value_scan.h).
#include "agent/knowledge/value_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/knowledge/value_index.h"

namespace querypilot {
namespace {

// The next_rowid of a rowid table nothing has been read from yet.
constexpr int64_t kFirstRowid = std::numeric_limits<int64_t>::min();

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

bool ReadTextColumns(sqlite3* db, const std::string& database, SourceTable* t) {
  auto cols = Statement::Prepare(
      db, "SELECT name, type FROM pragma_table_xinfo(?1, ?2) WHERE hidden = 0 ORDER BY cid");
  if (!cols.ok()) return false;
  cols->Bind(1, t->name);
  cols->Bind(2, database);
  int rc;
  t->text_columns.clear();
  while ((rc = cols->Step()) == SQLITE_ROW) {
    ColumnInfo c;
    c.name = cols->ColumnText(0);
    c.type = cols->ColumnText(1);
    if (c.HoldsText()) t->text_columns.push_back(c.name);
  }
  return rc == SQLITE_DONE;
}

// A value read: its column's index among the table's text columns, the
// value, and its row (kFirstRowid for a WITHOUT ROWID table).
struct Taken {
  size_t column;
  std::string value;
  int64_t row;
};

// The hashes of the values one column's scan saw last: at most kMax, then
// all forgotten at once. Open addressing in one array: no allocation per
// value, as a column of values of their own (names) passes every one
// through it.
class SeenValues {
 public:
  static constexpr size_t kMax = 4096;
  // True when `h` was seen; otherwise remembers it.
  bool SeenOrAdd(uint64_t h) {
    if (slots_.empty()) slots_.assign(kSlots, 0);
    if (h == 0) h = 1;  // 0 marks an empty slot
    size_t at = h & (kSlots - 1);
    while (slots_[at] != 0) {
      if (slots_[at] == h) return true;
      at = (at + 1) & (kSlots - 1);
    }
    if (size_ >= kMax) {
      std::fill(slots_.begin(), slots_.end(), 0);
      size_ = 0;
      at = h & (kSlots - 1);
    }
    slots_[at] = h;
    ++size_;
    return false;
  }

 private:
  static constexpr size_t kSlots = 2 * kMax;  // at most half full
  std::vector<uint64_t> slots_;
  size_t size_ = 0;
};

// Reads one source table into the store: the scan's state between chunks.
class SourceScan {
 public:
  SourceScan(sqlite3* db, const std::string& database, ValueStore& store, const std::string& source,
             const ScanLimits& limits)
      : db_(db),
        database_(database),
        store_(store),
        source_(source),
        limits_(limits),
        sizer_(limits) {}

  bool Run() {
    if (!store_.broken().ok()) return false;  // nothing is read into it
    // With `only`, the other tables are not read, not even their columns;
    // nor are those the store holds done (or failed) as they are.
    std::vector<TableProgress> known = store_.Tables(source_);
    std::map<std::string, std::string> held;
    for (const TableProgress& p : known) {
      if (p.done || !p.error.empty()) held.emplace(p.table, p.create_sql);
    }
    std::optional<std::vector<SourceTable>> listed =
        ReadSourceTables(db_, database_, limits_.only, &held);
    if (!listed || limits_.expired()) return false;
    std::vector<SourceTable>& tables = *listed;
    // Tables gone, or whose CREATE statement changed, are forgotten.
    std::unordered_map<std::string, const SourceTable*> listed_by_name;
    for (const SourceTable& t : tables) listed_by_name.emplace(t.name, &t);
    for (const TableProgress& p : known) {
      if (limits_.only && !limits_.only->count(p.table)) continue;
      auto it = listed_by_name.find(p.table);
      if (it == listed_by_name.end() || it->second->create_sql != p.create_sql)
        store_.ForgetTable(source_, p.table);
    }
    known = store_.Tables(source_);
    std::unordered_map<std::string, const TableProgress*> known_by_name;
    for (const TableProgress& p : known) known_by_name.emplace(p.table, &p);
    bool all_done = true;
    for (SourceTable& t : tables) {
      auto found = known_by_name.find(t.name);
      const TableProgress* it = found == known_by_name.end() ? nullptr : found->second;
      if (it && (it->done || !it->error.empty())) continue;
      if (limits_.expired() || !store_.broken().ok()) return false;
      // A table that holds no text has nothing to read.
      if (!ReadTextColumns(db_, database_, &t)) return false;
      if (t.text_columns.empty()) continue;
      int64_t id = it ? it->id : Register(t);
      if (id == 0) continue;
      if (!ReadTable(t, id)) all_done = false;
      if (limits_.expired() || !store_.broken().ok()) return false;
    }
    // A scan at full speed that read everything folds the staged hashes
    // into their buckets (an ask, with its deadline, leaves them staged:
    // lookups read both).
    if (all_done && !limits_.deadline && (store_.pending() > 0 || merged_)) store_.Fold(true);
    return all_done && store_.broken().ok();
  }

 private:
  int64_t Register(const SourceTable& t) {
    MutexLock lock(&store_.mu_);
    auto st = store_.Prepare(
        "INSERT OR IGNORE INTO qp_tables(source, name, create_sql, next_rowid, has_rowid)"
        " VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!st.ok()) return 0;
    st->Bind(1, source_);
    st->Bind(2, t.name);
    st->Bind(3, t.create_sql);
    st->BindInt(4, kFirstRowid);
    st->BindInt(5, t.rowid ? 1 : 0);
    store_.Step(*st);
    auto id = store_.Prepare("SELECT id FROM qp_tables WHERE source = ?1 AND name = ?2");
    if (!id.ok()) return 0;
    id->Bind(1, source_);
    id->Bind(2, t.name);
    return store_.Step(*id) == SQLITE_ROW ? id->ColumnInt(0) : 0;
  }

  // The store's ids of the table's text columns, registering them.
  std::vector<int64_t> ColumnIds(const SourceTable& t, int64_t table_id) {
    MutexLock lock(&store_.mu_);
    std::vector<int64_t> ids;
    auto ins = store_.Prepare("INSERT OR IGNORE INTO qp_columns(table_id, name) VALUES (?1, ?2)");
    auto sel = store_.Prepare("SELECT id FROM qp_columns WHERE table_id = ?1 AND name = ?2");
    if (!ins.ok() || !sel.ok()) return ids;
    for (const std::string& c : t.text_columns) {
      ins->Reset();
      ins->BindInt(1, table_id);
      ins->Bind(2, c);
      store_.Step(*ins);
      sel->Reset();
      sel->BindInt(1, table_id);
      sel->Bind(2, c);
      ids.push_back(store_.Step(*sel) == SQLITE_ROW ? sel->ColumnInt(0) : 0);
    }
    return ids;
  }

  void SetError(int64_t table_id, const std::string& error) {
    MutexLock lock(&store_.mu_);
    auto st = store_.Prepare("UPDATE qp_tables SET error = ?2 WHERE id = ?1");
    if (!st.ok()) return;
    st->BindInt(1, table_id);
    st->Bind(2, error);
    store_.Step(*st);
  }

  // A table SQLite could not read: interrupted, busy or short of memory, it
  // is read again next time (false); any other error is kept as the
  // table's, which is then not read again until its CREATE statement
  // changes (true).
  bool Failed(int64_t table_id, const std::string& message) {
    switch (sqlite3_errcode(db_) & 0xff) {
      case SQLITE_INTERRUPT:
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
      case SQLITE_NOMEM:
        return false;
      default:
        SetError(table_id, message);
        return true;
    }
  }

  // Reads the table until it is done or a limit stops it; true when done.
  bool ReadTable(const SourceTable& t, int64_t table_id) {
    std::vector<int64_t> column_ids = ColumnIds(t, table_id);
    if (column_ids.size() != t.text_columns.size()) return false;
    seen_.assign(column_ids.size(), {});
    const std::string from = QuoteIdentifier(database_) + "." + QuoteIdentifier(t.name);
    if (!t.rowid) return ReadWholeTable(t, table_id, column_ids, from);
    std::vector<std::string> cols;
    for (const std::string& c : t.text_columns) cols.push_back(QuoteIdentifier(c));
    auto st = Statement::Prepare(
        db_, fmt::format("SELECT rowid, {} FROM {} WHERE rowid >= ?1 ORDER BY rowid LIMIT ?2",
                         fmt::join(cols, ", "), from));
    if (!st.ok()) return Failed(table_id, st.status().message());
    // A scan at full speed that no lookup waits on chunk by chunk
    // (agent_index()) stores several chunks at once, each still a short read
    // of the source: fewer, bigger transactions on the store.
    const bool batch = !limits_.deadline && limits_.max_chunk_ms <= 0;
    std::vector<Taken> values;
    // A full-speed scan hashes the values of a column already hashed as it
    // reads them, and writes them straight into their buckets: no string
    // is kept, nor staged (qp_pending).
    std::vector<HashedValues::Entry> entries;
    std::vector<bool> hashed(column_ids.size(), false);
    std::vector<int64_t> rowids;
    int64_t start = 0;
    int64_t next = 0;
    bool batching = false;  // chunks read since `start`, not stored yet
    while (!limits_.expired()) {
      if (!batching) {
        // Read afresh each time: another reader of the same store (the
        // background build, an ask catching up, another process) may have
        // read this chunk already.
        auto [at, done_already] = NextRowid(table_id);
        if (done_already) return true;  // another reader finished it
        start = next = at;
        values.clear();
        entries.clear();
        rowids.clear();
        if (batch) hashed = Hashed(column_ids);
      }
      const auto chunk_started = std::chrono::steady_clock::now();
      const size_t chunk_rows = sizer_.Rows(cols.size(), chunk_started);
      if (chunk_rows == 0) return false;
      st->Reset();
      st->BindInt(1, next);
      st->BindInt(2, static_cast<int64_t>(chunk_rows));
      size_t rows = 0;
      int64_t last = next;
      int rc;
      while ((rc = st->Step()) == SQLITE_ROW) {
        ++rows;
        last = st->ColumnInt(0);
        rowids.push_back(last);
        for (size_t i = 0; i < cols.size(); ++i) {
          Take(st.value(), static_cast<int>(i + 1), i, last, hashed[i] ? &entries : nullptr,
               &values);
        }
      }
      st->Reset();  // the source's lock is held no longer than one chunk
      if (rc != SQLITE_DONE) {
        Failed(table_id, sqlite3_errmsg(db_));
        return false;
      }
      const bool done = rows < chunk_rows;
      next = rows == 0 ? next : (last == std::numeric_limits<int64_t>::max() ? last : last + 1);
      batching = batch && !done && rowids.size() < kBatchRows && values.size() < kBatchValues &&
                 entries.size() < static_cast<size_t>(HashedValues::kPendingMax);
      if (batching) continue;
      switch (Store(table_id, column_ids, values, start, next, &rowids, done,
                    batch ? &entries : nullptr)) {
        case Stored::kFailed:
          return false;
        case Stored::kRaced:
          // Values this chunk saw were not stored: none may be skipped as
          // seen when they are read again.
          seen_.assign(column_ids.size(), {});
          continue;
        case Stored::kOk:
          break;
      }
      // A full-speed scan folds a full staging table as it goes; an ask
      // (with its deadline) never pays for it.
      if (!limits_.deadline && store_.pending() >= HashedValues::kPendingMax) store_.Fold(false);
      sizer_.Measured(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                                chunk_started)
                          .count(),
                      rows * cols.size());
      if (done) return true;
    }
    return false;
  }

  // Rows a full-speed scan stores at once, at most; values held by value
  // (strings) at most: a column of values of its own is then found to be
  // one (HashedValues::Overflows) after its first few thousand, and hashed
  // as it is read from then on. Hashed entries, at most kPendingMax.
  static constexpr size_t kBatchRows = size_t{1} << 20;
  static constexpr size_t kBatchValues = 16384;

  // Which of the columns are hashed in the store now.
  std::vector<bool> Hashed(const std::vector<int64_t>& column_ids) {
    MutexLock lock(&store_.mu_);
    std::vector<bool> out(column_ids.size(), false);
    auto st = store_.Prepare("SELECT hashed FROM qp_columns WHERE id = ?1");
    if (!st.ok()) return out;
    for (size_t i = 0; i < column_ids.size(); ++i) {
      st->Reset();
      st->BindInt(1, column_ids[i]);
      out[i] = store_.Step(*st) == SQLITE_ROW && st->ColumnInt(0) != 0;
    }
    return out;
  }

  bool ReadWholeTable(const SourceTable& t, int64_t table_id,
                      const std::vector<int64_t>& column_ids, const std::string& from) {
    std::vector<Taken> values;
    for (size_t i = 0; i < t.text_columns.size(); ++i) {
      const std::string col = QuoteIdentifier(t.text_columns[i]);
      auto st = Statement::Prepare(
          db_, fmt::format("SELECT DISTINCT {0} FROM {1} WHERE typeof({0}) = 'text'", col, from));
      if (!st.ok()) return Failed(table_id, st.status().message());
      int rc;
      while ((rc = st->Step()) == SQLITE_ROW) {
        Take(st.value(), 0, i, kFirstRowid, nullptr, &values);
        if (limits_.expired()) return false;
      }
      if (rc != SQLITE_DONE) return false;
    }
    return Store(table_id, column_ids, values, kFirstRowid, kFirstRowid, nullptr, true) ==
           Stored::kOk;
  }

  // Where the next chunk starts, and whether the table is done already.
  std::pair<int64_t, bool> NextRowid(int64_t table_id) {
    MutexLock lock(&store_.mu_);
    auto st = store_.Prepare("SELECT next_rowid, done FROM qp_tables WHERE id = ?1");
    if (!st.ok()) return {kFirstRowid, true};
    st->BindInt(1, table_id);
    if (store_.Step(*st) != SQLITE_ROW) return {kFirstRowid, true};  // forgotten meanwhile
    return {st->ColumnInt(0), st->ColumnInt(1) != 0};
  }

  // A short text value of column `i` in row `row`, unless this scan has
  // just seen it: into `entries` as its key's hash when given (a hashed
  // column's, whose value is not kept), else into `values`.
  void Take(Statement& st, int col, size_t i, int64_t row,
            std::vector<HashedValues::Entry>* entries, std::vector<Taken>* values) {
    // One call into the connection (which takes its mutex), then the value's
    // own accessors, which take none.
    sqlite3_value* value = sqlite3_column_value(st.get(), col);
    if (sqlite3_value_type(value) != SQLITE_TEXT) return;
    const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(value));
    const std::string_view v(text ? text : "", static_cast<size_t>(sqlite3_value_bytes(value)));
    if (v.empty() || v.size() > limits_.max_value_bytes) return;
    // Columns of few values repeat them on every row: those are skipped
    // here, not looked up in the store. The set is bounded per column, and
    // holds the values' 64-bit hashes, not copies.
    if (seen_[i].SeenOrAdd(std::hash<std::string_view>{}(v))) return;
    if (entries) {
      ValueIndex::KeyInto(v, &key_);
      if (!ValueIndex::Indexed(key_)) return;
      const HashedValues::Hash h = HashedValues::Of(key_);
      entries->push_back({static_cast<uint32_t>(i), static_cast<uint16_t>(h.bucket), h.tag, row});
      return;
    }
    values->push_back({i, std::string(v), row});
  }

  enum class Stored { kOk, kRaced, kFailed };

  // Moves a column held by value to hashes (HashedValues): its values'
  // keys and rows are staged as hashes, its values dropped. Holding mu_,
  // inside Store()'s transaction; the number of entries staged, or -1.
  int64_t ToHashes(int64_t column_id) REQUIRES(store_.mu_) {
    auto sel =
        store_.Prepare("SELECT key, row FROM qp_values WHERE column_id = ?1 AND row IS NOT NULL");
    auto stage = store_.Prepare(
        "INSERT OR IGNORE INTO qp_pending(column_id, bucket, row, tag) VALUES (?1, ?2, ?3, ?4)");
    auto drop = store_.Prepare("DELETE FROM qp_values WHERE column_id = ?1");
    auto mark = store_.Prepare("UPDATE qp_columns SET hashed = 1, codes = '' WHERE id = ?1");
    if (!sel.ok() || !stage.ok() || !drop.ok() || !mark.ok()) return -1;
    std::vector<std::pair<std::string, int64_t>> held;
    sel->BindInt(1, column_id);
    while (store_.Step(*sel) == SQLITE_ROW)
      held.emplace_back(sel->ColumnText(0), sel->ColumnInt(1));
    sel = Statement();
    int64_t staged = 0;
    for (const auto& [key, row] : held) staged += StageHash(*stage, column_id, key, row);
    drop->BindInt(1, column_id);
    store_.Step(*drop);
    mark->BindInt(1, column_id);
    store_.Step(*mark);
    return store_.broken_.ok() ? staged : -1;
  }

  // Stages one (key, row) of a hashed column; 1 when it was new.
  int64_t StageHash(Statement& stage, int64_t column_id, const std::string& key, int64_t row)
      REQUIRES(store_.mu_) {
    const HashedValues::Hash h = HashedValues::Of(key);
    stage.Reset();
    stage.BindInt(1, column_id);
    stage.BindInt(2, h.bucket);
    stage.BindInt(3, row);
    stage.BindInt(4, h.tag);
    return store_.Step(stage) == SQLITE_DONE && sqlite3_changes(store_.db_) > 0 ? 1 : 0;
  }

  // Stores one chunk read from `start` up to `next` (the rows' `rowids`;
  // null for a WITHOUT ROWID table read whole). Another reader (the
  // background build, an ask, agent_index(), another process) may have
  // stored from `start` meanwhile: a chunk that reaches past where it
  // stopped is stored all the same, counting only its rows past that (values
  // stored twice are kept once); one that does not is dropped (kRaced).
  //
  // `entries` (a full-speed scan's): the hashed columns' entries read, and
  // the chunk's hashes are written straight into their buckets
  // (ValueStore::MergeHashed) rather than staged.
  Stored Store(int64_t table_id, const std::vector<int64_t>& column_ids,
               const std::vector<Taken>& values, int64_t start, int64_t next,
               const std::vector<int64_t>* rowids, bool done,
               std::vector<HashedValues::Entry>* entries = nullptr) {
    MutexLock lock(&store_.mu_);
    sqlite3* s = store_.db_;
    if (!store_.Exec("BEGIN IMMEDIATE").ok()) return Stored::kFailed;
    int64_t rows = rowids ? static_cast<int64_t>(rowids->size()) : 0;
    int64_t rows_before = 0;
    {
      auto at = store_.Prepare("SELECT next_rowid, done, rows_read FROM qp_tables WHERE id = ?1");
      bool raced = !at.ok() || (at->BindInt(1, table_id), store_.Step(*at)) != SQLITE_ROW ||
                   (at->ColumnInt(1) != 0 && start != kFirstRowid);
      if (!raced && at->ColumnInt(0) != start) {
        const int64_t stored_to = at->ColumnInt(0);
        raced = !rowids || stored_to < start || stored_to >= next;
        if (!raced) {
          rows = std::count_if(rowids->begin(), rowids->end(),
                               [stored_to](int64_t r) { return r >= stored_to; });
          // Hashes of the rows stored already are not written twice.
          if (entries) {
            std::erase_if(*entries,
                          [stored_to](const HashedValues::Entry& e) { return e.row < stored_to; });
          }
        }
      }
      if (raced) {
        at = Statement();
        (void)store_.Exec("ROLLBACK");
        return Stored::kRaced;
      }
      rows_before = at->ColumnInt(2);
    }
    auto ins = store_.Prepare(
        "INSERT OR IGNORE INTO qp_values(key, column_id, value, row) VALUES (?1, ?2, ?3, ?4)");
    auto stage = store_.Prepare(
        "INSERT OR IGNORE INTO qp_pending(column_id, bucket, row, tag) VALUES (?1, ?2, ?3, ?4)");
    auto count = store_.Prepare("SELECT value_count, codes, hashed FROM qp_columns WHERE id = ?1");
    auto upd = store_.Prepare("UPDATE qp_columns SET value_count = ?2, codes = ?3 WHERE id = ?1");
    auto prog = store_.Prepare(
        "UPDATE qp_tables SET next_rowid = ?2, rows_read = rows_read + ?3, done = ?4, error = NULL "
        "WHERE id = ?1");
    if (!ins.ok() || !stage.ok() || !count.ok() || !upd.ok() || !prog.ok()) {
      ins = Statement();
      stage = Statement();
      count = Statement();
      upd = Statement();
      prog = Statement();
      (void)store_.Exec("ROLLBACK");
      return Stored::kFailed;
    }
    // Which columns are hashed (HashedValues) as the chunk is stored.
    std::vector<bool> hashed(column_ids.size(), false);
    for (size_t i = 0; i < column_ids.size(); ++i) {
      count->Reset();
      count->BindInt(1, column_ids[i]);
      if (store_.Step(*count) == SQLITE_ROW) hashed[i] = count->ColumnInt(2) != 0;
    }
    count->Reset();
    std::vector<std::vector<std::string>> added(column_ids.size());
    std::vector<int64_t> staged(column_ids.size(), 0);
    // In key order: each insert lands next to the last one in the store's
    // B-tree, on pages already in its cache.
    std::vector<std::tuple<std::string, size_t, const std::string*, int64_t>> keyed;
    std::vector<std::tuple<size_t, int, int64_t, uint16_t>> hashes;  // column, bucket, row, tag
    keyed.reserve(values.size());
    for (const auto& [i, v, row] : values) {
      std::string key = ValueIndex::Key(v);
      if (!ValueIndex::Indexed(key)) continue;
      if (hashed[i] && rowids) {
        const HashedValues::Hash h = HashedValues::Of(key);
        hashes.emplace_back(i, h.bucket, row, h.tag);
      } else {
        keyed.emplace_back(std::move(key), i, &v, row);
      }
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [key, i, v, row] : keyed) {
      ins->Reset();
      ins->Bind(1, key);
      ins->BindInt(2, column_ids[i]);
      ins->Bind(3, *v);
      if (rowids) ins->BindInt(4, row);
      if (store_.Step(*ins) == SQLITE_DONE && sqlite3_changes(s) > 0) added[i].push_back(*v);
    }
    int64_t newly_staged = 0;
    if (entries) {
      for (const auto& [i, bucket, row, tag] : hashes) {
        entries->push_back({static_cast<uint32_t>(i), static_cast<uint16_t>(bucket), tag, row});
      }
      for (const HashedValues::Entry& e : *entries) ++staged[e.column];
      store_.MergeHashed(entries, column_ids);
      merged_ = merged_ || !entries->empty();
    } else {
      std::sort(hashes.begin(), hashes.end());
      for (const auto& [i, bucket, row, tag] : hashes) {
        stage->Reset();
        stage->BindInt(1, column_ids[i]);
        stage->BindInt(2, bucket);
        stage->BindInt(3, row);
        stage->BindInt(4, tag);
        if (store_.Step(*stage) == SQLITE_DONE && sqlite3_changes(s) > 0) {
          ++staged[i];
          ++newly_staged;
        }
      }
    }
    for (size_t i = 0; i < column_ids.size(); ++i) {
      if (added[i].empty() && staged[i] == 0) continue;
      count->Reset();
      count->BindInt(1, column_ids[i]);
      if (store_.Step(*count) != SQLITE_ROW) continue;
      const int64_t n = count->ColumnInt(0) + static_cast<int64_t>(added[i].size()) + staged[i];
      if (!hashed[i] && rowids && HashedValues::Overflows(n, rows_before + rows)) {
        count->Reset();
        const int64_t moved = ToHashes(column_ids[i]);
        if (moved < 0) continue;  // the store is broken: the commit below fails
        staged[i] += moved;
        newly_staged += moved;
        hashed[i] = true;
      }
      std::string codes;
      if (!hashed[i] && n <= StoredCodes::kMax) {
        std::vector<std::string> all = StoredCodes::Split(count->ColumnText(1));
        all.insert(all.end(), added[i].begin(), added[i].end());
        codes = StoredCodes::Join(all);
      }
      count->Reset();
      upd->Reset();
      upd->BindInt(1, column_ids[i]);
      upd->BindInt(2, n);
      upd->Bind(3, codes);
      store_.Step(*upd);
    }
    prog->BindInt(1, table_id);
    prog->BindInt(2, next);
    prog->BindInt(3, rows);
    prog->BindInt(4, done ? 1 : 0);
    store_.Step(*prog);
    ins = Statement();
    stage = Statement();
    count = Statement();
    upd = Statement();
    prog = Statement();
    if (store_.Exec("COMMIT").ok()) {
      store_.pending_ += newly_staged;
      return Stored::kOk;
    }
    (void)store_.Exec("ROLLBACK");
    return Stored::kFailed;
  }

  sqlite3* db_;
  const std::string& database_;
  ValueStore& store_;
  const std::string& source_;
  const ScanLimits& limits_;
  std::vector<SeenValues> seen_;
  std::string key_;      // Take()'s key, one buffer for every value
  bool merged_ = false;  // hashes written straight into buckets
  ChunkSizer sizer_;
};

bool ScanSource(sqlite3* db, const std::string& database, ValueStore& store,
                const std::string& source, const ScanLimits& limits) {
  return SourceScan(db, database, store, source, limits).Run();
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
