#include "agent/knowledge/value_index.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/source_file.h"
#include "agent/knowledge/value_builder.h"
#include "agent/knowledge/value_scan.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/lookup.h"
#include "agent/sql/own_file.h"
#include "agent/sql/read_connection.h"
#include "agent/sql/statement.h"

namespace querypilot {

namespace {

// Reads one value of a hashed column by its row, on the lookup's reader:
// each (database, table, column)'s statement prepared once; nothing when
// the column cannot be read (the host's rules) or the row holds no text.
class RowReader {
 public:
  explicit RowReader(sqlite3* reader) : reader_(reader) {}
  std::optional<std::string> Read(const std::string& database, const std::string& table,
                                  const std::string& column, int64_t row) {
    if (!reader_) return std::nullopt;
    auto [it, fresh] = reads_.try_emplace({database, table, column});
    if (fresh) {
      auto st = Statement::Prepare(
          reader_, fmt::format("SELECT {} FROM {}.{} WHERE rowid = ?1", QuoteIdentifier(column),
                               QuoteIdentifier(database), QuoteIdentifier(table)));
      if (st.ok()) it->second = std::move(st).value();
    }
    Statement& st = it->second;
    if (!st) return std::nullopt;
    st.Reset();
    st.BindInt(1, row);
    const bool found = st.Step() == SQLITE_ROW && st.ColumnType(0) == SQLITE_TEXT;
    std::optional<std::string> value;
    if (found) value = st.ColumnText(0);
    st.Reset();  // no read transaction is kept open
    return value;
  }

 private:
  sqlite3* reader_;
  std::map<std::tuple<std::string, std::string, std::string>, Statement> reads_;
};

// Probes at most this many keys one edit away from a literal.
constexpr size_t kMaxEditVariants = 4096;

}  // namespace

std::vector<ValueHint> ValueLookup::Lookup(std::string_view question, size_t max_hints,
                                           const HintRelevance& relevance) const {
  // Every store held for all the keys: a background build stores no chunk
  // between two of them, so the lookup waits at most for the chunk being
  // stored as it starts. Held in one order (by address), as every lookup
  // does, and a scan holds one store only.
  std::vector<ValueStore*> stores;
  for (const Part& p : parts_) stores.push_back(p.store.get());
  std::sort(stores.begin(), stores.end());
  stores.erase(std::unique(stores.begin(), stores.end()), stores.end());
  std::map<const ValueStore*, std::unique_ptr<ValueStore::Held>> held;
  for (ValueStore* store : stores) held[store] = std::make_unique<ValueStore::Held>(store);
  // A hashed column's candidates, read on the reader: a value is hinted only
  // if its key is the phrase's.
  RowReader rows(reader_);
  auto verified = [&](const Part& p, const StoredValue& v,
                      const std::string& key) -> std::optional<std::string> {
    for (int64_t row : v.rows) {
      std::optional<std::string> value = rows.Read(p.database, v.table, v.column, row);
      if (value && ValueIndex::Key(*value) == key) return value;
    }
    return std::nullopt;
  };
  return LookupValues(
      question,
      [this, &held, &verified](const std::string& key) {
        std::vector<ValueHint> out;
        for (const Part& p : parts_) {
          const ValueStore::Held& hold = *held.at(p.store.get());
          for (StoredValue& v : p.store->Find(hold, p.source, key, kColumnsPerKey)) {
            if (!v.rows.empty()) {
              std::optional<std::string> value = verified(p, v, key);
              if (!value) continue;
              v.value = std::move(*value);
            }
            out.push_back({std::move(v.table), std::move(v.column), std::move(v.value),
                           p.qualified ? p.database : ""});
          }
        }
        return out;
      },
      max_hints, relevance);
}

std::optional<std::vector<std::string>> ValueLookup::NearValues(
    const std::string& database, const std::string& table, const std::string& column,
    const std::string& literal, size_t max_edits, size_t max, int64_t more_than,
    size_t scan) const {
  const std::string key = ValueIndex::Key(literal);
  if (key.empty()) return std::nullopt;
  for (const Part& p : parts_) {
    if (p.database != database) continue;
    auto [count, done] = p.store->ColumnState(p.source, table, column);
    if (!done || count <= more_than) return std::nullopt;
    // A hashed column: the literal's key and those one edit away are
    // probed, and what they find read and checked.
    std::vector<std::string> variants = EditVariants(key, kMaxEditVariants);
    variants.insert(variants.begin(), key);
    const std::vector<std::vector<int64_t>> found =
        p.store->HashedRows(p.source, table, column, variants, HashedValues::kMaxRows);
    if (!found.empty()) {
      if (!reader_) return std::nullopt;
      RowReader rows(reader_);
      std::vector<std::string> out;
      for (size_t i = 0; i < found.size() && out.size() < max; ++i) {
        for (int64_t row : found[i]) {
          std::optional<std::string> v = rows.Read(p.database, table, column, row);
          if (!v || ValueIndex::Key(*v) != variants[i]) continue;
          if (std::find(out.begin(), out.end(), *v) == out.end()) out.push_back(std::move(*v));
          break;
        }
      }
      return out;
    }
    // A typo seldom changes the first letter: the values sharing it are
    // one range of the store's key order.
    const std::string lo = key.substr(0, 1);
    std::string hi = lo;
    hi.back() = static_cast<char>(static_cast<unsigned char>(hi.back()) + 1);
    if (static_cast<unsigned char>(lo.back()) == 0xff) hi = "\xff\xff";
    std::vector<std::pair<size_t, std::string>> scored;
    for (auto& [k, v] : p.store->KeyRange(p.source, table, column, lo, hi, scan)) {
      if (k.size() + max_edits < key.size() || k.size() > key.size() + max_edits) continue;
      const size_t d = text::EditDistance(k, key);
      if (d <= max_edits) scored.emplace_back(d, std::move(v));
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (auto& [d, v] : scored) {
      if (out.size() == max) break;
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
    }
    return out;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, CodedColumn>> ValueLookup::CodedColumns() const {
  std::vector<std::pair<std::string, CodedColumn>> out;
  for (const Part& p : parts_) {
    for (CodedColumn& c : p.store->CodedColumns(p.source, 3, 1))
      out.emplace_back(p.database, std::move(c));
  }
  return out;
}

std::vector<Description> CodeNotes(const std::vector<std::pair<std::string, CodedColumn>>& codes) {
  std::vector<Description> notes;
  for (const auto& [database, coded] : codes) {
    std::vector<std::string> quoted;
    for (const std::string& v : coded.codes) quoted.push_back(text::QuoteSqlString(v));
    if (quoted.empty()) continue;
    std::string holds =
        quoted.size() == 1
            ? quoted[0]
            : fmt::format("{} or {}", fmt::join(quoted.begin(), quoted.end() - 1, ", "),
                          quoted.back());
    notes.push_back({database, coded.table, coded.column, "holds " + holds});
  }
  return notes;
}

std::string DefaultValueIndexCacheDir() {
  return CacheFolder("values");
}

namespace {

// Names ValueIndexCacheFile gives: <name>-<16 hex digits>.qpindex.
bool KeptIndexName(const std::filesystem::path& p) {
  const std::string stem = p.stem().string();
  if (p.extension() != ".qpindex" || stem.size() < 17 || stem[stem.size() - 17] != '-')
    return false;
  return std::all_of(stem.end() - 16, stem.end(), [](unsigned char c) { return std::isxdigit(c); });
}

// An index file and its SQLite companions: their bytes, and their removal.
int64_t KeptIndexBytes(const std::string& index) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int64_t bytes = 0;
  for (const char* side : {"", "-journal", "-wal", "-shm"}) {
    const fs::path p(index + side);
    if (!fs::is_regular_file(fs::symlink_status(p, ec))) continue;
    const auto n = fs::file_size(p, ec);
    if (!ec) bytes += static_cast<int64_t>(n);
  }
  return bytes;
}

bool RemoveKeptIndex(const std::string& index) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::remove(index, ec) || ec) return false;
  for (const char* side : {"-journal", "-wal", "-shm"}) fs::remove(index + side, ec);
  return true;
}

}  // namespace

size_t BoundValueIndexCache(const std::string& dir, int64_t max_bytes, const std::string& keep) {
  namespace fs = std::filesystem;
  if (max_bytes <= 0) return 0;
  Result<std::string> folder = OwnFolder(dir, false);
  if (!folder.ok()) return 0;
  std::error_code ec;
  struct Kept {
    fs::file_time_type used;
    std::string path;
    int64_t bytes;
  };
  std::vector<Kept> kept;
  int64_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(*folder, ec)) {
    if (!KeptIndexName(e.path()) || !fs::is_regular_file(e.symlink_status(ec))) continue;
    const auto used = e.last_write_time(ec);
    if (ec) continue;
    const int64_t bytes = KeptIndexBytes(e.path().string());
    total += bytes;
    kept.push_back({used, e.path().string(), bytes});
  }
  // Least recently used first (a file's time is set each time it is used).
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) { return a.used < b.used; });
  size_t removed = 0;
  for (const Kept& k : kept) {
    if (total <= max_bytes) break;
    if (k.path == keep) continue;
    if (!RemoveKeptIndex(k.path)) continue;
    total -= k.bytes;
    ++removed;
  }
  return removed;
}

size_t PruneValueIndexCache(const std::string& dir, int max_age_days) {
  namespace fs = std::filesystem;
  // Only in a folder QueryPilot made: one that is a link, or another's, may
  // hold files of the user's under names like these.
  Result<std::string> folder = OwnFolder(dir, false);
  if (!folder.ok()) return 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  const auto max_age = std::chrono::hours(24) * max_age_days;
  size_t removed = 0;
  std::vector<fs::path> stale;
  auto ours = [](const fs::path& p) { return KeptIndexName(p); };
  for (const fs::directory_entry& e : fs::directory_iterator(*folder, ec)) {
    // A plain file: never judged by what a link names.
    if (!ours(e.path()) || !fs::is_regular_file(e.symlink_status(ec))) continue;
    const auto written = e.last_write_time(ec);
    if (ec || now - written < max_age) continue;
    stale.push_back(e.path());
  }
  for (const fs::path& index : stale) removed += RemoveKeptIndex(index.string()) ? 1 : 0;
  return removed;
}

std::string ValueIndexCacheFile(const std::string& dir, const std::string& file, sqlite3* host,
                                std::string* why, int64_t max_bytes) {
  auto refuse = [why](std::string reason) {
    if (why) *why = std::move(reason);
    return std::string();
  };
  if (dir.empty()) return refuse("no cache folder ($XDG_CACHE_HOME or $HOME)");
  Result<std::string> key = DatabaseFileKey(file);
  if (!key.ok()) return refuse(key.status().message());
  // The folder, private to the user, made by QueryPilot (OwnFolder): never
  // a link, nor a folder of another's making.
  Result<std::string> folder = OwnFolder(dir, true);
  if (!folder.ok()) return refuse(folder.status().message());
  const std::string path = fmt::format("{}/{}.qpindex", *folder, *key);
  if (Status st = CheckOwnFile(host, path, "the value index cache"); !st.ok())
    return refuse(st.message());
  // Used now: it is not stale. (The name's own time: never a linked file's.)
  // Then, once per process, the stale ones go: process-wide because the
  // folder is every connection's, and pruning it once is enough.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  static std::once_flag pruned;
  std::call_once(pruned, [&] { PruneValueIndexCache(*folder, kValueIndexCacheDays); });
  if (max_bytes > 0) {
    // Over the bound: the indexes used least recently go first; this one
    // last, and when it alone is over the bound it is removed and not kept.
    BoundValueIndexCache(*folder, max_bytes, path);
    if (KeptIndexBytes(path) > max_bytes) {
      RemoveKeptIndex(path);
      return refuse(
          fmt::format("its index alone would pass cache_max_mb ({} MB)", max_bytes >> 20));
    }
  }
  return path;
}

// What an ask keeps of its slice (or its wait) for the lookup after it: a
// background chunk being stored (ScanLimits::max_chunk_ms) and the seeks.
constexpr double kLookupReserveMs = 5;
// Rows of a table read during asks that a change is counted against (to see
// deletions): a count(*) reads the whole table, so bigger tables get only
// max(rowid) in an ask; agent_index() counts every table.
constexpr int64_t kCountRowsInAsk = 100000;

// One database of the connection, as the index reads it.
struct ValueIndexCache::Database {
  std::string name;
  std::string file;
  std::string store_path;                  // "" for a temporary store
  std::string index_setting;               // value_index_file and the cache folder that chose it
  bool background = false;                 // read by a BackgroundBuild
  bool writable = false;                   // its build opens the file read-write (query_only)
  std::shared_ptr<BackgroundBuild> build;  // files read in the background
  std::string source;                      // the store's name for it
  std::shared_ptr<ValueStore> store;       // null when it could not be opened
  Status error;                            // why not, naming the index file
  bool kept = false;                       // `store` is a kept index file (ValueIndexCacheFile)
  // What the user is told of the kept index: why none is used, or what was
  // removed or made anew as it was opened; "" when nothing is to be told.
  std::string kept_note;
  int64_t data_version = -1;
  bool complete = false;     // inline: every table read
  bool waited = false;       // background: the first ask has waited
  double ask_ms = 0;         // inline file: what asks have spent reading it
  bool over_budget = false;  // inline file: asks read only what changed
  bool checked = false;      // inline: tables a store held already were checked for new rows
  // Inline, kept: the stamp and completeness last read from or written to
  // the store (ValueStore::Stamp).
  std::pair<std::string, bool> stamped;
  bool checked_by_stamp = false;  // `checked` by it, not table by table
  // Inline file: those of them checked so far, by asks that each stopped at
  // their slice's end (the next goes on from there).
  std::set<std::string> checked_tables;
};

ValueIndexCache::ValueIndexCache() = default;
ValueIndexCache::~ValueIndexCache() = default;

namespace {

// Why a database's index cannot be used now (ok when it can): its index
// could not be opened, or its store is broken (ValueStore::broken()).
Status Unusable(const ValueIndexCache::Database& d) {
  if (!d.error.ok()) return d.error;
  return d.store->broken();
}

double SliceMs(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// How far the store has read `source`: tables, tables done, values, and
// the tables that failed with their errors.
nlohmann::json TableTally(ValueStore& store, const std::string& source) {
  int tables = 0, done = 0;
  nlohmann::json failed = nlohmann::json::array();
  for (const TableProgress& t : store.Tables(source)) {
    ++tables;
    if (t.done) ++done;
    if (!t.error.empty()) failed.push_back({{"table", t.table}, {"error", t.error}});
  }
  nlohmann::json j = {
      {"tables", tables}, {"tables_done", done}, {"values", store.ValueCount(source)}};
  if (!failed.empty()) j["failed"] = std::move(failed);
  return j;
}

}  // namespace

std::vector<ValueIndexCache::Database*> ValueIndexCache::Current(sqlite3* db,
                                                                 const ValueIndexOptions& options,
                                                                 sqlite3* host) {
  const bool background = options.background && Host().threads;
  std::vector<DatabaseInfo> now = ListDatabases(db).value_or(std::vector<DatabaseInfo>{});
  // How each database is read now; a database detached, attached anew under
  // the same name, or read another way since, starts afresh.
  // In WAL mode a reader never blocks a writer; in rollback-journal mode a
  // second connection reading would make the application's own writes fail
  // with SQLITE_BUSY while it holds its lock, so such a file is read by the
  // asking connection itself: in slices during asks, or by agent_index().
  std::map<std::string, bool> wal;
  for (const DatabaseInfo& i : now) {
    if (i.file.empty()) continue;
    auto st =
        Statement::Prepare(db, fmt::format("PRAGMA {}.journal_mode", QuoteIdentifier(i.name)));
    wal[i.name] = st.ok() && st->Step() == SQLITE_ROW && text::Lower(st->ColumnText(0)) == "wal";
  }
  auto background_for = [&](const DatabaseInfo& i) {
    return background && !i.file.empty() && wal[i.name];
  };
  // A background build's connection to the file closes as the host's would
  // (agent/sql/read_connection.h).
  std::map<std::string, bool> writable;
  for (const DatabaseInfo& i : now)
    writable[i.name] = background_for(i) && HostCheckpointsOnClose(host, i.name);
  // Where a file's index is kept: value_index_file; else, for a file of
  // more than 1 MiB, its own file in the cache folder; else a temporary one.
  const std::string index_setting = options.file + '\n' + options.cache_dir;
  std::erase_if(databases_, [&](const std::unique_ptr<Database>& d) {
    return std::none_of(now.begin(), now.end(), [&](const DatabaseInfo& i) {
      return i.name == d->name && i.file == d->file && d->background == background_for(i) &&
             d->writable == writable[i.name] &&
             d->index_setting == (i.file.empty() ? "" : index_setting);
    });
  });
  // A kept index found unusable since it was opened (corrupt further in
  // than its open read) holds nothing worth keeping: it is made anew below,
  // and the user told. Its file is removed only while it is still the one
  // this store opened (another connection may have made it anew already).
  std::map<std::string, std::string> remade;  // database -> why
  std::erase_if(databases_, [&](const std::unique_ptr<Database>& d) {
    if (!d->kept || !d->store) return false;
    const Status why = d->store->broken();
    if (why.ok() || why.kind() == ErrorKind::kDatabaseIo || why.kind() == ErrorKind::kDiskFull)
      return false;
    remade[d->name] = why.message();
    const std::optional<PlainFile> opened = d->store->file();
    d->store.reset();
    d->build.reset();  // the last user's reset closes the store
    if (opened && OwnPlainFile(d->store_path) == opened) RemoveOwnFile(d->store_path);
    return true;
  });
  std::vector<Database*> out;
  for (const DatabaseInfo& info : now) {
    if (info.name == "temp" && !HasUserTables(db, "temp"))
      continue;  // temp.ask and answer tables only
    auto it =
        std::find_if(databases_.begin(), databases_.end(),
                     [&](const std::unique_ptr<Database>& d) { return d->name == info.name; });
    if (it == databases_.end()) {
      auto d = std::make_unique<Database>();
      d->name = info.name;
      d->file = info.file;
      if (!info.file.empty()) {
        d->index_setting = index_setting;
        d->store_path = options.file;
        if (d->store_path.empty() && !options.cache_dir.empty() && !SmallFile(db, info.name)) {
          std::string why;
          d->store_path = ValueIndexCacheFile(options.cache_dir, info.file, host, &why,
                                              int64_t{options.cache_max_mb} << 20);
          if (d->store_path.empty()) d->kept_note = "not used: " + why;
        }
      }
      // A cache file that cannot be opened (corrupt, unwritable) leaves the
      // file to a temporary index; a value_index_file that cannot be is kept
      // as its error, shown by agent_config('value_index') and agent_index(),
      // which tries again.
      const bool cached = options.file.empty() && !d->store_path.empty();
      if (background_for(info)) {
        d->background = true;
        d->writable = writable[info.name];
        d->source = info.file;
        auto build = BackgroundBuild::For(info.file, d->store_path, d->writable, cached);
        if (!build.ok() && cached) {
          d->kept_note = "not used: " + build.status().message();
          d->store_path.clear();
          build = BackgroundBuild::For(info.file, "", d->writable);
        }
        if (build.ok()) {
          d->build = std::move(build).value();
          d->store = d->build->store();
          d->source = d->build->source();
        } else {
          d->error = build.status();
        }
      } else if (!d->store_path.empty()) {
        // A file read by this connection, into the index file every
        // connection and process shares: whoever reads goes on from where
        // the last reader stopped.
        d->source = info.file;
        auto store = ValueStore::Open(d->store_path, db, cached);
        if (store.ok()) {
          d->store = std::move(store).value();
        } else if (cached) {
          d->kept_note = "not used: " + store.status().message();
          d->store_path.clear();
        } else {
          d->error = store.status();
        }
      }
      if (cached && d->store && !d->store_path.empty()) {
        d->kept = true;
        std::vector<std::string> told;
        if (auto it = remade.find(d->name); it != remade.end())
          told.push_back("found unusable (" + it->second + "), so it was made anew");
        if (!d->store->replaced().empty()) told.push_back(d->store->replaced());
        d->kept_note = fmt::format("{}", fmt::join(told, "; "));
      }
      if (d->store || !d->error.ok()) {
        // Made above.
      } else {
        if (!private_store_) {
          auto store = ValueStore::Open("");
          if (!store.ok()) continue;
          private_store_ = std::move(store).value();
        }
        d->store = private_store_;
        d->source = "connection:" + info.name;
      }
      databases_.push_back(std::move(d));
      it = databases_.end() - 1;
    }
    out.push_back(it->get());
  }
  return out;
}

std::shared_ptr<const ValueLookup> ValueIndexCache::Get(sqlite3* db,
                                                        const ValueIndexOptions& options,
                                                        sqlite3* writer) {
  MutexLock lock(&mu_);
  // Every slice below is counted from here: what the ask spends on the index
  // before its lookup, listing the databases included.
  const auto started = std::chrono::steady_clock::now();
  const int64_t changes = sqlite3_total_changes64(writer ? writer : db);
  const bool wrote = changes_ >= 0 && changes != changes_;
  changes_ = changes;
  std::vector<ValueLookup::Part> parts;
  for (Database* dp : Current(db, options, writer ? writer : db)) {
    Database& d = *dp;
    if (!Unusable(d).ok()) continue;  // no hints from it; agent_config('value_index') says why
    // Did this database change since the last ask? Writes of this
    // connection move total_changes; other connections' commits move
    // data_version.
    const int64_t version = DataVersion(db, d.name);
    const bool changed = wrote || (d.data_version >= 0 && version != d.data_version);
    d.data_version = version;
    const auto now = std::chrono::steady_clock::now();
    ScanLimits limits;
    // A file whose index is kept in a file every connection shares: found
    // as the last check left it (its stamp), its tables need no check.
    std::optional<std::string> stamp;
    if (!d.build && !d.store_path.empty()) stamp = SourceStamp(db, writer ? writer : db, d.name);
    bool fresh = false;  // this ask checked every table held done
    if (!d.build && !d.checked && stamp && !changed) {
      if (auto kept = d.store->Stamp(d.source); kept && kept->first == *stamp) {
        d.checked = fresh = true;
        d.checked_by_stamp = true;
        d.complete = d.complete || kept->second;
        d.stamped = *kept;
      }
    }
    if (!d.build && !d.checked) {
      // A store that holds this database already (an index file, the cache,
      // or an agent_index() of this connection) may be behind it: rows added
      // since are read as changes are. A file's tables are checked within
      // the ask's slice; the next ask checks the rest.
      bool finished = true;
      if (d.file.empty()) {
        CatchUp(db, d.name, *d.store, d.source, kCountEveryTable);
      } else {
        CatchUp(db, d.name, *d.store, d.source, kCountRowsInAsk,
                started + std::chrono::milliseconds(options.file_slice_ms), &finished,
                &d.checked_tables);
      }
      d.checked = fresh = finished;
      if (finished) d.checked_tables.clear();
    }
    if (d.build) {
      if (changed) {
        // Rows this connection added (committed or not) are read here, so
        // the next hints know them; the rest is the background's.
        limits.deadline = now + std::chrono::milliseconds(options.catch_up_ms);
        limits.chunk_rows = kAskChunkRows;
        limits.max_chunk_ms = kAskChunkMs;
        const std::set<std::string> reopened = CatchUp(db, d.name, *d.store, d.source, 0);
        if (!reopened.empty()) {
          limits.only = &reopened;
          ScanSource(db, d.name, *d.store, d.source, limits);
          ++builds_;
        }
        d.build->Wake();
      }
      // The first ask of a connection reads a small file's rest itself; for
      // a bigger one it waits a little for the background.
      if (!d.waited) {
        if (SmallFile(db, d.name)) {
          if (ScanSource(db, d.name, *d.store, d.source, ScanLimits())) d.build->MarkComplete();
          ++builds_;
        } else if (options.wait_ms > 0) {
          // wait_ms counts from the ask's start, and leaves the lookup its
          // share.
          d.build->WaitComplete(std::max(
              0,
              options.wait_ms - static_cast<int>(std::ceil(SliceMs(started) + kLookupReserveMs))));
        }
        d.waited = true;
      }
    } else if ((d.complete || d.over_budget) && !changed) {
      // Read as far as asks read it, and nothing changed since: no reading.
    } else if (d.file.empty() || SmallFile(db, d.name)) {
      // A memory or temp database: as long as it takes, up to slice_ms. A
      // small file: whole.
      if (!d.complete || changed) {
        if (d.file.empty()) limits.deadline = now + std::chrono::milliseconds(options.slice_ms);
        if (d.complete) CatchUp(db, d.name, *d.store, d.source, kCountEveryTable);
        d.complete = ScanSource(db, d.name, *d.store, d.source, limits);
        ++builds_;
      }
    } else {
      // A big file. Until it is read whole (by asks or agent_index()), asks
      // read it file_slice_ms at a time, so that no ask pays for it at once,
      // and file_budget_ms in all; past that budget, or once it is whole,
      // they read only what changed: the rows past those read.
      if (!d.complete && d.ask_ms >= options.file_budget_ms) d.over_budget = true;
      // The slice counts from the ask's start; reading what was never read
      // stops, too, where the budget ends.
      const double slice = std::max(0.0, options.file_slice_ms - kLookupReserveMs);
      auto at = [&](double ms) {
        return started + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
      };
      limits.deadline = at(slice);
      limits.chunk_rows = kAskChunkRows;
      limits.max_chunk_ms = kAskChunkMs;
      if (!d.complete && !d.over_budget) {
        const double left = std::max(0.0, options.file_budget_ms - d.ask_ms);
        limits.deadline = at(std::min(slice, SliceMs(started) + left));
        d.complete = ScanSource(db, d.name, *d.store, d.source, limits);
        d.ask_ms += SliceMs(now);
        ++builds_;
      } else if (changed) {
        const std::set<std::string> reopened =
            CatchUp(db, d.name, *d.store, d.source, kCountRowsInAsk);
        if (d.complete) {
          // New tables too: a complete index reads whatever is not done.
          d.complete = ScanSource(db, d.name, *d.store, d.source, limits);
        } else if (!reopened.empty()) {
          limits.only = &reopened;
          ScanSource(db, d.name, *d.store, d.source, limits);
        }
        ++builds_;
      }
    }
    // What this ask found is kept for the next connection: every table held
    // done checked (now, or by an earlier ask of this connection, with no
    // change since), and whether every table is read.
    if (stamp && d.checked && (fresh || !changed) &&
        d.stamped != std::make_pair(*stamp, d.complete)) {
      d.stamped = {*stamp, d.complete};
      d.store->SetStamp(d.source, *stamp, d.complete);
    }
    // Hints name an attached database's tables as the prompt does.
    parts.push_back({d.name, d.name != "main" && d.name != "temp", d.store, d.source});
  }
  return std::make_shared<const ValueLookup>(std::move(parts), db);
}

Result<nlohmann::json> ValueIndexCache::Build(sqlite3* db, const ValueIndexOptions& options,
                                              const std::string& database) {
  MutexLock lock(&mu_);
  // What is read now includes this connection's writes so far.
  changes_ = sqlite3_total_changes64(db);
  // An index that could not be opened, or cannot be used any more, is
  // opened anew (a file removed since is made again).
  if (private_store_ && !private_store_->broken().ok()) private_store_.reset();
  // (A kept index is made anew by Current(), which says so.)
  std::erase_if(databases_,
                [](const std::unique_ptr<Database>& d) { return !d->kept && !Unusable(*d).ok(); });
  std::vector<Database*> current = Current(db, options, db);
  // An index file is read whole once before agent_index() trusts it: what
  // is corrupt may lie where no lookup has been yet. A kept one found so is
  // made anew.
  bool remake = false;
  for (Database* d : current) {
    if ((database.empty() || d->name == database) && d->store && !d->store_path.empty())
      remake |= !d->store->Verify().ok() && d->kept;
  }
  if (remake) current = Current(db, options, db);
  if (!database.empty() && std::none_of(current.begin(), current.end(),
                                        [&](const Database* d) { return d->name == database; })) {
    return Status(
        ErrorKind::kInvalidArgument,
        fmt::format("no database named {} on this connection (PRAGMA database_list names them)",
                    text::QuoteSqlString(database)));
  }
  nlohmann::json out = nlohmann::json::array();
  Status failed;  // the first index that cannot be used, told after the others are read
  for (Database* d : current) {
    if (!database.empty() && d->name != database) continue;
    if (Status why = Unusable(*d); !why.ok()) {
      if (failed.ok()) failed = why;
      continue;
    }
    const auto started = std::chrono::steady_clock::now();
    // Rows deleted since a table was read are seen by counting every table;
    // then everything not yet read, at full speed, chunk by chunk (each a
    // short read transaction: a writer gets in between two chunks).
    CatchUp(db, d->name, *d->store, d->source, kCountEveryTable);
    const bool done = ScanSource(db, d->name, *d->store, d->source, ScanLimits());
    ++builds_;
    if (Status why = d->store->broken(); !why.ok()) {
      if (failed.ok()) failed = why;
      continue;
    }
    nlohmann::json j = TableTally(*d->store, d->source);
    if (ConnectionInterrupted(db)) {
      return Status(
          ErrorKind::kInterrupted,
          fmt::format(
              "interrupted while reading database {} ({} of {} tables read, {} values kept); "
              "agent_index() again goes on from there",
              text::QuoteSqlString(d->name), j["tables_done"].get<int>(), j["tables"].get<int>(),
              j["values"].get<int64_t>()));
    }
    if (d->build) {
      if (done) d->build->MarkComplete();
      d->build->Wake();
    } else {
      d->complete = done;
    }
    d->data_version = DataVersion(db, d->name);
    d->checked = true;
    j["database"] = d->name;
    j["state"] = done ? "complete" : "incomplete";
    j["ms"] = std::round(SliceMs(started) * 10) / 10;
    j["index_file"] = d->store_path;
    if (!d->kept_note.empty()) j["kept_index"] = d->kept_note;
    out.push_back(std::move(j));
  }
  if (!failed.ok()) return failed;
  return out;
}

nlohmann::json ValueIndexCache::Progress() const {
  MutexLock lock(&mu_);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : databases_) {
    nlohmann::json j;
    j["database"] = d->name;
    j["file"] = d->file;
    j["read"] = d->background ? "background" : "during asks";
    j["index_file"] = d->store_path;
    if (!d->kept_note.empty()) j["kept_index"] = d->kept_note;
    if (Status why = Unusable(*d); !why.ok()) {
      // Never "complete": the index holds nothing that can be trusted.
      j["state"] = "failed: " + why.message();
      out.push_back(std::move(j));
      continue;
    }
    j.update(TableTally(*d->store, d->source));
    j["index_bytes"] = d->store->FileBytes();
    if (d->build) {
      j.update(d->build->Progress());
    } else {
      j["state"] = d->complete ? "complete" : d->over_budget ? "partial" : "reading";
      if (!d->file.empty()) j["ask_ms"] = std::round(d->ask_ms * 10) / 10;
      // How this connection knew the tables the index held were as read:
      // the file as the last check left it (its stamp), or each table.
      if (!d->file.empty() && d->checked) j["checked"] = d->checked_by_stamp ? "stamp" : "tables";
      if (d->over_budget) {
        j["advice"] =
            "asks read only what changed now; SELECT agent_index() reads the rest, once, like "
            "ANALYZE";
      }
    }
    out.push_back(std::move(j));
  }
  return out;
}

int64_t ValueIndexCache::builds() const {
  MutexLock lock(&mu_);
  return builds_;
}

}  // namespace querypilot
