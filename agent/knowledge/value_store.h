// ValueStore: the value index's own SQLite database. The scan that fills it
// (ScanSource, CatchUp) is value_scan.h.
//
// The store holds the distinct short text values of the text columns of one
// or more source databases, under a case- and space-insensitive key
// (ValueIndex::Key), and how far each source table has been read. It is a
// file of its own (the `value_index_file` setting) or a private temporary
// database that SQLite removes when it is closed; never the user's database.
// Being SQLite, it holds ten million values with bounded memory (its page
// cache), answers a key with one index seek, and is shared by every
// connection (and process) that opens the same file.
//
// Thread-safe: one mutex serialises the store's connection. A scan
// (value_scan.h) holds it only while it stores one chunk, and sizes its
// chunks so that this takes a few milliseconds (ScanLimits::max_chunk_ms); a
// lookup holds it for all its keys (ValueStore::Held), so an ask waits for at most one
// chunk being stored.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/own_file.h"
#include "agent/sql/statement.h"

struct sqlite3;

namespace querypilot {

// One value found under a key: where it is, as stored. For a hashed column
// (HashedValues) the store holds no value: `rows` are the source rows whose
// value may have the key (a hash matched), `value` is "", and the caller
// reads the value from the source and keeps it only if its key is the one
// looked up (ValueLookup::Lookup), so that a hash collision never reaches
// a prompt.
struct StoredValue {
  std::string table;
  std::string column;
  std::string value;
  std::vector<int64_t> rows;
};

// How a column of many distinct values is held: not its values but, per
// value, a 32-bit hash of its key and the rowid of a source row holding it
// (about 5 bytes per value where a value itself costs its length twice).
// A column is held by value while it has at most kFullValues distinct
// values, or kNearUniqueValues when most of its rows hold a value of their
// own; past that its values become hashes (for good). The hashes are kept in
// buckets, one blob of entries per (column, bucket) (qp_buckets). An ask
// writes them through a staging table (qp_pending) that is folded into the
// buckets when it holds kPendingMax entries or a full build ends; a
// full-speed scan writes up to kPendingMax at a time straight into the
// buckets (ValueStore::MergeHashed). Pure: no SQLite.
struct HashedValues {
  static constexpr int64_t kFullValues = 65536;
  static constexpr int64_t kNearUniqueValues = 4096;
  static constexpr int kBucketBits = 14;
  static constexpr int64_t kPendingMax = 1 << 21;
  // Candidate rows read per (key, column), at most: more than one only when
  // a value repeats or hashes collide.
  static constexpr size_t kMaxRows = 4;
  // Whether a column held by value should become hashed, given its distinct
  // values held and the rows of its table read so far.
  static bool Overflows(int64_t values, int64_t rows_read);
  struct Hash {
    int bucket;    // [0, 2^kBucketBits)
    uint16_t tag;  // the hash's next 16 bits
  };
  static Hash Of(std::string_view key);
  // Appends (tag, row) to a bucket's blob; rows ascend within a blob, each
  // written as a zigzag varint of its difference from the one before.
  // `last` is the blob's last row (LastRow()).
  static void Append(std::string* blob, int64_t* last, uint16_t tag, int64_t row);
  static int64_t LastRow(std::string_view blob);
  // The rows of a blob whose tag is `tag`, at most `max`.
  static std::vector<int64_t> Rows(std::string_view blob, uint16_t tag, size_t max);
  // One (column, hash, row) of a hashed column, as a full-speed scan holds
  // it until it writes its buckets: 16 bytes, no string. `column` is the
  // column's index in the scan's list, not its id in the store.
  struct Entry {
    uint32_t column;
    uint16_t bucket;
    uint16_t tag;
    int64_t row;
  };
};

// How far one source table has been read.
struct TableProgress {
  int64_t id = 0;
  std::string table;
  std::string create_sql;  // as sqlite_master had it when reading began
  int64_t next_rowid = 0;  // rowid tables: every row below it has been read
  int64_t rows_read = 0;   // rows read in all (rowid tables)
  bool done = false;       // every row up to the last check is read
  bool rowid = true;       // false: WITHOUT ROWID, read whole
  int64_t values = 0;      // distinct values held for its columns
  int text_columns = 0;
  std::string error;  // why it could not be read, if it could not
};

// A column whose every value is known and which holds only a few short codes
// ('T'/'F', 'Y'/'N'): the codes, for the prompt.
struct CodedColumn {
  std::string table;
  std::string column;
  std::vector<std::string> codes;
};

// How the store holds a column's codes in qp_columns.codes: the distinct
// values joined by kSeparator, kept while the column holds at most kMax
// distinct values (and "" past that). The scan writes them; CodedColumns()
// reads them.
struct StoredCodes {
  static constexpr int64_t kMax = 8;
  static constexpr char kSeparator = '\x1f';
  // The codes of a stored string; none for "".
  static std::vector<std::string> Split(const std::string& codes);
  // The stored string of `codes` (Split(Join(c)) == c for non-empty c).
  static std::string Join(const std::vector<std::string>& codes);
};

class ValueStore {
 public:
  // `path` "": a private temporary database. Otherwise a file of its own,
  // created if missing (WAL, so readers in other processes never wait),
  // named as SQLite names files (a "file:" URI too). With `host`, the file
  // is first shown to be none of that connection's database files
  // (agent/sql/own_file.h), before it is opened and again before anything
  // is written to it.
  //
  // `kept`: `path` is a kept index, named by QueryPilot in a folder of its
  // own (ValueIndexCacheFile). It is never opened through a link: whatever
  // stands at its name, or its -journal, -wal or -shm name, that is not a
  // plain file of the user's with no other name is removed first (the name
  // only), SQLite opens it refusing symbolic links (SQLITE_OPEN_NOFOLLOW,
  // 3.31 and later), and the file is the same one before and after. One that
  // is corrupt, not a database or not a value index is removed and made
  // anew. replaced() says what was removed or made anew.
  static Result<std::shared_ptr<ValueStore>> Open(const std::string& path, sqlite3* host = nullptr,
                                                  bool kept = false);
  ~ValueStore();
  ValueStore(const ValueStore&) = delete;
  ValueStore& operator=(const ValueStore&) = delete;

  const std::string& path() const { return path_; }
  // For a kept index: what was removed or replaced as it was opened, said
  // for the user; "" when nothing was.
  const std::string& replaced() const { return replaced_; }
  // For a kept index: the file it opened (device and inode).
  std::optional<PlainFile> file() const { return file_; }

  // Holds the store from its making to its end: no scan stores a chunk in
  // between. For a lookup of many keys, each looked up with Find(held, ...);
  // no other method of the store may be called by the holder meanwhile (the
  // lock is not recursive).
  class SCOPED_CAPABILITY Held {
   public:
    explicit Held(ValueStore* store) ACQUIRE(store->mu_) : store_(store) { store_->mu_.Lock(); }
    ~Held() RELEASE() { store_->mu_.Unlock(); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;

   private:
    friend class ValueStore;
    ValueStore* const store_;
  };

  // Ok while the store can be used; else why not, naming its file: the file
  // is corrupt or not a database, cannot be read or written, or is not a
  // QueryPilot value index (tables of another shape). Set by the first such
  // failure of the store's own SQL, and kept: nothing it holds is trusted
  // after that, ScanSource() (value_scan.h) reads nothing into it, and
  // lookups find nothing. A file busy or locked by another connection, an interruption or
  // a lack of memory is no such failure.
  Status broken();
  // Reads the whole store as PRAGMA quick_check does (in time, its size),
  // once per store: what broken() says after it, corruption anywhere
  // included.
  Status Verify();

  // The tables of `source` the store knows, with their progress.
  std::vector<TableProgress> Tables(const std::string& source);

  // Values stored under `key` for `source`, at most `limit`; the second
  // while `held` holds this store.
  std::vector<StoredValue> Find(const std::string& source, const std::string& key, size_t limit)
      EXCLUDES(mu_);
  std::vector<StoredValue> Find(const Held& held, const std::string& source, const std::string& key,
                                size_t limit);

  // Complete columns of `source` holding from 2 to `max_codes` distinct
  // values, each at most `max_code_bytes` long, in a table with more rows
  // than that: flags such as 'T'/'F', not a small table's names.
  std::vector<CodedColumn> CodedColumns(const std::string& source, size_t max_codes,
                                        size_t max_code_bytes);

  // A column's distinct values held (for a hashed column, HashedValues, the
  // entries staged for it), and whether its table is read whole; {-1, false}
  // when the store does not know the column.
  std::pair<int64_t, bool> ColumnState(const std::string& source, const std::string& table,
                                       const std::string& column);
  // The (key, value) pairs of one column whose keys lie in [lo, hi), in key
  // order, at most `limit`: values that start alike, for near values.
  std::vector<std::pair<std::string, std::string>> KeyRange(const std::string& source,
                                                            const std::string& table,
                                                            const std::string& column,
                                                            const std::string& lo,
                                                            const std::string& hi, size_t limit);

  // For a hashed column of `source` (HashedValues): per key of `keys`, the
  // candidate rows whose value may have that key (at most `max` each; to be
  // read and verified by the caller). Empty when the column is not hashed.
  std::vector<std::vector<int64_t>> HashedRows(const std::string& source, const std::string& table,
                                               const std::string& column,
                                               const std::vector<std::string>& keys, size_t max);

  // What the store last found of `source`'s file: a stamp of the file
  // (SourceStamp, value_index.cpp) at which every table held done was
  // checked unchanged, and whether every table was read then; nullopt when
  // none is kept. SetStamp() records one.
  std::optional<std::pair<std::string, bool>> Stamp(const std::string& source) EXCLUDES(mu_);
  void SetStamp(const std::string& source, const std::string& stamp, bool complete) EXCLUDES(mu_);

  // Distinct values held for `source`, and the store's size on disk.
  int64_t ValueCount(const std::string& source);
  int64_t FileBytes();

  // Folds the staged hashes (qp_pending) into their buckets, a bounded step
  // per transaction so that a lookup waits for one step at most; with
  // `compact`, then rewrites the file if it has grown loose (VACUUM), so
  // that a finished build leaves the index at its smallest. Called when a
  // full-speed scan ends and when the staging table is full.
  void Fold(bool compact) EXCLUDES(mu_);
  // Hashed entries staged, not yet folded (an estimate kept by this
  // process: read at open, counted as chunks are stored).
  int64_t pending() const { return pending_.load(); }

  // Forgets `table` of `source` (its values too), e.g. after a schema change.
  void ForgetTable(const std::string& source, const std::string& table);
  // Marks a done rowid table as having rows past next_rowid to read.
  void Reopen(int64_t table_id);

 private:
  // The scan (value_scan.cpp) writes its chunks through the private
  // statement helpers below, holding mu_.
  friend class SourceScan;
  // Its lock is taken before this one's (ACQUIRED_BEFORE names mu_).
  friend class ValueIndexCache;
  explicit ValueStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // Open() without replacing what cannot be used; `*unusable` is set when
  // the file was opened and what it holds is what failed.
  static Result<std::shared_ptr<ValueStore>> OpenFile(const std::string& path, sqlite3* host,
                                                      bool kept, bool* unusable);
  // The store's own SQL, with mu_ held: a failure is noted (Note).
  Status Exec(const char* sql) REQUIRES(mu_);
  Result<Statement> Prepare(std::string_view sql) REQUIRES(mu_);
  int Step(Statement& st) REQUIRES(mu_);
  // Marks the store broken for a result code that no retry mends.
  void Note(int rc) REQUIRES(mu_);
  void MarkBroken(ErrorKind kind, const std::string& why) REQUIRES(mu_);
  std::vector<StoredValue> FindHeld(const std::string& source, const std::string& key, size_t limit)
      REQUIRES(mu_);
  // The hashed columns of `source` whose hashes match `key`, with their
  // candidate rows.
  void FindHashed(const std::string& source, const std::string& key, size_t limit,
                  std::vector<StoredValue>* out) REQUIRES(mu_);
  // Prepares the statements of hashed lookups, once; false when it cannot.
  bool PrepareHashed() REQUIRES(mu_);
  // The rows of hashed column `id` for `key`, at most `max`.
  std::vector<int64_t> RowsOf(int64_t id, const std::string& key, size_t max) REQUIRES(mu_);
  // What the store holds, as a value that changes whenever it does: other
  // connections' commits (PRAGMA data_version) and this one's rows written
  // (sqlite3_total_changes64). nullopt when it cannot be read.
  std::optional<std::pair<int64_t, int64_t>> Version() REQUIRES(mu_);
  // One step of Fold(): up to `max` staged entries moved; how many.
  int64_t FoldStep(int64_t max) REQUIRES(mu_);
  // Appends `entries` (in the order they were read: rows ascend per column)
  // to their buckets, each bucket read and written once, within the
  // caller's transaction: a full-speed scan's chunk, without the staging
  // table. `column_ids[e.column]` is each entry's column. Sorts `entries`.
  void MergeHashed(std::vector<HashedValues::Entry>* entries,
                   const std::vector<int64_t>& column_ids) REQUIRES(mu_);

  Mutex mu_;
  sqlite3* db_;
  std::string path_;
  bool kept_ = false;
  std::optional<PlainFile> file_;  // kept: the file opened
  std::string replaced_;
  Status broken_ GUARDED_BY(mu_);
  bool verified_ GUARDED_BY(mu_) = false;
  // Find()'s statement, prepared once: an ask looks up dozens of keys, and
  // preparing the join each time cost more than the seeks themselves.
  Statement find_ GUARDED_BY(mu_);
  Statement hashed_columns_ GUARDED_BY(mu_);
  Statement bucket_ GUARDED_BY(mu_);
  Statement staged_ GUARDED_BY(mu_);
  Statement data_version_ GUARDED_BY(mu_);
  // CodedColumns()'s answers, each with the Version() it was read at:
  // (source, max_codes, max_code_bytes) -> (version, columns).
  std::map<std::tuple<std::string, size_t, size_t>,
           std::pair<std::pair<int64_t, int64_t>, std::vector<CodedColumn>>>
      coded_ GUARDED_BY(mu_);
  std::atomic<int64_t> pending_{0};
  // Entries merged straight into buckets since the last Fold(true): a build
  // that wrote many leaves the file loose, and Fold(true) rewrites it.
  int64_t merged_ GUARDED_BY(mu_) = 0;
};

}  // namespace querypilot
