// ValueStore: the value index's own SQLite database (value_store.h).
#include "agent/knowledge/value_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/own_file.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

const char* const kStoreSchema[] = {
    "CREATE TABLE IF NOT EXISTS qp_tables("
    " id INTEGER PRIMARY KEY, source TEXT NOT NULL, name TEXT NOT NULL, create_sql TEXT NOT NULL,"
    " next_rowid INTEGER NOT NULL, rows_read INTEGER NOT NULL DEFAULT 0,"
    " done INTEGER NOT NULL DEFAULT 0, has_rowid INTEGER NOT NULL, error TEXT,"
    " UNIQUE(source, name))",
    "CREATE TABLE IF NOT EXISTS qp_columns("
    " id INTEGER PRIMARY KEY, table_id INTEGER NOT NULL, name TEXT NOT NULL,"
    " value_count INTEGER NOT NULL DEFAULT 0, codes TEXT NOT NULL DEFAULT '',"
    " hashed INTEGER NOT NULL DEFAULT 0, UNIQUE(table_id, name))",
    // `row`: the rowid of a source row holding the value (NULL for a
    // WITHOUT ROWID table), for when its column becomes hashed.
    "CREATE TABLE IF NOT EXISTS qp_values("
    " key TEXT NOT NULL, column_id INTEGER NOT NULL, value TEXT NOT NULL, row INTEGER,"
    " PRIMARY KEY(key, column_id, value)) WITHOUT ROWID",
    // A hashed column's buckets: id = column_id << kBucketBits | bucket.
    "CREATE TABLE IF NOT EXISTS qp_buckets(id INTEGER PRIMARY KEY, data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS qp_pending("
    " column_id INTEGER NOT NULL, bucket INTEGER NOT NULL, row INTEGER NOT NULL,"
    " tag INTEGER NOT NULL, PRIMARY KEY(column_id, bucket, row)) WITHOUT ROWID",
    // The hashed columns only: every key an ask looks up probes them, and
    // finding them must cost what they number, not what the index's columns
    // do (thousands on a file of many tables, nearly all held by value).
    "CREATE INDEX IF NOT EXISTS qp_columns_hashed ON qp_columns(value_count, id) WHERE hashed",
    // Per source file: the stamp (SourceStamp, source_file.h) at which
    // every table held done was found unchanged, and whether every table
    // was read then. A connection that finds the file at the same stamp
    // need not check its tables again.
    ("CREATE TABLE IF NOT EXISTS qp_stamps("
     " source TEXT PRIMARY KEY, stamp TEXT NOT NULL, complete INTEGER NOT NULL) WITHOUT ROWID"),
};

constexpr const char* kStoreTables[] = {"qp_tables",  "qp_columns", "qp_values",
                                        "qp_buckets", "qp_pending", "qp_stamps"};

uint64_t Mix(uint64_t h) {  // splitmix64's finalizer
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Walks a bucket's entries: f(tag, row) for each; false at a malformed end.
template <typename F>
bool Walk(std::string_view blob, F&& f) {
  size_t pos = 0;
  int64_t row = 0;
  while (pos < blob.size()) {
    if (pos + 2 > blob.size()) return false;
    const uint16_t tag = static_cast<uint16_t>(static_cast<unsigned char>(blob[pos]) |
                                               (static_cast<unsigned char>(blob[pos + 1]) << 8));
    pos += 2;
    uint64_t v = 0;
    int shift = 0;
    while (true) {
      if (pos >= blob.size() || shift > 63) return false;
      const unsigned char b = static_cast<unsigned char>(blob[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    row = static_cast<int64_t>(static_cast<uint64_t>(row) + static_cast<uint64_t>(UnZigZag(v)));
    if (!f(tag, row)) return true;
  }
  return true;
}

}  // namespace

std::vector<std::string> StoredCodes::Split(const std::string& codes) {
  std::vector<std::string> out;
  if (codes.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t end = codes.find(kSeparator, start);
    out.push_back(codes.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

bool HashedValues::Overflows(int64_t values, int64_t rows_read) {
  if (values > kFullValues) return true;
  // Most rows hold a value of their own (names, e-mails): hashed early,
  // before their values are stored only to be dropped.
  return values > kNearUniqueValues && values * 2 > rows_read;
}

HashedValues::Hash HashedValues::Of(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then mixed
  for (unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h = Mix(h);
  return {static_cast<int>(h >> (64 - kBucketBits)),
          static_cast<uint16_t>((h >> (48 - kBucketBits)) & 0xffff)};
}

void HashedValues::Append(std::string* blob, int64_t* last, uint16_t tag, int64_t row) {
  blob->push_back(static_cast<char>(tag & 0xff));
  blob->push_back(static_cast<char>(tag >> 8));
  uint64_t v =
      ZigZag(static_cast<int64_t>(static_cast<uint64_t>(row) - static_cast<uint64_t>(*last)));
  while (v >= 0x80) {
    blob->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  blob->push_back(static_cast<char>(v));
  *last = row;
}

int64_t HashedValues::LastRow(std::string_view blob) {
  int64_t last = 0;
  Walk(blob, [&](uint16_t, int64_t row) {
    last = row;
    return true;
  });
  return last;
}

std::vector<int64_t> HashedValues::Rows(std::string_view blob, uint16_t tag, size_t max) {
  std::vector<int64_t> out;
  if (max == 0) return out;
  Walk(blob, [&](uint16_t t, int64_t row) {
    if (t == tag) out.push_back(row);
    return out.size() < max;
  });
  return out;
}

std::string StoredCodes::Join(const std::vector<std::string>& codes) {
  return fmt::format("{}", fmt::join(codes, std::string(1, kSeparator)));
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
  int rc = OpenOwnConnection(path.c_str(), &db, flags);
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
  MutexLock lock(&store->mu_);
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
      if (std::find(std::begin(kStoreTables), std::end(kStoreTables), t) ==
          std::end(kStoreTables)) {
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
         "SELECT id, table_id, name, value_count, codes, hashed, (SELECT count(*) FROM "
         "qp_columns) FROM qp_columns LIMIT 1"},
        {"qp_values", "SELECT key, column_id, value, row FROM qp_values LIMIT 1"},
        {"qp_buckets", "SELECT id, data FROM qp_buckets LIMIT 1"},
        {"qp_pending", "SELECT column_id, bucket, row, tag FROM qp_pending LIMIT 1"},
        {"qp_stamps", "SELECT source, stamp, complete FROM qp_stamps"},
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
  {
    auto staged = store->Prepare("SELECT count(*) FROM qp_pending");
    if (staged.ok() && store->Step(*staged) == SQLITE_ROW) store->pending_ = staged->ColumnInt(0);
  }
  return store;
}

ValueStore::~ValueStore() {
  find_ = Statement();  // finalized before its connection closes
  hashed_columns_ = Statement();
  data_version_ = Statement();
  bucket_ = Statement();
  staged_ = Statement();
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
  MutexLock lock(&mu_);
  if (verified_ || !broken_.ok()) return broken_;
  verified_ = true;
  auto st = Prepare("PRAGMA quick_check(1)");
  if (st.ok() && Step(*st) == SQLITE_ROW && st->ColumnText(0) != "ok") {
    MarkBroken(ErrorKind::kDatabaseCorrupt, st->ColumnText(0));
  }
  return broken_;
}

Status ValueStore::broken() {
  MutexLock lock(&mu_);
  return broken_;
}

std::vector<TableProgress> ValueStore::Tables(const std::string& source) {
  MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
  return FindHeld(source, key, limit);
}

std::vector<StoredValue> ValueStore::Find(const Held& held, const std::string& source,
                                          const std::string& key, size_t limit) {
  if (held.store_ != this) return {};  // another store's hold: this one is not held
  mu_.AssertHeld();
  return FindHeld(source, key, limit);
}

std::vector<StoredValue> ValueStore::FindHeld(const std::string& source, const std::string& key,
                                              size_t limit) {
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
    out.push_back({find_.ColumnText(0), find_.ColumnText(1), find_.ColumnText(2), {}});
  find_.Reset();  // holds no read transaction on the store between asks
  if (out.size() < limit) FindHashed(source, key, limit, &out);
  return out;
}

bool ValueStore::PrepareHashed() {
  if (!hashed_columns_) {
    auto st = Prepare(
        // From the hashed columns (qp_columns_hashed, in its order) to their
        // tables: CROSS JOIN keeps that order, rather than every table of
        // the source first and its columns after.
        "SELECT c.id, t.name, c.name FROM qp_columns AS c INDEXED BY qp_columns_hashed"
        " CROSS JOIN qp_tables AS t ON t.id = c.table_id"
        " WHERE c.hashed AND t.source = ?1 ORDER BY c.value_count, c.id");
    auto bucket = Prepare("SELECT data FROM qp_buckets WHERE id = ?1");
    auto staged = Prepare(
        "SELECT row FROM qp_pending WHERE column_id = ?1 AND bucket = ?2 AND tag = ?3 LIMIT ?4");
    if (!st.ok() || !bucket.ok() || !staged.ok()) return false;
    hashed_columns_ = std::move(st).value();
    bucket_ = std::move(bucket).value();
    staged_ = std::move(staged).value();
  }
  return true;
}

void ValueStore::FindHashed(const std::string& source, const std::string& key, size_t limit,
                            std::vector<StoredValue>* out) {
  if (!PrepareHashed()) return;
  std::vector<std::tuple<int64_t, std::string, std::string>> columns;
  hashed_columns_.Bind(1, source);
  while (Step(hashed_columns_) == SQLITE_ROW) {
    columns.emplace_back(hashed_columns_.ColumnInt(0), hashed_columns_.ColumnText(1),
                         hashed_columns_.ColumnText(2));
  }
  hashed_columns_.Reset();
  for (auto& [id, table, column] : columns) {
    if (out->size() >= limit) break;
    std::vector<int64_t> rows = RowsOf(id, key, HashedValues::kMaxRows);
    if (!rows.empty()) out->push_back({table, column, "", std::move(rows)});
  }
}

std::vector<int64_t> ValueStore::RowsOf(int64_t id, const std::string& key, size_t max) {
  const HashedValues::Hash hash = HashedValues::Of(key);
  std::vector<int64_t> rows;
  bucket_.BindInt(1, (id << HashedValues::kBucketBits) | hash.bucket);
  if (Step(bucket_) == SQLITE_ROW) rows = HashedValues::Rows(bucket_.ColumnText(0), hash.tag, max);
  bucket_.Reset();
  // Staged entries are read while the process knows of any (another
  // process's are seen once this one stores or opens anew).
  if (rows.size() < max && pending_.load() > 0) {
    staged_.BindInt(1, id);
    staged_.BindInt(2, hash.bucket);
    staged_.BindInt(3, hash.tag);
    staged_.BindInt(4, static_cast<int64_t>(max - rows.size()));
    while (Step(staged_) == SQLITE_ROW) rows.push_back(staged_.ColumnInt(0));
    staged_.Reset();
  }
  return rows;
}

std::vector<std::vector<int64_t>> ValueStore::HashedRows(const std::string& source,
                                                         const std::string& table,
                                                         const std::string& column,
                                                         const std::vector<std::string>& keys,
                                                         size_t max) {
  MutexLock lock(&mu_);
  std::vector<std::vector<int64_t>> out;
  auto st = Prepare(
      "SELECT c.id FROM qp_columns AS c JOIN qp_tables AS t ON t.id = c.table_id"
      " WHERE t.source = ?1 AND t.name = ?2 AND c.name = ?3 AND c.hashed");
  if (!st.ok()) return out;
  st->Bind(1, source);
  st->Bind(2, table);
  st->Bind(3, column);
  if (Step(*st) != SQLITE_ROW) return out;
  const int64_t id = st->ColumnInt(0);
  st = Statement();
  if (!PrepareHashed()) return out;
  for (const std::string& key : keys) out.push_back(RowsOf(id, key, max));
  return out;
}

void ValueStore::Fold(bool compact) {
  int64_t moved = 0;
  while (true) {
    MutexLock lock(&mu_);
    if (!broken_.ok()) return;
    const int64_t n = FoldStep(1 << 16);
    if (n <= 0) break;
    moved += n;
  }
  MutexLock lock(&mu_);
  moved += merged_;
  if (!compact || moved == 0) return;
  merged_ = 0;
  // Rewritten when many entries moved (buckets grown in place) or a quarter
  // of its pages are free: not for the few rows an ask caught up on.
  int64_t pages = 0, free_pages = 0;
  if (auto st = Prepare("SELECT page_count, freelist_count FROM pragma_page_count, "
                        "pragma_freelist_count");
      st.ok() && Step(*st) == SQLITE_ROW) {
    pages = st->ColumnInt(0);
    free_pages = st->ColumnInt(1);
  }
  if (moved < (1 << 16) && free_pages * 4 < pages) return;
  // Buckets rewritten in place leave pages half full, and the staging
  // table's pages free: a rewrite leaves the file at its smallest. Busy (a
  // reader in another process) is no failure: the file stays as it is.
  (void)sqlite3_exec(db_, "VACUUM", nullptr, nullptr, nullptr);
}

int64_t ValueStore::FoldStep(int64_t max) {
  if (!Exec("BEGIN IMMEDIATE").ok()) return -1;
  auto sel = Prepare(
      "SELECT column_id, bucket, row, tag FROM qp_pending ORDER BY column_id, bucket, row "
      "LIMIT ?1");
  auto get = Prepare("SELECT data FROM qp_buckets WHERE id = ?1");
  auto put = Prepare("INSERT OR REPLACE INTO qp_buckets(id, data) VALUES (?1, ?2)");
  auto del = Prepare("DELETE FROM qp_pending WHERE column_id = ?1 AND bucket = ?2 AND row <= ?3");
  if (!sel.ok() || !get.ok() || !put.ok() || !del.ok()) {
    sel = Statement();
    (void)Exec("ROLLBACK");
    return -1;
  }
  struct Entry {
    int64_t column, bucket, row;
    uint16_t tag;
  };
  std::vector<Entry> entries;
  sel->BindInt(1, max);
  while (Step(*sel) == SQLITE_ROW) {
    entries.push_back({sel->ColumnInt(0), sel->ColumnInt(1), sel->ColumnInt(2),
                       static_cast<uint16_t>(sel->ColumnInt(3))});
  }
  sel = Statement();
  size_t i = 0;
  while (i < entries.size()) {
    size_t j = i;
    while (j < entries.size() && entries[j].column == entries[i].column &&
           entries[j].bucket == entries[i].bucket) {
      ++j;
    }
    const int64_t id = (entries[i].column << HashedValues::kBucketBits) | entries[i].bucket;
    get->Reset();
    get->BindInt(1, id);
    std::string blob = Step(*get) == SQLITE_ROW ? get->ColumnText(0) : std::string();
    get->Reset();
    int64_t last = HashedValues::LastRow(blob);
    for (size_t k = i; k < j; ++k)
      HashedValues::Append(&blob, &last, entries[k].tag, entries[k].row);
    put->Reset();
    put->BindInt(1, id);
    sqlite3_bind_blob(put->get(), 2, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    Step(*put);
    del->Reset();
    del->BindInt(1, entries[i].column);
    del->BindInt(2, entries[i].bucket);
    del->BindInt(3, entries[j - 1].row);
    Step(*del);
    i = j;
  }
  get = Statement();
  put = Statement();
  del = Statement();
  if (!Exec("COMMIT").ok()) {
    (void)Exec("ROLLBACK");
    return -1;
  }
  pending_ = std::max<int64_t>(0, pending_.load() - static_cast<int64_t>(entries.size()));
  return static_cast<int64_t>(entries.size());
}

void ValueStore::MergeHashed(std::vector<HashedValues::Entry>* entries,
                             const std::vector<int64_t>& column_ids) {
  if (entries->empty()) return;
  // A stable counting sort by (column, bucket): rows stay in the order read
  // within each bucket, as Append() wants them, in one pass and no compare.
  constexpr size_t kBuckets = size_t{1} << HashedValues::kBucketBits;
  std::vector<uint32_t> starts(column_ids.size() * kBuckets + 1, 0);
  for (const HashedValues::Entry& e : *entries) ++starts[e.column * kBuckets + e.bucket + 1];
  for (size_t k = 1; k < starts.size(); ++k) starts[k] += starts[k - 1];
  std::vector<HashedValues::Entry> sorted(entries->size());
  for (const HashedValues::Entry& e : *entries)
    sorted[starts[e.column * kBuckets + e.bucket]++] = e;
  entries->swap(sorted);
  auto get = Prepare("SELECT data FROM qp_buckets WHERE id = ?1");
  auto put = Prepare("INSERT OR REPLACE INTO qp_buckets(id, data) VALUES (?1, ?2)");
  if (!get.ok() || !put.ok()) return;  // noted: the caller's commit fails
  const std::vector<HashedValues::Entry>& all = *entries;
  std::string blob;
  size_t i = 0;
  while (i < all.size() && broken_.ok()) {
    size_t j = i;
    while (j < all.size() && all[j].column == all[i].column && all[j].bucket == all[i].bucket) ++j;
    const int64_t id = (column_ids[all[i].column] << HashedValues::kBucketBits) | all[i].bucket;
    get->Reset();
    get->BindInt(1, id);
    blob.clear();
    if (Step(*get) == SQLITE_ROW) blob.assign(get->ColumnView(0));
    get->Reset();
    int64_t last = HashedValues::LastRow(blob);
    for (size_t k = i; k < j; ++k) HashedValues::Append(&blob, &last, all[k].tag, all[k].row);
    put->Reset();
    put->BindInt(1, id);
    sqlite3_bind_blob(put->get(), 2, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    Step(*put);
    i = j;
  }
  merged_ += static_cast<int64_t>(all.size());
}

std::optional<std::pair<int64_t, int64_t>> ValueStore::Version() {
  if (!data_version_) {
    auto st = Prepare("PRAGMA data_version");
    if (!st.ok()) return std::nullopt;
    data_version_ = std::move(st).value();
  }
  std::optional<std::pair<int64_t, int64_t>> version;
  if (Step(data_version_) == SQLITE_ROW)
    version = {data_version_.ColumnInt(0), sqlite3_total_changes64(db_)};
  data_version_.Reset();
  return version;
}

std::vector<CodedColumn> ValueStore::CodedColumns(const std::string& source, size_t max_codes,
                                                  size_t max_code_bytes) {
  MutexLock lock(&mu_);
  // Every ask asks again; the answer reads every column of the source, and
  // changes only when the store does.
  const std::optional<std::pair<int64_t, int64_t>> version = Version();
  const std::tuple<std::string, size_t, size_t> asked{source, max_codes, max_code_bytes};
  if (version && broken_.ok()) {
    auto it = coded_.find(asked);
    if (it != coded_.end() && it->second.first == *version) return it->second.second;
  }
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
    std::vector<std::string> codes = StoredCodes::Split(st->ColumnText(2));
    if (codes.empty() || std::any_of(codes.begin(), codes.end(), [&](const std::string& c) {
          return c.size() > max_code_bytes;
        })) {
      continue;
    }
    std::sort(codes.begin(), codes.end());
    out.push_back({st->ColumnText(0), st->ColumnText(1), std::move(codes)});
  }
  st->Reset();  // before the version is read again: no read transaction left open
  if (version && broken_.ok() && Version() == version) coded_[asked] = {*version, out};
  return out;
}

std::pair<int64_t, bool> ValueStore::ColumnState(const std::string& source,
                                                 const std::string& table,
                                                 const std::string& column) {
  MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
  auto st = Prepare(
      "SELECT coalesce(sum(c.value_count), 0) FROM qp_columns AS c "
      "JOIN qp_tables AS t ON t.id = c.table_id WHERE t.source = ?1");
  if (!st.ok()) return 0;
  st->Bind(1, source);
  return Step(*st) == SQLITE_ROW ? st->ColumnInt(0) : 0;
}

int64_t ValueStore::FileBytes() {
  MutexLock lock(&mu_);
  auto st = Prepare("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
  return st.ok() && Step(*st) == SQLITE_ROW ? st->ColumnInt(0) : 0;
}

void ValueStore::ForgetTable(const std::string& source, const std::string& table) {
  MutexLock lock(&mu_);
  (void)Exec("BEGIN IMMEDIATE");
  for (const char* sql : {"DELETE FROM qp_values WHERE column_id IN (SELECT c.id FROM qp_columns "
                          "AS c JOIN qp_tables AS t"
                          " ON t.id = c.table_id WHERE t.source = ?1 AND t.name = ?2)",
                          "DELETE FROM qp_pending WHERE column_id IN (SELECT c.id FROM qp_columns "
                          "AS c JOIN qp_tables AS t"
                          " ON t.id = c.table_id WHERE t.source = ?1 AND t.name = ?2)",
                          "DELETE FROM qp_buckets WHERE id >> 14 IN (SELECT c.id FROM qp_columns "
                          "AS c JOIN qp_tables AS t"
                          " ON t.id = c.table_id WHERE t.source = ?1 AND t.name = ?2 AND c.hashed)",
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
  MutexLock lock(&mu_);
  auto st = Prepare("UPDATE qp_tables SET done = 0 WHERE id = ?1");
  if (!st.ok()) return;
  st->BindInt(1, table_id);
  Step(*st);
}

}  // namespace querypilot
