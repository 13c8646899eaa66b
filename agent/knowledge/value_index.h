// ValueIndex: the short text values of a database, for matching the words of
// a question before any SQL is written.
//
// "How many heroes have blue eyes?" is answered right only if the model
// writes colour = 'Blue', not 'blue'. The index holds the distinct short text
// values of every text column, keyed case- and space-insensitively;
// LookupValues() matches the question's phrases of one to five words against
// it, longest first, with word forms ("aliens" -> alien, "European" ->
// Europe, "French" -> France), and returns the real values with their
// columns, which the first prompt then lists.
//
// A connection uses ValueIndexCache: the values live in a ValueStore
// (agent/knowledge/value_store.h); a database file is read on a connection
// of its own in the background (agent/knowledge/value_builder.h), shared by
// every connection of the process on that file and, with a value index file,
// kept across restarts; memory and temp databases are read in bounded slices
// during asks. Rows a connection adds are caught up on before its next ask.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_store.h"
#include "agent/sql/executor.h"

struct sqlite3;

namespace querypilot {

struct ValueHint {
  std::string table;
  std::string column;
  std::string value;     // as stored
  std::string database;  // "" when the table's name alone says it
};

// How related a hint's column is to the question (higher first); lookups
// order the columns a phrase was found in by it before their cap cuts
// (agent/knowledge/linking.h's RankHintsFor). Empty: the store's order.
using HintRelevance = std::function<double(const ValueHint&)>;

// How values are keyed, for the store (agent/knowledge/value_store.h) and
// its lookups.
class ValueIndex {
 public:
  // The key values are stored under: lower case, trimmed, inner runs of
  // white space as one space.
  static std::string Key(std::string_view value);
  // Key(value) written into `*key` (its old content replaced): a scan that
  // keys every value it reads reuses one buffer instead of allocating.
  static void KeyInto(std::string_view value, std::string* key);
  // Whether a value with this key is indexed: not empty, not all digits
  // (numbers are compared as numbers, not named).
  static bool Indexed(const std::string& key);
};

// The words of a question matched against an index: `find` returns the
// values stored under a key. Longest phrase first; a phrase inside a longer
// one that matched is skipped; at most `max_hints`, and at most 3 columns per
// phrase, the most relevant (`relevance`) when a phrase is found in more.
// Stop words alone never match.
std::vector<ValueHint> LookupValues(
    std::string_view question,
    const std::function<std::vector<ValueHint>(const std::string&)>& find, size_t max_hints = 12,
    const HintRelevance& relevance = {});

// The keys a single word may stand for when it is not a key itself: a
// plural ("aliens" -> alien), the first part of a compound ("gold-eyed" ->
// gold), the place an adjective or demonym names ("European" -> europe,
// "Asian" -> asia, "Canadian" -> canada, "Japanese" -> japan, and a few
// irregular ones: "French" -> france, "Dutch" -> netherlands). Most likely
// first.
std::vector<std::string> WordVariants(const std::string& word);

// The keys one edit away from `key` (a letter, digit, space or common sign
// deleted, put in, replaced, or two neighbours swapped), each once, at most
// `max`, deletions and swaps first (none for ""): what a typo of a value may be, for
// probing a hashed column (HashedValues), whose values cannot be read in
// key order.
std::vector<std::string> EditVariants(const std::string& key, size_t max);

struct ValueIndexOptions {
  // A SQLite file of its own holding the index of database files, shared by
  // every connection and kept across restarts; "" = a temporary one per
  // process, or the cache below.
  std::string file;
  // With no `file`: a folder where each database file of more than 1 MiB
  // gets an index file of its own (ValueIndexCacheFile), kept across
  // restarts, so that a second process goes on from what the first read. ""
  // = none (a temporary index per process).
  std::string cache_dir;
  // The most the kept indexes of `cache_dir` may take, in MB (0: no bound):
  // past it the least recently used database's index is removed first
  // (BoundValueIndexCache), and an index that alone passes it is not kept.
  int cache_max_mb = 0;
  // Database files in WAL mode are read on a connection of their own, in
  // the background. Off, on a SQLite built without threads, or for a file
  // in rollback-journal mode (where a second reader would make the
  // application's writes fail with SQLITE_BUSY): in slices during asks.
  bool background = true;
  int slice_ms = 500;      // an ask's own reading of a memory or temp database
  int file_slice_ms = 60;  // an ask's own reading of a file not read in the background
  // What asks of a connection may spend in all on reading such a file (more
  // than 1 MiB); past it they read only what changes, and agent_index()
  // reads the rest. 0: asks never read it.
  int file_budget_ms = 1000;
  // An ask waits at most this long for a database file's index to be
  // complete; past it, it uses what has been read so far.
  int wait_ms = 50;
  int catch_up_ms = 15;  // an ask's own reading of rows its connection added
  StopMethod stop = StopMethod::kBetweenSteps;
};

// The default folder of kept value indexes: $XDG_CACHE_HOME/querypilot/values,
// else $HOME/.cache/querypilot/values; "" when neither is set to an absolute
// path. Nothing is created.
std::string DefaultValueIndexCacheDir();

// The index file kept in `dir` for the database file `file`, named by the
// file's identity (its canonical path, device and inode):
// <folder>/<name>-<hash>.qpindex, where <folder> is `dir` resolved. `dir` is
// made (mode 0700) when missing, and must be a folder QueryPilot made
// (OwnFolder, agent/sql/own_file.h: no symbolic link, the user's, open to
// no one else). "" when the file's identity cannot be read, the folder is
// refused or cannot be made, or the index file would be one of `host`'s
// files (CheckOwnFile): the same refusals as value_index_file's, after which
// the file gets a temporary index; `why` (when given) then says which. The
// index file is opened with ValueStore::Open(path, host, kept = true).
//
// With `max_bytes` (> 0), the folder is first brought within it
// (BoundValueIndexCache, sparing this file), and when this file alone (with
// its -wal) is bigger it is removed and "" returned, `why` saying so.
std::string ValueIndexCacheFile(const std::string& dir, const std::string& file, sqlite3* host,
                                std::string* why = nullptr, int64_t max_bytes = 0);

// Removes index files of `dir` (named as ValueIndexCacheFile names them,
// with their -journal, -wal and -shm) least recently used first (by the
// time ValueIndexCacheFile sets on each use) until those left take at most
// `max_bytes`; never `keep`, never anything in a folder QueryPilot did not
// make (OwnFolder). An index open in another process is removed all the
// same: that process goes on with its open file, which is gone once it
// closes. Returns how many index files were removed.
size_t BoundValueIndexCache(const std::string& dir, int64_t max_bytes, const std::string& keep);

// Index files of `dir` (named as ValueIndexCacheFile names them,
// <name>-<16 hex digits>.qpindex, with SQLite's -journal, -wal and -shm
// beside them) not written nor opened for `max_age_days`: their database
// file is gone, renamed or no longer asked about. Removed; nothing else in
// the folder is touched, nor anything in a folder QueryPilot did not make
// (OwnFolder: a folder that is a link, another's, or open to others is left
// alone), nor what a link there names. Returns how many index files were
// removed. ValueIndexCacheFile marks the file it returns as used and prunes
// its folder with kValueIndexCacheDays, once per process.
size_t PruneValueIndexCache(const std::string& dir, int max_age_days);
inline constexpr int kValueIndexCacheDays = 30;

// What an ask sees of the index: each database's part.
class ValueLookup {
 public:
  struct Part {
    std::string database;    // "main", "temp", an attached name
    bool qualified = false;  // hints name database.table
    std::shared_ptr<ValueStore> store;
    std::string source;
  };
  // `reader`: the connection the values of hashed columns are read and
  // verified on (ValueStore's StoredValue::rows), the one the index was
  // made current with; nullptr: hashed columns give no hints.
  explicit ValueLookup(std::vector<Part> parts, sqlite3* reader = nullptr)
      : parts_(std::move(parts)), reader_(reader) {}

  // As LookupValues(); a phrase is looked for in up to kColumnsPerKey columns
  // of each part, which `relevance` orders. A hashed column's candidate rows
  // are read on the reader (one rowid seek each, at most
  // HashedValues::kMaxRows per column and phrase) and a value hinted only
  // when its key is the phrase's: what a hash collision or a row changed
  // since it was read would suggest never reaches the prompt.
  std::vector<ValueHint> Lookup(std::string_view question, size_t max_hints = 12,
                                const HintRelevance& relevance = {}) const;
  static constexpr size_t kColumnsPerKey = 256;
  // For grounding: when the index holds every value of `table`.`column` (of
  // `database`) and they are more than `more_than`, the values within
  // `max_edits` edits of `literal` (compared case- and space-insensitively),
  // nearest first, at most `max`, reading at most `scan` values that share
  // its first letter. nullopt when the index cannot say (incomplete, or few
  // enough values to read from the database itself). A hashed column
  // (HashedValues) cannot be read in key order: there the literal's key and
  // the keys one edit away (EditVariants) are probed, and each value found
  // read from the database and kept only if its key is the one probed.
  std::optional<std::vector<std::string>> NearValues(const std::string& database,
                                                     const std::string& table,
                                                     const std::string& column,
                                                     const std::string& literal, size_t max_edits,
                                                     size_t max, int64_t more_than,
                                                     size_t scan = 200000) const;

  // Complete columns holding two or three one-character codes ('T'/'F',
  // 'Y'/'N', 'M'/'F'), of every part.
  std::vector<std::pair<std::string, CodedColumn>> CodedColumns() const;  // (database, column)

 private:
  std::vector<Part> parts_;
  sqlite3* reader_ = nullptr;
};

class BackgroundBuild;

// The codes of each coded column as a note on it ("holds 'F' or 'T'"), for
// WithDescriptions() (agent/knowledge/descriptions.h) to show with the
// user's own descriptions in one pass over the schema.
std::vector<Description> CodeNotes(const std::vector<std::pair<std::string, CodedColumn>>& codes);

// A connection's value index: the parts for its databases, made current for
// each ask within the ask's budgets. Thread-safe.
class ValueIndexCache {
 public:
  ValueIndexCache();
  ~ValueIndexCache();
  ValueIndexCache(const ValueIndexCache&) = delete;
  ValueIndexCache& operator=(const ValueIndexCache&) = delete;

  // Starts (or joins) the background reading of the connection's database
  // files, catches up on rows this connection added since the last ask,
  // reads memory and temp databases for at most `slice_ms`, and returns
  // lookups over all of it. Every slice counts from the call's start; the
  // first call of a connection waits at most `wait_ms` for a background
  // build (not at all when its kept index is complete), later calls never.
  // `db` is the connection read with; `writer` (default `db`) the host
  // connection whose own writes (its total_changes) are caught up on.
  std::shared_ptr<const ValueLookup> Get(sqlite3* db, const ValueIndexOptions& options = {},
                                         sqlite3* writer = nullptr);

  // agent_index(): reads every value of `database` ("" = every database of
  // the connection) now, on the asking connection, at full speed and with
  // no time limit: rows deleted since a table was read are counted, then
  // everything not yet read is, chunk by chunk (each chunk a short read
  // transaction). Resumable: an interrupted build (sqlite3_interrupt,
  // Ctrl-C) keeps what it read, and the next goes on from there. Returns,
  // per database, its state, tables, values and time.
  Result<nlohmann::json> Build(sqlite3* db, const ValueIndexOptions& options,
                               const std::string& database);

  // Progress, for agent_config('value_index'): per database, where its index
  // lives, how it is read, tables done of all, values, bytes.
  nlohmann::json Progress() const;

  // How many times an ask read values itself (slices and catch-ups); for tests.
  int64_t builds() const;

  struct Database;  // one database of the connection, as the index reads it (value_index.cpp)

 private:
  // The connection's databases now, each with its Database, made for a
  // database new to it (or read another way since). `host` is the host
  // connection, whose close a background build's connection mirrors.
  std::vector<Database*> Current(sqlite3* db, const ValueIndexOptions& options, sqlite3* host)
      REQUIRES(mu_);
  // An ask reads a big file in chunks this small, so that its slice ends
  // near its deadline.
  static constexpr size_t kAskChunkRows = 4096;
  // ... and a chunk of an ask's takes about this many milliseconds at most,
  // judged from the chunks before it, so that one slow chunk overruns the
  // slice by little.
  static constexpr double kAskChunkMs = 5;

  // Taken before a store's lock (a store's broken(), Verify(), lookups) and
  // before a background build's locks (its registry's, its state's: For,
  // Wake, WaitComplete, Progress), never after them.
  mutable Mutex mu_ ACQUIRED_BEFORE(ValueStore::mu_);
  std::vector<std::unique_ptr<Database>> databases_ GUARDED_BY(mu_);
  std::shared_ptr<ValueStore> private_store_ GUARDED_BY(mu_);  // memory and temp databases
  // Source names in the private store are private_key_ + database.
  std::string private_key_ GUARDED_BY(mu_);
  int64_t changes_ GUARDED_BY(mu_) = -1;
  int64_t builds_ GUARDED_BY(mu_) = 0;
};

}  // namespace querypilot
