#include "agent/knowledge/value_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_set>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/value_index.h"
#include "agent/sql/own_file.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

constexpr int64_t kFirstRowid = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxCodes = 8;  // values kept as a column's codes while it holds no more
constexpr char kCodeSeparator = '\x1f';

const char* const kStoreSchema[] = {
    "CREATE TABLE IF NOT EXISTS qp_tables("
    " id INTEGER PRIMARY KEY, source TEXT NOT NULL, name TEXT NOT NULL, create_sql TEXT NOT NULL,"
    " next_rowid INTEGER NOT NULL, rows_read INTEGER NOT NULL DEFAULT 0,"
    " done INTEGER NOT NULL DEFAULT 0, has_rowid INTEGER NOT NULL, error TEXT,"
    " UNIQUE(source, name))",
    "CREATE TABLE IF NOT EXISTS qp_columns("
    " id INTEGER PRIMARY KEY, table_id INTEGER NOT NULL, name TEXT NOT NULL,"
    " value_count INTEGER NOT NULL DEFAULT 0, codes TEXT NOT NULL DEFAULT '',"
    " UNIQUE(table_id, name))",
    "CREATE TABLE IF NOT EXISTS qp_values("
    " key TEXT NOT NULL, column_id INTEGER NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(key, column_id, value)) WITHOUT ROWID",
};

std::vector<std::string> SplitCodes(const std::string& codes) {
  std::vector<std::string> out;
  if (codes.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t end = codes.find(kCodeSeparator, start);
    out.push_back(codes.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

bool ScanLimits::expired() const {
  if (cancel && cancel->load(std::memory_order_relaxed)) return true;
  return deadline && std::chrono::steady_clock::now() >= *deadline;
}

Result<std::shared_ptr<ValueStore>> ValueStore::Open(const std::string& path, sqlite3* host,
                                                     bool kept) {
  bool unusable = false;
  if (!kept || path.empty()) return OpenFile(path, host, false, &unusable);
  // A name of QueryPilot's own, in a folder of its own (OwnFolder): what
  // stands there that is not a plain file of the user's (a link to a file
  // of theirs, a hard link) is taken away, never written through.
  Result<std::string> cleared = ClearOwnFileName(path);
  if (!cleared.ok()) {
    return Status(
        ErrorKind::kInvalidArgument,
        fmt::format("the kept value index cannot be used: {}", cleared.status().message()));
  }
  Result<std::shared_ptr<ValueStore>> store = OpenFile(path, host, true, &unusable);
  std::string replaced = *cleared;
  if (!store.ok()) {
    // A kept index that is corrupt, not a database, or not a value index of
    // this shape holds nothing worth keeping: it is made anew, and the user
    // told. Any other failure (the file is one of the host's, a link put in
    // its place, an I/O error, a full disk) is no fault of what it holds.
    const ErrorKind kind = store.status().kind();
    if (!unusable || kind == ErrorKind::kDatabaseIo || kind == ErrorKind::kDiskFull) {
      return store.status();
    }
    const std::string why = store.status().message();
    store = Status(kind, why);  // the store closes before its file is removed
    if (!RemoveOwnFile(path)) return store.status();
    replaced = (replaced.empty() ? "" : replaced + "; ") +
               fmt::format("the index there could not be used ({}), so it was made anew", why);
    store = OpenFile(path, host, true, &unusable);
    if (!store.ok()) return store.status();
  }
  (*store)->replaced_ = std::move(replaced);
  return store;
}

Result<std::shared_ptr<ValueStore>> ValueStore::OpenFile(const std::string& path, sqlite3* host,
                                                         bool kept, bool* unusable) {
  const bool check = host && !path.empty();
  const char* what = kept ? "the kept value index" : "value_index_file";
  if (check) {
    if (Status st = CheckOwnFile(host, path, what); !st.ok()) return st;
  }
  // A kept index is opened by SQLite refusing any symbolic link in its name
  // (where the host's SQLite knows how: 3.31 and later), and is the same
  // plain file of the user's, with no other name, before and after.
  const std::optional<PlainFile> before = kept ? OwnPlainFile(path) : std::nullopt;
  int flags = OwnFileOpenFlags() & ~SQLITE_OPEN_FULLMUTEX;
  if (kept && sqlite3_libversion_number() >= 3031000) flags |= SQLITE_OPEN_NOFOLLOW;
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status(ErrorKind::kInvalidArgument,
                  fmt::format("could not open the value index \"{}\": {}", path, message));
  }
  std::shared_ptr<ValueStore> store(new ValueStore(db, path));
  store->kept_ = kept;
  if (kept) {
    const std::optional<PlainFile> after = OwnPlainFile(path);
    store->file_ = after;
    if (!after || (before && *before != *after)) {
      return Status(ErrorKind::kInvalidArgument,
                    fmt::format("the kept value index \"{}\" changed as it was opened (a link or "
                                "another file put in its place); a temporary index is used",
                                path));
    }
  }
  if (check) {
    if (Status st = CheckOwnConnection(host, db, what); !st.ok()) return st;
  }
  // From here on a failure is the file's own: what it holds.
  *unusable = true;
  sqlite3_busy_timeout(db, 2000);
  std::lock_guard<std::recursive_mutex> lock(store->mu_);
  // A file that is not a value index of this shape, or whose tables of
  // progress are corrupt, is refused before anything is written to it,
  // rather than read as an empty index. (Values corrupt further in are found
  // by the first lookup or scan that meets them, or by Verify().)
  {
    auto names = store->Prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
    std::vector<std::string> tables;
    while (names.ok() && store->Step(*names) == SQLITE_ROW) tables.push_back(names->ColumnText(0));
    if (!store->broken_.ok()) return store->broken_;
    for (const std::string& t : tables) {
      if (t != "qp_tables" && t != "qp_columns" && t != "qp_values") {
        store->MarkBroken(ErrorKind::kInvalidArgument,
                          fmt::format("it holds a table {} of its own, so it is not "
                                      "a QueryPilot value index",
                                      text::QuoteSqlString(t)));
        return store->broken_;
      }
    }
    // Each table it holds has the columns QueryPilot reads, and its first
    // rows (and for the tables of progress, all of them) can be read.
    const std::pair<const char*, const char*> kShapes[] = {
        {"qp_tables",
         "SELECT id, source, name, create_sql, next_rowid, rows_read, done, has_rowid, error,"
         " (SELECT count(*) FROM qp_tables) FROM qp_tables LIMIT 1"},
        {"qp_columns",
         "SELECT id, table_id, name, value_count, codes, (SELECT count(*) FROM qp_columns)"
         " FROM qp_columns LIMIT 1"},
        {"qp_values", "SELECT key, column_id, value FROM qp_values LIMIT 1"},
    };
    for (const auto& [table, sql] : kShapes) {
      if (std::find(tables.begin(), tables.end(), table) == tables.end()) continue;  // made below
      auto st = store->Prepare(sql);
      if (st.ok()) store->Step(*st);
      if (!store->broken_.ok()) return store->broken_;
    }
  }
  // Settings a file may refuse (WAL mode in a folder that cannot hold its
  // -shm file): the store works without them.
  auto setting = [db](const char* sql) { (void)sqlite3_exec(db, sql, nullptr, nullptr, nullptr); };
  // Memory stays bounded whatever the index holds: SQLite's page cache.
  setting("PRAGMA cache_size = -16384");
  if (!path.empty()) {
    setting("PRAGMA journal_mode = WAL");
    setting("PRAGMA synchronous = NORMAL");
    // A build writes pages all over the index: checkpoint (and sync) every
    // 64 MiB of log rather than every 4.
    setting("PRAGMA wal_autocheckpoint = 16384");
  } else {
    // A private temporary database lives as long as the process: its
    // rollback journal need not be written to disk.
    setting("PRAGMA journal_mode = MEMORY");
  }
  for (const char* sql : kStoreSchema) {
    if (!store->Exec(sql).ok()) return store->broken_;
  }
  return store;
}

ValueStore::~ValueStore() {
  find_ = Statement();    // finalized before its connection closes
  sqlite3_close_v2(db_);  // any other statement left open delays the close, never leaks it
}

Status ValueStore::Exec(const char* sql) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return Status();
  std::string message = sqlite3_errmsg(db_);
  Note(rc);
  return Status(ErrorKind::kExecutionError, message);
}

Result<Statement> ValueStore::Prepare(std::string_view sql) {
  int code = SQLITE_OK;
  Result<Statement> st = Statement::Prepare(db_, sql, nullptr, &code);
  if (!st.ok()) Note(code);
  return st;
}

int ValueStore::Step(Statement& st) {
  const int rc = st.Step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) Note(rc);
  return rc;
}

void ValueStore::Note(int rc) {
  switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
    // Another connection's lock, an interruption, memory: the next try may
    // succeed.
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_INTERRUPT:
    case SQLITE_NOMEM:
      return;
    default:
      break;
  }
  const std::string message = sqlite3_errmsg(db_);
  ErrorKind kind = ClassifySqliteFailure(rc, message);
  if (kind != ErrorKind::kDatabaseCorrupt && kind != ErrorKind::kNotADatabase &&
      kind != ErrorKind::kDatabaseIo && kind != ErrorKind::kDiskFull) {
    kind = ErrorKind::kInvalidArgument;  // not a value index of this shape, read-only, ...
  }
  MarkBroken(kind, message);
}

void ValueStore::MarkBroken(ErrorKind kind, const std::string& why) {
  if (!broken_.ok()) return;  // the first cause is the one told
  broken_ = Status(
      kind, path_.empty()
                ? fmt::format("the value index's temporary database is not usable: {}; SELECT "
                              "agent_index() starts it anew",
                              why)
            : kept_ ? fmt::format("the kept value index \"{}\" is not usable: {}; the next ask "
                                  "or SELECT agent_index() makes it anew",
                                  path_, why)
                    : fmt::format("value_index_file \"{}\" is not usable: {}; remove the file (or "
                                  "set another value_index_file) and SELECT agent_index() builds "
                                  "it anew",
                                  path_, why));
}

Status ValueStore::Verify() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (verified_ || !broken_.ok()) return broken_;
  verified_ = true;
  auto st = Prepare("PRAGMA quick_check(1)");
  if (st.ok() && Step(*st) == SQLITE_ROW && st->ColumnText(0) != "ok") {
    MarkBroken(ErrorKind::kDatabaseCorrupt, st->ColumnText(0));
  }
  return broken_;
}

Status ValueStore::broken() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return broken_;
}

std::vector<TableProgress> ValueStore::Tables(const std::string& source) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<TableProgress> out;
  auto st = Prepare(
      "SELECT t.id, t.name, t.create_sql, t.next_rowid, t.rows_read, t.done, t.has_rowid,"
      " coalesce(t.error, ''), (SELECT coalesce(sum(value_count), 0) FROM qp_columns WHERE "
      "table_id = t.id),"
      " (SELECT count(*) FROM qp_columns WHERE table_id = t.id)"
      " FROM qp_tables AS t WHERE t.source = ?1 ORDER BY t.id");
  if (!st.ok()) return out;
  st->Bind(1, source);
  while (Step(*st) == SQLITE_ROW) {
    TableProgress p;
    p.id = st->ColumnInt(0);
    p.table = st->ColumnText(1);
    p.create_sql = st->ColumnText(2);
    p.next_rowid = st->ColumnInt(3);
    p.rows_read = st->ColumnInt(4);
    p.done = st->ColumnInt(5) != 0;
    p.rowid = st->ColumnInt(6) != 0;
    p.error = st->ColumnText(7);
    p.values = st->ColumnInt(8);
    p.text_columns = static_cast<int>(st->ColumnInt(9));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<StoredValue> ValueStore::Find(const std::string& source, const std::string& key,
                                          size_t limit) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<StoredValue> out;
  if (!find_) {
    auto st = Prepare(
        "SELECT t.name, c.name, v.value FROM qp_values AS v JOIN qp_columns AS c ON c.id = "
        "v.column_id"
        " JOIN qp_tables AS t ON t.id = c.table_id WHERE v.key = ?1 AND t.source = ?2"
        " ORDER BY c.value_count, v.column_id LIMIT ?3");
    if (!st.ok()) return out;
    find_ = std::move(st).value();
  }
  find_.Bind(1, key);
  find_.Bind(2, source);
  find_.BindInt(3, static_cast<int64_t>(limit));
  while (Step(find_) == SQLITE_ROW)
    out.push_back({find_.ColumnText(0), find_.ColumnText(1), find_.ColumnText(2)});
  find_.Reset();  // holds no read transaction on the store between asks
  return out;
}

std::vector<CodedColumn> ValueStore::CodedColumns(const std::string& source, size_t max_codes,
                                                  size_t max_code_bytes) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<CodedColumn> out;
  auto st = Prepare(
      "SELECT t.name, c.name, c.codes FROM qp_columns AS c JOIN qp_tables AS t ON t.id = c.table_id"
      " WHERE t.source = ?1 AND t.done AND c.value_count BETWEEN 2 AND ?2 AND t.rows_read > "
      "c.value_count"
      " ORDER BY t.name, c.id");
  if (!st.ok()) return out;
  st->Bind(1, source);
  st->BindInt(2, static_cast<int64_t>(max_codes));
  while (Step(*st) == SQLITE_ROW) {
    std::vector<std::string> codes = SplitCodes(st->ColumnText(2));
    if (codes.empty() || std::any_of(codes.begin(), codes.end(), [&](const std::string& c) {
          return c.size() > max_code_bytes;
        })) {
      continue;
    }
    std::sort(codes.begin(), codes.end());
    out.push_back({st->ColumnText(0), st->ColumnText(1), std::move(codes)});
  }
  return out;
}

std::pair<int64_t, bool> ValueStore::ColumnState(const std::string& source,
                                                 const std::string& table,
                                                 const std::string& column) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto st = Prepare(
      "SELECT c.value_count, t.done FROM qp_columns AS c JOIN qp_tables AS t ON t.id = "
      "c.table_id WHERE t.source = ?1 AND t.name = ?2 AND c.name = ?3");
  if (!st.ok()) return {-1, false};
  st->Bind(1, source);
  st->Bind(2, table);
  st->Bind(3, column);
  if (Step(*st) != SQLITE_ROW) return {-1, false};
  return {st->ColumnInt(0), st->ColumnInt(1) != 0};
}

std::vector<std::pair<std::string, std::string>> ValueStore::KeyRange(
    const std::string& source, const std::string& table, const std::string& column,
    const std::string& lo, const std::string& hi, size_t limit) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  // The key range is read in the primary key's order; the column is one
  // id, so each row costs one comparison.
  auto st = Prepare(
      "SELECT v.key, v.value FROM qp_values AS v WHERE v.key >= ?1 AND v.key < ?2 AND v.column_id "
      "= "
      "(SELECT c.id FROM qp_columns AS c JOIN qp_tables AS t ON t.id = c.table_id WHERE t.source = "
      "?3 "
      "AND t.name = ?4 AND c.name = ?5) ORDER BY v.key LIMIT ?6");
  if (!st.ok()) return out;
  st->Bind(1, lo);
  st->Bind(2, hi);
  st->Bind(3, source);
  st->Bind(4, table);
  st->Bind(5, column);
  st->BindInt(6, static_cast<int64_t>(limit));
  while (Step(*st) == SQLITE_ROW) out.emplace_back(st->ColumnText(0), st->ColumnText(1));
  return out;
}

int64_t ValueStore::ValueCount(const std::string& source) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto st = Prepare(
      "SELECT coalesce(sum(c.value_count), 0) FROM qp_columns AS c "
      "JOIN qp_tables AS t ON t.id = c.table_id WHERE t.source = ?1");
  if (!st.ok()) return 0;
  st->Bind(1, source);
  return Step(*st) == SQLITE_ROW ? st->ColumnInt(0) : 0;
}

int64_t ValueStore::FileBytes() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto st = Prepare("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
  return st.ok() && Step(*st) == SQLITE_ROW ? st->ColumnInt(0) : 0;
}

void ValueStore::ForgetTable(const std::string& source, const std::string& table) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  (void)Exec("BEGIN IMMEDIATE");
  for (const char* sql : {"DELETE FROM qp_values WHERE column_id IN (SELECT c.id FROM qp_columns "
                          "AS c JOIN qp_tables AS t"
                          " ON t.id = c.table_id WHERE t.source = ?1 AND t.name = ?2)",
                          "DELETE FROM qp_columns WHERE table_id IN (SELECT id FROM qp_tables "
                          "WHERE source = ?1 AND name = ?2)",
                          "DELETE FROM qp_tables WHERE source = ?1 AND name = ?2"}) {
    auto st = Prepare(sql);
    if (!st.ok()) continue;
    st->Bind(1, source);
    st->Bind(2, table);
    Step(*st);
  }
  (void)Exec("COMMIT");
}

void ValueStore::Reopen(int64_t table_id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto st = Prepare("UPDATE qp_tables SET done = 0 WHERE id = ?1");
  if (!st.ok()) return;
  st->BindInt(1, table_id);
  Step(*st);
}

std::optional<std::vector<SourceTable>> ReadSourceTables(sqlite3* db, const std::string& database,
                                                         const std::set<std::string>* only) {
  std::vector<std::pair<int64_t, SourceTable>> sized;
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
    sized.push_back({0, std::move(t)});
  }
  if (rc != SQLITE_DONE) return std::nullopt;
  list = Statement();
  for (auto& [size, t] : sized) {
    auto cols = Statement::Prepare(
        db, "SELECT name, type FROM pragma_table_xinfo(?1, ?2) WHERE hidden = 0 ORDER BY cid");
    if (!cols.ok()) continue;
    cols->Bind(1, t.name);
    cols->Bind(2, database);
    while ((rc = cols->Step()) == SQLITE_ROW) {
      ColumnInfo c;
      c.name = cols->ColumnText(0);
      c.type = cols->ColumnText(1);
      if (c.HoldsText()) t.text_columns.push_back(c.name);
    }
    if (rc != SQLITE_DONE) return std::nullopt;
    if (t.rowid && !t.text_columns.empty()) {
      auto max =
          Statement::Prepare(db, fmt::format("SELECT max(rowid) FROM {}.{}",
                                             QuoteIdentifier(database), QuoteIdentifier(t.name)));
      if (max.ok() && max->Step() == SQLITE_ROW) size = max->ColumnInt(0);
    }
  }
  std::stable_sort(sized.begin(), sized.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SourceTable> out;
  for (auto& [size, t] : sized) {
    if (!t.text_columns.empty()) out.push_back(std::move(t));
  }
  return out;
}

// Reads one source table into the store: the scan's state between chunks.
class SourceScan {
 public:
  SourceScan(sqlite3* db, const std::string& database, ValueStore& store, const std::string& source,
             const ScanLimits& limits)
      : db_(db), database_(database), store_(store), source_(source), limits_(limits) {}

  bool Run() {
    if (!store_.broken().ok()) return false;  // nothing is read into it
    // With `only`, the other tables are not read, not even their columns.
    std::optional<std::vector<SourceTable>> listed = ReadSourceTables(db_, database_, limits_.only);
    if (!listed || limits_.expired()) return false;
    const std::vector<SourceTable>& tables = *listed;
    std::vector<TableProgress> known = store_.Tables(source_);
    // Tables gone, or whose CREATE statement changed, are forgotten.
    for (const TableProgress& p : known) {
      if (limits_.only && !limits_.only->count(p.table)) continue;
      auto it = std::find_if(tables.begin(), tables.end(),
                             [&](const SourceTable& t) { return t.name == p.table; });
      if (it == tables.end() || it->create_sql != p.create_sql)
        store_.ForgetTable(source_, p.table);
    }
    known = store_.Tables(source_);
    bool all_done = true;
    for (const SourceTable& t : tables) {
      auto it = std::find_if(known.begin(), known.end(),
                             [&](const TableProgress& p) { return p.table == t.name; });
      if (it != known.end() && (it->done || !it->error.empty())) continue;
      if (limits_.expired() || !store_.broken().ok()) return false;
      int64_t id = it != known.end() ? it->id : Register(t);
      if (id == 0) continue;
      if (!ReadTable(t, id)) all_done = false;
      if (limits_.expired() || !store_.broken().ok()) return false;
    }
    return all_done && store_.broken().ok();
  }

 private:
  int64_t Register(const SourceTable& t) {
    std::lock_guard<std::recursive_mutex> lock(store_.mu_);
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
    std::lock_guard<std::recursive_mutex> lock(store_.mu_);
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
    std::lock_guard<std::recursive_mutex> lock(store_.mu_);
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
    while (!limits_.expired()) {
      // Read afresh each time: another reader of the same store (the
      // background build, an ask catching up, another process) may have
      // read this chunk already.
      auto [next, done_already] = NextRowid(table_id);
      if (done_already) return true;  // another reader finished it
      const int64_t start = next;
      const auto chunk_started = std::chrono::steady_clock::now();
      const size_t chunk_rows = ChunkRows(cols.size());
      if (chunk_rows == 0) return false;
      st->Reset();
      st->BindInt(1, next);
      st->BindInt(2, static_cast<int64_t>(chunk_rows));
      std::vector<std::pair<size_t, std::string>> values;
      std::vector<int64_t> rowids;
      size_t rows = 0;
      int64_t last = next;
      int rc;
      while ((rc = st->Step()) == SQLITE_ROW) {
        ++rows;
        last = st->ColumnInt(0);
        rowids.push_back(last);
        for (size_t i = 0; i < cols.size(); ++i)
          Take(st.value(), static_cast<int>(i + 1), i, &values);
      }
      st->Reset();  // the source's lock is held no longer than one chunk
      if (rc != SQLITE_DONE) {
        Failed(table_id, sqlite3_errmsg(db_));
        return false;
      }
      const bool done = rows < chunk_rows;
      next = rows == 0 ? next : (last == std::numeric_limits<int64_t>::max() ? last : last + 1);
      switch (Store(table_id, column_ids, values, start, next, &rowids, done)) {
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
      Measured(chunk_started, rows * cols.size());
      if (done) return true;
    }
    return false;
  }

  bool ReadWholeTable(const SourceTable& t, int64_t table_id,
                      const std::vector<int64_t>& column_ids, const std::string& from) {
    std::vector<std::pair<size_t, std::string>> values;
    for (size_t i = 0; i < t.text_columns.size(); ++i) {
      const std::string col = QuoteIdentifier(t.text_columns[i]);
      auto st = Statement::Prepare(
          db_, fmt::format("SELECT DISTINCT {0} FROM {1} WHERE typeof({0}) = 'text'", col, from));
      if (!st.ok()) return Failed(table_id, st.status().message());
      int rc;
      while ((rc = st->Step()) == SQLITE_ROW) {
        Take(st.value(), 0, i, &values);
        if (limits_.expired()) return false;
      }
      if (rc != SQLITE_DONE) return false;
    }
    return Store(table_id, column_ids, values, kFirstRowid, kFirstRowid, nullptr, true) ==
           Stored::kOk;
  }

  // Rows of `columns` text columns for the next chunk: limits_.chunk_rows,
  // or fewer when a chunk must fit max_chunk_ms or end before the deadline,
  // judged by what a column-row has cost so far (the first chunk, costed at
  // nothing yet, is small).
  size_t ChunkRows(size_t columns) const {
    double ms = limits_.max_chunk_ms > 0 ? limits_.max_chunk_ms : -1;
    if (limits_.deadline) {
      const double left = std::chrono::duration<double, std::milli>(
                              *limits_.deadline - std::chrono::steady_clock::now())
                              .count();
      // A margin: what a chunk costs varies, and the deadline is a promise.
      ms = ms < 0 ? left * 0.5 : std::min(ms, left * 0.5);
    }
    if (ms < 0) return limits_.chunk_rows;
    constexpr size_t kFirstChunkRows = 256, kLeastChunkRows = 16;
    if (ms_per_cell_ <= 0) return std::min(limits_.chunk_rows, kFirstChunkRows);
    const double rows = ms / (ms_per_cell_ * static_cast<double>(std::max<size_t>(columns, 1)));
    if (rows >= static_cast<double>(limits_.chunk_rows)) return limits_.chunk_rows;
    // Not even the least chunk fits before the deadline: none is read.
    if (limits_.deadline && rows < kLeastChunkRows) return 0;
    return std::max(kLeastChunkRows, static_cast<size_t>(rows));
  }

  // Notes what a chunk of `cells` column-rows cost, read and stored.
  void Measured(std::chrono::steady_clock::time_point started, size_t cells) {
    if (cells == 0) return;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count() /
        static_cast<double>(cells);
    // The dearer of the last chunk and a decaying memory of the dearest:
    // chunks cost more as the store grows, and a slow one is no accident.
    ms_per_cell_ = std::max(ms, ms_per_cell_ * 0.75);
  }

  // Where the next chunk starts, and whether the table is done already.
  std::pair<int64_t, bool> NextRowid(int64_t table_id) {
    std::lock_guard<std::recursive_mutex> lock(store_.mu_);
    auto st = store_.Prepare("SELECT next_rowid, done FROM qp_tables WHERE id = ?1");
    if (!st.ok()) return {kFirstRowid, true};
    st->BindInt(1, table_id);
    if (store_.Step(*st) != SQLITE_ROW) return {kFirstRowid, true};  // forgotten meanwhile
    return {st->ColumnInt(0), st->ColumnInt(1) != 0};
  }

  // A short text value of column `i`, unless this scan has just seen it.
  void Take(Statement& st, int col, size_t i, std::vector<std::pair<size_t, std::string>>* values) {
    if (st.ColumnType(col) != SQLITE_TEXT) return;
    std::string v = st.ColumnText(col);
    if (v.empty() || v.size() > limits_.max_value_bytes) return;
    // Columns of few values repeat them on every row: those are skipped
    // here, not looked up in the store. The set is bounded per column.
    std::unordered_set<std::string>& seen = seen_[i];
    if (seen.count(v)) return;
    if (seen.size() >= 4096) seen.clear();
    seen.insert(v);
    values->push_back({i, std::move(v)});
  }

  enum class Stored { kOk, kRaced, kFailed };

  // Stores one chunk read from `start` up to `next` (the rows' `rowids`;
  // null for a WITHOUT ROWID table read whole). Another reader (the
  // background build, an ask, agent_index(), another process) may have
  // stored from `start` meanwhile: a chunk that reaches past where it
  // stopped is stored all the same, counting only its rows past that (values
  // stored twice are kept once); one that does not is dropped (kRaced).
  Stored Store(int64_t table_id, const std::vector<int64_t>& column_ids,
               const std::vector<std::pair<size_t, std::string>>& values, int64_t start,
               int64_t next, const std::vector<int64_t>* rowids, bool done) {
    std::lock_guard<std::recursive_mutex> lock(store_.mu_);
    sqlite3* s = store_.db_;
    if (!store_.Exec("BEGIN IMMEDIATE").ok()) return Stored::kFailed;
    int64_t rows = rowids ? static_cast<int64_t>(rowids->size()) : 0;
    {
      auto at = store_.Prepare("SELECT next_rowid, done FROM qp_tables WHERE id = ?1");
      bool raced = !at.ok() || (at->BindInt(1, table_id), store_.Step(*at)) != SQLITE_ROW ||
                   (at->ColumnInt(1) != 0 && start != kFirstRowid);
      if (!raced && at->ColumnInt(0) != start) {
        const int64_t stored_to = at->ColumnInt(0);
        raced = !rowids || stored_to < start || stored_to >= next;
        if (!raced) {
          rows = std::count_if(rowids->begin(), rowids->end(),
                               [stored_to](int64_t r) { return r >= stored_to; });
        }
      }
      if (raced) {
        at = Statement();
        (void)store_.Exec("ROLLBACK");
        return Stored::kRaced;
      }
    }
    auto ins = store_.Prepare(
        "INSERT OR IGNORE INTO qp_values(key, column_id, value) VALUES (?1, ?2, ?3)");
    auto count = store_.Prepare("SELECT value_count, codes FROM qp_columns WHERE id = ?1");
    auto upd = store_.Prepare("UPDATE qp_columns SET value_count = ?2, codes = ?3 WHERE id = ?1");
    auto prog = store_.Prepare(
        "UPDATE qp_tables SET next_rowid = ?2, rows_read = rows_read + ?3, done = ?4, error = NULL "
        "WHERE id = ?1");
    if (!ins.ok() || !count.ok() || !upd.ok() || !prog.ok()) {
      ins = Statement();
      count = Statement();
      upd = Statement();
      prog = Statement();
      (void)store_.Exec("ROLLBACK");
      return Stored::kFailed;
    }
    std::vector<std::vector<std::string>> added(column_ids.size());
    // In key order: each insert lands next to the last one in the store's
    // B-tree, on pages already in its cache.
    std::vector<std::tuple<std::string, size_t, const std::string*>> keyed;
    keyed.reserve(values.size());
    for (const auto& [i, v] : values) {
      std::string key = ValueIndex::Key(v);
      if (ValueIndex::Indexed(key)) keyed.emplace_back(std::move(key), i, &v);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [key, i, v] : keyed) {
      ins->Reset();
      ins->Bind(1, key);
      ins->BindInt(2, column_ids[i]);
      ins->Bind(3, *v);
      if (store_.Step(*ins) == SQLITE_DONE && sqlite3_changes(s) > 0) added[i].push_back(*v);
    }
    for (size_t i = 0; i < column_ids.size(); ++i) {
      if (added[i].empty()) continue;
      count->Reset();
      count->BindInt(1, column_ids[i]);
      if (store_.Step(*count) != SQLITE_ROW) continue;
      const int64_t n = count->ColumnInt(0) + static_cast<int64_t>(added[i].size());
      std::string codes;
      if (n <= kMaxCodes) {
        std::vector<std::string> all = SplitCodes(count->ColumnText(1));
        all.insert(all.end(), added[i].begin(), added[i].end());
        codes = fmt::format("{}", fmt::join(all, std::string(1, kCodeSeparator)));
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
    count = Statement();
    upd = Statement();
    prog = Statement();
    if (store_.Exec("COMMIT").ok()) return Stored::kOk;
    (void)store_.Exec("ROLLBACK");
    return Stored::kFailed;
  }

  sqlite3* db_;
  const std::string& database_;
  ValueStore& store_;
  const std::string& source_;
  const ScanLimits& limits_;
  std::vector<std::unordered_set<std::string>> seen_;
  double ms_per_cell_ = 0;  // what reading and storing one column of one row cost so far
};

bool ScanSource(sqlite3* db, const std::string& database, ValueStore& store,
                const std::string& source, const ScanLimits& limits) {
  return SourceScan(db, database, store, source, limits).Run();
}

std::set<std::string> CatchUp(sqlite3* db, const std::string& database, ValueStore& store,
                              const std::string& source, int64_t count_rows_up_to,
                              std::optional<std::chrono::steady_clock::time_point> deadline,
                              bool* finished) {
  std::set<std::string> changed;
  if (finished) *finished = true;
  for (const TableProgress& p : store.Tables(source)) {
    if (!p.done || !p.error.empty()) continue;
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
      if (finished) *finished = false;
      break;
    }
    const std::string from = QuoteIdentifier(database) + "." + QuoteIdentifier(p.table);
    if (!p.rowid) {
      store.ForgetTable(source, p.table);
      changed.insert(p.table);
      continue;
    }
    auto max = Statement::Prepare(db, fmt::format("SELECT max(rowid) FROM {}", from));
    if (!max.ok() || max->Step() != SQLITE_ROW) continue;  // gone: the next scan forgets it
    const bool grew = !max->ColumnIsNull(0) && max->ColumnInt(0) >= p.next_rowid;
    bool shrank = false;
    if (count_rows_up_to > 0 && p.rows_read <= count_rows_up_to) {
      auto count = Statement::Prepare(db, fmt::format("SELECT count(*) FROM {}", from));
      if (count.ok() && count->Step() == SQLITE_ROW) shrank = count->ColumnInt(0) < p.rows_read;
    }
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
