// The scan that reads a source database into a ValueStore, chunk by chunk
// (ScanSource, value_scan.h).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "agent/base/sqlite.h"
#include "agent/knowledge/value_index.h"
#include "agent/knowledge/value_scan.h"

namespace querypilot {
namespace {

// The next_rowid of a rowid table nothing has been read from yet.
constexpr int64_t kFirstRowid = std::numeric_limits<int64_t>::min();

}  // namespace

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
    const bool read = ReadTables(tables, known_by_name, &all_done);
    // What was read is stored, even where the scan stopped.
    const bool stored = Flush(&all_done);
    cached_.clear();
    if (!read || !stored || limits_.expired()) return false;
    // A scan at full speed that read everything folds the staged hashes
    // into their buckets (an ask, with its deadline, leaves them staged:
    // lookups read both).
    if (all_done && !limits_.deadline && (store_.pending() > 0 || merged_)) store_.Fold(true);
    return all_done && store_.broken().ok();
  }

 private:
  // The tables not done, each read in turn: those the store does not know
  // yet are read first and stored in groups (Flush); false where the scan
  // stopped (a limit, the store broken, SQLite unable to list columns).
  bool ReadTables(std::vector<SourceTable>& tables,
                  const std::unordered_map<std::string, const TableProgress*>& known_by_name,
                  bool* all_done) {
    auto columns = PrepareTextColumns(db_);
    if (!columns.ok()) return false;
    for (SourceTable& t : tables) {
      auto found = known_by_name.find(t.name);
      const TableProgress* it = found == known_by_name.end() ? nullptr : found->second;
      if (it && (it->done || !it->error.empty())) continue;
      if (limits_.expired() || !store_.broken().ok()) return false;
      // A table that holds no text has nothing to read.
      if (!ReadTextColumns(*columns, database_, &t)) return false;
      if (t.text_columns.empty()) continue;
      if (!it) {
        switch (ReadFirstChunk(t)) {
          case First::kDeferred:
            if (DeferredFull() && !Flush(all_done)) return false;
            continue;
          case First::kStopped:
            return false;
          case First::kMore:
          case First::kFailed:
            // Stored (and registered) now; read on, or told, below.
            if (!Flush(all_done)) return false;
            break;
        }
      }
      const int64_t id = it ? it->id : Register(t);
      if (id == 0) continue;
      if (failed_read_) {
        // Kept as the table's error: not read again until its CREATE
        // statement changes (Failed()).
        SetError(id, *failed_read_);
        failed_read_.reset();
        continue;
      }
      if (!ReadTable(t, id)) *all_done = false;
      if (limits_.expired() || !store_.broken().ok()) return false;
    }
    return true;
  }

  // A table the store does not know, read before it is registered: whole
  // in one chunk (kDeferred: kept for Flush, with others like it), or in
  // part (kMore: its first chunk kept, to be stored before the rest is
  // read). kFailed: SQLite could not read it (failed_read_ holds why, and
  // SQLite's error code is still the connection's); kStopped: a limit.
  enum class First { kDeferred, kMore, kFailed, kStopped };
  First ReadFirstChunk(const SourceTable& t) {
    Deferred d;
    d.table = &t;
    seen_.assign(t.text_columns.size(), {});
    const std::string from = QuoteIdentifier(database_) + "." + QuoteIdentifier(t.name);
    if (!t.rowid) {
      if (!ReadWholeTable(t, from, &d.values)) return Unread();
      deferred_values_ += d.values.size();
      deferred_.push_back(std::move(d));
      return First::kDeferred;
    }
    std::vector<std::string> cols;
    for (const std::string& c : t.text_columns) cols.push_back(QuoteIdentifier(c));
    auto st = Statement::Prepare(
        db_, fmt::format("SELECT rowid, {} FROM {} WHERE rowid >= ?1 ORDER BY rowid LIMIT ?2",
                         fmt::join(cols, ", "), from));
    if (!st.ok()) return Unread();
    const auto started = std::chrono::steady_clock::now();
    const size_t chunk_rows = sizer_.Rows(cols.size(), started);
    if (chunk_rows == 0) return First::kStopped;
    st->BindInt(1, kFirstRowid);
    st->BindInt(2, static_cast<int64_t>(chunk_rows));
    int64_t last = kFirstRowid;
    int rc;
    while ((rc = st->Step()) == SQLITE_ROW) {
      last = st->ColumnInt(0);
      d.rowids.push_back(last);
      for (size_t i = 0; i < cols.size(); ++i)
        Take(st.value(), static_cast<int>(i + 1), i, last, nullptr, &d.values);
    }
    if (rc != SQLITE_DONE) return Unread();
    st = Statement();
    sizer_.Measured(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count(),
        d.rowids.size() * cols.size());
    d.done = d.rowids.size() < chunk_rows;
    d.next = d.rowids.empty() ? kFirstRowid
                              : (last == std::numeric_limits<int64_t>::max() ? last : last + 1);
    deferred_values_ += d.values.size();
    deferred_.push_back(std::move(d));
    return deferred_.back().done ? First::kDeferred : First::kMore;
  }

  // A read that stopped: at a limit, or on an error kept as the table's
  // (Failed()) unless it is one a retry may mend.
  First Unread() {
    if (limits_.expired() || Retryable()) return First::kStopped;
    failed_read_ = sqlite3_errmsg(db_);
    return First::kFailed;
  }

  // A table read, not yet stored: its values, and for a rowid table the
  // rows read and where the next chunk starts.
  struct Deferred {
    const SourceTable* table = nullptr;
    std::vector<Taken> values;
    std::vector<int64_t> rowids;
    int64_t next = kFirstRowid;
    bool done = true;
  };
  // Tables kept for one transaction at most; values, at most.
  static constexpr size_t kGroupTables = 64;
  static constexpr size_t kGroupValues = 16384;
  bool DeferredFull() const {
    return deferred_.size() >= kGroupTables || deferred_values_ >= kGroupValues;
  }

  // Registers the deferred tables and stores what was read of them, in one
  // transaction on the store: a schema of many small tables costs a commit
  // per group of them, not several per table. False when the store failed.
  bool Flush(bool* all_done) {
    if (deferred_.empty()) return true;
    if (!StoreDeferred()) return false;
    // Another reader stored from where these started meanwhile: each is
    // read on from where the store has it, as ReadTable() does after a race.
    std::vector<const SourceTable*> raced = std::move(raced_);
    raced_.clear();
    for (const SourceTable* t : raced) {
      const int64_t id = Register(*t);
      if (id == 0 || !ReadTable(*t, id)) *all_done = false;
    }
    return store_.broken().ok();
  }

  // Flush()'s transaction; those that raced are left in raced_.
  bool StoreDeferred() {
    std::vector<Deferred> group = std::move(deferred_);
    deferred_.clear();
    deferred_values_ = 0;
    MutexLock lock(&store_.mu_);
    if (!store_.Exec("BEGIN IMMEDIATE").ok()) return false;
    int64_t staged = 0;
    for (const Deferred& d : group) {
      const SourceTable& t = *d.table;
      const int64_t id = RegisterHeld(t);
      const std::vector<int64_t> column_ids = id ? ColumnIdsHeld(t, id) : std::vector<int64_t>{};
      if (column_ids.empty() || column_ids.size() != t.text_columns.size()) {
        raced_.push_back(&t);
        continue;
      }
      switch (StoreHeld(id, column_ids, d.values, kFirstRowid, d.next,
                        t.rowid ? &d.rowids : nullptr, d.done, nullptr, &staged)) {
        case Stored::kOk:
          break;
        case Stored::kRaced:
          raced_.push_back(&t);
          break;
        case Stored::kFailed:
          cached_.clear();
          (void)store_.Exec("ROLLBACK");
          return false;
      }
    }
    ResetCached();
    if (!store_.Exec("COMMIT").ok()) {
      (void)store_.Exec("ROLLBACK");
      return false;
    }
    store_.pending_ += staged;
    return true;
  }

  // The store's statements, each prepared once per scan (a scan of many
  // small tables runs each a few times per table); reset, or null when it
  // could not be prepared. `sql` is a literal: it is the key.
  Statement* Cached(const char* sql) REQUIRES(store_.mu_) {
    auto [it, added] = cached_.try_emplace(sql);
    if (added) {
      auto st = store_.Prepare(sql);
      if (st.ok()) it->second = std::move(st).value();
    }
    if (!it->second) {
      cached_.erase(it);
      return nullptr;
    }
    it->second.Reset();
    return &it->second;
  }
  void ResetCached() REQUIRES(store_.mu_) {
    for (auto& [sql, st] : cached_) st.Reset();
  }

  int64_t Register(const SourceTable& t) {
    MutexLock lock(&store_.mu_);
    return RegisterHeld(t);
  }
  int64_t RegisterHeld(const SourceTable& t) REQUIRES(store_.mu_) {
    Statement* st = Cached(
        "INSERT OR IGNORE INTO qp_tables(source, name, create_sql, next_rowid, has_rowid)"
        " VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!st) return 0;
    st->Bind(1, source_);
    st->Bind(2, t.name);
    st->Bind(3, t.create_sql);
    st->BindInt(4, kFirstRowid);
    st->BindInt(5, t.rowid ? 1 : 0);
    store_.Step(*st);
    st->Reset();
    Statement* id = Cached("SELECT id FROM qp_tables WHERE source = ?1 AND name = ?2");
    if (!id) return 0;
    id->Bind(1, source_);
    id->Bind(2, t.name);
    const int64_t out = store_.Step(*id) == SQLITE_ROW ? id->ColumnInt(0) : 0;
    id->Reset();
    return out;
  }

  // The store's ids of the table's text columns, registering them.
  std::vector<int64_t> ColumnIds(const SourceTable& t, int64_t table_id) {
    MutexLock lock(&store_.mu_);
    // One transaction for the columns' rows, not one each.
    if (!store_.Exec("BEGIN IMMEDIATE").ok()) return {};
    std::vector<int64_t> ids = ColumnIdsHeld(t, table_id);
    ResetCached();
    if (!store_.Exec("COMMIT").ok()) {
      (void)store_.Exec("ROLLBACK");
      return {};
    }
    return ids;
  }
  std::vector<int64_t> ColumnIdsHeld(const SourceTable& t, int64_t table_id) REQUIRES(store_.mu_) {
    std::vector<int64_t> ids;
    Statement* ins = Cached("INSERT OR IGNORE INTO qp_columns(table_id, name) VALUES (?1, ?2)");
    if (!ins) return ids;
    Statement* sel = Cached("SELECT id FROM qp_columns WHERE table_id = ?1 AND name = ?2");
    if (!sel) return ids;
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
    ins->Reset();
    sel->Reset();
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
    if (Retryable()) return false;
    SetError(table_id, message);
    return true;
  }
  // The source's last error is one a later read may not meet.
  bool Retryable() const {
    const int rc = sqlite3_errcode(db_) & 0xff;
    return rc == SQLITE_INTERRUPT || rc == SQLITE_BUSY || rc == SQLITE_LOCKED || rc == SQLITE_NOMEM;
  }

  // Reads the table until it is done or a limit stops it; true when done.
  bool ReadTable(const SourceTable& t, int64_t table_id) {
    std::vector<int64_t> column_ids = ColumnIds(t, table_id);
    if (column_ids.size() != t.text_columns.size()) return false;
    seen_.assign(column_ids.size(), {});
    const std::string from = QuoteIdentifier(database_) + "." + QuoteIdentifier(t.name);
    if (!t.rowid) {
      std::vector<Taken> values;
      if (!ReadWholeTable(t, from, &values))
        return !limits_.expired() && Failed(table_id, sqlite3_errmsg(db_));
      return Store(table_id, column_ids, values, kFirstRowid, kFirstRowid, nullptr, true) ==
             Stored::kOk;
    }
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

  // A WITHOUT ROWID table's distinct text values, read whole; false where
  // the read stopped (a limit, an error: sqlite3_errcode says which).
  bool ReadWholeTable(const SourceTable& t, const std::string& from, std::vector<Taken>* values) {
    for (size_t i = 0; i < t.text_columns.size(); ++i) {
      const std::string col = QuoteIdentifier(t.text_columns[i]);
      auto st = Statement::Prepare(
          db_, fmt::format("SELECT DISTINCT {0} FROM {1} WHERE typeof({0}) = 'text'", col, from));
      if (!st.ok()) return false;
      int rc;
      while ((rc = st->Step()) == SQLITE_ROW) {
        Take(st.value(), 0, i, kFirstRowid, nullptr, values);
        if (limits_.expired()) return false;
      }
      if (rc != SQLITE_DONE) return false;
    }
    return true;
  }

  // Where the next chunk starts, and whether the table is done already.
  std::pair<int64_t, bool> NextRowid(int64_t table_id) {
    MutexLock lock(&store_.mu_);
    Statement* st = Cached("SELECT next_rowid, done FROM qp_tables WHERE id = ?1");
    if (!st) return {kFirstRowid, true};
    st->BindInt(1, table_id);
    if (store_.Step(*st) != SQLITE_ROW) return {kFirstRowid, true};  // forgotten meanwhile
    const std::pair<int64_t, bool> out{st->ColumnInt(0), st->ColumnInt(1) != 0};
    st->Reset();
    return out;
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
    if (!store_.Exec("BEGIN IMMEDIATE").ok()) return Stored::kFailed;
    int64_t staged = 0;
    const Stored stored =
        StoreHeld(table_id, column_ids, values, start, next, rowids, done, entries, &staged);
    ResetCached();
    if (stored == Stored::kOk && store_.Exec("COMMIT").ok()) {
      store_.pending_ += staged;
      return Stored::kOk;
    }
    (void)store_.Exec("ROLLBACK");
    return stored == Stored::kOk ? Stored::kFailed : stored;
  }

  // Store()'s work within the caller's transaction on the store: nothing
  // is written when it returns kRaced; `*staged` grows by the hashed
  // entries staged, to count once the transaction commits.
  Stored StoreHeld(int64_t table_id, const std::vector<int64_t>& column_ids,
                   const std::vector<Taken>& values, int64_t start, int64_t next,
                   const std::vector<int64_t>* rowids, bool done,
                   std::vector<HashedValues::Entry>* entries, int64_t* staged_out)
      REQUIRES(store_.mu_) {
    sqlite3* s = store_.db_;
    int64_t rows = rowids ? static_cast<int64_t>(rowids->size()) : 0;
    int64_t rows_before = 0;
    {
      Statement* at = Cached("SELECT next_rowid, done, rows_read FROM qp_tables WHERE id = ?1");
      bool raced = !at || (at->BindInt(1, table_id), store_.Step(*at)) != SQLITE_ROW ||
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
        if (at) at->Reset();
        return at ? Stored::kRaced : Stored::kFailed;
      }
      rows_before = at->ColumnInt(2);
      at->Reset();
    }
    Statement* ins = Cached(
        "INSERT OR IGNORE INTO qp_values(key, column_id, value, row) VALUES (?1, ?2, ?3, ?4)");
    Statement* stage = Cached(
        "INSERT OR IGNORE INTO qp_pending(column_id, bucket, row, tag) VALUES (?1, ?2, ?3, ?4)");
    Statement* count = Cached("SELECT value_count, codes, hashed FROM qp_columns WHERE id = ?1");
    Statement* upd = Cached("UPDATE qp_columns SET value_count = ?2, codes = ?3 WHERE id = ?1");
    Statement* prog = Cached(
        "UPDATE qp_tables SET next_rowid = ?2, rows_read = rows_read + ?3, done = ?4, error = NULL "
        "WHERE id = ?1");
    if (!ins || !stage || !count || !upd || !prog) return Stored::kFailed;
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
    ResetCached();
    *staged_out += newly_staged;
    return store_.broken_.ok() ? Stored::kOk : Stored::kFailed;
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
  std::vector<Deferred> deferred_;         // read, to be stored by Flush()
  std::vector<const SourceTable*> raced_;  // Flush()'s, read on after its commit
  size_t deferred_values_ = 0;
  std::optional<std::string> failed_read_;             // ReadFirstChunk()'s kFailed: why
  std::unordered_map<const char*, Statement> cached_;  // Cached(), by the SQL's address
};

bool ScanSource(sqlite3* db, const std::string& database, ValueStore& store,
                const std::string& source, const ScanLimits& limits) {
  return SourceScan(db, database, store, source, limits).Run();
}

}  // namespace querypilot
