// The scan that fills a ValueStore (value_store.h) from a source database.
//
// ScanSource() reads a source into the store in chunks: for a rowid table,
// the rows past the last rowid read, so that rows added later are caught up
// on without starting over; for a WITHOUT ROWID table, its distinct values
// in one statement (read again whole when it changes). Every chunk is a
// short read statement, reset at once, so a reader never holds the source's
// lock for longer than one chunk, and the store's mutex is held only while
// one chunk is stored (or a group of small tables, each read whole, in one
// transaction). CatchUp() finds the tables that changed since.
//
// The scan only reads the source connection it is given (never writes it,
// never changes its handlers or limits) and writes only the store.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/knowledge/value_store.h"

struct sqlite3;

namespace querypilot {

// One source table as the scan sees it.
struct SourceTable {
  std::string name;
  std::string create_sql;
  bool rowid = true;
  std::vector<std::string> text_columns;  // read by ReadTextColumns
  // Held done (or failed) by the store with this create_sql: its size was
  // not read.
  bool known = false;
};

// The tables of database `database` of `db`: rowid and WITHOUT ROWID tables
// (not views, virtual tables, nor sqlite_*), by size, smallest first, so
// that most columns are covered early; their columns are not read (a scan
// reads a table's with ReadTextColumns as it reaches it). With `only`, just
// those tables. With `held` (the tables a store holds done or failed, by
// name, with the create_sql they were read under), a table held with the
// same create_sql comes first, `known`, its size not read. nullopt when
// SQLite could not finish the listing (the connection interrupted, a lock):
// a partial list would make the scan forget the tables it missed.
std::optional<std::vector<SourceTable>> ReadSourceTables(
    sqlite3* db, const std::string& database, const std::set<std::string>* only = nullptr,
    const std::map<std::string, std::string>* held = nullptr);

// Fills `t->text_columns` with the columns of `t` in `database` that hold
// text (ColumnInfo::HoldsText), in order, with `cols` prepared once by
// PrepareTextColumns() on the source connection (a scan lists the columns
// of many tables); false when SQLite could not list them.
Result<Statement> PrepareTextColumns(sqlite3* db);
bool ReadTextColumns(Statement& cols, const std::string& database, SourceTable* t);

// What stops a scan: a deadline (none when nullopt), a flag another thread
// sets, and SQLite's own interruption of the connection read from.
struct ScanLimits {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;
  size_t chunk_rows = 16384;  // rows read at most per chunk
  // When > 0, a chunk is sized (from what the scan's chunks cost so far) to
  // be read and stored within about this many milliseconds: the store is
  // held that long at most. With a deadline, a chunk is also sized to end
  // before it, so a scan overruns its deadline by a fraction of a chunk.
  double max_chunk_ms = 0;
  size_t max_value_bytes = 64;                  // longer values are prose, not names
  const std::set<std::string>* only = nullptr;  // read only these tables
  bool expired() const;
};

// How many rows the next chunk of a scan reads: limits.chunk_rows, or fewer
// when a chunk must fit max_chunk_ms or end before the deadline (with half
// the time left as a margin), judged by what a column-row has cost so far;
// the first chunk, costed at nothing yet, is kFirstChunkRows at most.
//
// Only chunks of kMeasuredCells column-rows or more are measured. A chunk of
// a few (a small table's whole) costs mostly what any chunk costs, a
// statement and a store transaction, plus whatever the machine's load adds
// just then; divided by its few cells, that would price every later row as
// dear, and on a busy machine the next tables would seem not to fit before a
// deadline that had room for all of them.
class ChunkSizer {
 public:
  static constexpr size_t kFirstChunkRows = 256;
  static constexpr size_t kLeastChunkRows = 16;
  static constexpr size_t kMeasuredCells = 64;

  // `limits` must outlive the sizer.
  explicit ChunkSizer(const ScanLimits& limits) : limits_(limits) {}

  // Rows of `columns` text columns for the next chunk, at `now`; 0 when not
  // even kLeastChunkRows fit before the deadline.
  size_t Rows(size_t columns, std::chrono::steady_clock::time_point now) const;

  // Notes that a chunk of `cells` column-rows cost `ms`, read and stored.
  void Measured(double ms, size_t cells);

 private:
  const ScanLimits& limits_;
  double ms_per_cell_ = 0;  // what reading and storing one column of one row cost so far
};

// Reads the tables of `database` of `db` (the source, named `source` in the
// store) into `store`, chunk by chunk, until every table is done or a limit
// stops it. Registers tables it has not seen and forgets those gone or whose
// CREATE statement changed. Returns true when every table is done.
bool ScanSource(sqlite3* db, const std::string& database, ValueStore& store,
                const std::string& source, const ScanLimits& limits);

// Checks the done tables of `source` against `db`: a rowid table with rows
// past the last one read is reopened (ScanSource then reads only those
// rows); a WITHOUT ROWID table, or one with fewer rows than were read (rows
// deleted or replaced), is forgotten and read again. Deletions are seen by a
// count(*), which reads a whole table or index: only tables of at most
// `count_rows_up_to` rows read get it (0: none, only max(rowid) is read).
// Returns the tables reopened or forgotten. With `deadline`, it stops
// checking once past it and sets `*finished` (when given) to false; tables
// not checked stay as they were. With `checked`, the tables named there
// are skipped and those checked now are added, so that calls with a
// deadline each go on where the last one stopped.
std::set<std::string> CatchUp(
    sqlite3* db, const std::string& database, ValueStore& store, const std::string& source,
    int64_t count_rows_up_to,
    std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt,
    bool* finished = nullptr, std::set<std::string>* checked = nullptr);
constexpr int64_t kCountEveryTable = std::numeric_limits<int64_t>::max();

}  // namespace querypilot
