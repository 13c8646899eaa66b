// Executor: runs a checked statement within a time budget and a row cap.
//
// LiveQuery::Start() steps the statement until it has `probe_rows` rows or
// the result ends, so that failures which appear only when running (a
// timeout, a type error) are found before the agent accepts the SQL. The rows
// read so far are buffered; the rest stream from the same statement as the
// caller asks for them, read ahead in batches, so memory does not grow with
// the result.
//
// Every step, the probe's and each batch's, runs with PRAGMA query_only held
// on the connection (agent/sql/query_only.h): no code the statement reaches
// (a view's, a generated column's, a collation's, a host function's) can
// write through the connection while it runs. The flag is released before
// Start(), Next() or ReadAhead() returns.
//
// The time budget counts only time spent inside sqlite3_step; it is a timeout
// error when spent. How a step that runs past it is stopped is the caller's
// choice (StopMethod): by default the connection's progress handler is never
// touched.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/value.h"
#include "agent/sql/statement.h"
#include "agent/sql/watchdog.h"

struct sqlite3;

namespace querypilot {

class HostCheck;      // agent/sql/check_connection.h
class QueryOnlyDebt;  // agent/sql/query_only.h
class SqlTarget;      // agent/sql/check_connection.h

// How a step that runs past the time budget is stopped.
enum class StopMethod {
  // The watchdog thread calls sqlite3_interrupt (agent/sql/watchdog.h): works in
  // every SQLite build and leaves the host's progress handler alone, but the
  // interrupt also ends the SQL statement that called ask().
  kWatchdog,
  // QueryPilot's own progress handler around each step: the statement alone
  // stops, so the ask can go on; it replaces (and then clears) whatever
  // progress handler the host had set. Only where the host's SQLite has
  // progress callbacks (HostSqlite::progress_handler).
  kProgressHandler,
  // The budget is checked between steps only: one long step runs to its end.
  // For QueryPilot's own lookups, which must never end the asking statement.
  kBetweenSteps,
};

struct ExecutionLimits {
  int timeout_ms = 10000;
  int64_t max_rows = 10000;  // 0 = no cap
  size_t probe_rows = 256;
  // The largest single value (string or blob) a step may build, enforced by
  // SQLite (SQLITE_LIMIT_LENGTH, lowered around each batch's steps and the
  // reads of their rows, and restored before the batch returns): a
  // randomblob() or zeroblob() of gigabytes fails at once instead of taking
  // the host's memory. Never raises the host's own limit.
  int max_value_bytes = 16 << 20;
  // The probe stops early once the rows it holds pass this many bytes; the
  // rest of the result streams.
  size_t probe_bytes = 8 << 20;
  StopMethod stop = StopMethod::kWatchdog;
  // Past the probe, rows are read ahead in batches of at most this many rows
  // (or, once they pass read_ahead_bytes, fewer), each under one hold of
  // PRAGMA query_only (agent/sql/query_only.h), released before the batch
  // is handed back: the hold's cost is paid per batch, not per row.
  size_t read_ahead_rows = 256;
  size_t read_ahead_bytes = 4 << 20;
};

// Reads the statement's current row into `*row` (one value per result
// column), reusing the storage `*row` already has.
void ReadRow(sqlite3_stmt* stmt, Row* row);

class LiveQuery {
 public:
  // Runs the statement up to the probe. Errors are classified SQLite errors,
  // kTimeout when the budget ran out, kInterrupted for sqlite3_interrupt.
  // A kTimeout from the watchdog leaves the connection interrupted
  // (ConnectionInterrupted() in agent/sql/interrupt.h).
  // `target`: the connection the statement was prepared on, and what
  // QueryPilot keeps for it (agent/sql/check_connection.h).
  static Result<std::unique_ptr<LiveQuery>> Start(const SqlTarget& target, Statement stmt,
                                                  const ExecutionLimits& limits);

  LiveQuery(const LiveQuery&) = delete;
  LiveQuery& operator=(const LiveQuery&) = delete;

  const std::vector<std::string>& column_names() const { return names_; }
  // Where each result column comes from: {table, column} for a plain column
  // reference, {"", ""} for an expression or when SQLite cannot tell.
  const std::vector<std::pair<std::string, std::string>>& column_origins() const {
    return origins_;
  }
  // Rows read by Start() (at most probe_rows).
  size_t probed_rows() const { return probed_; }
  // True when Start() read the whole result.
  bool complete_after_probe() const { return complete_after_probe_; }
  // True once the row cap stopped the result.
  bool truncated() const { return truncated_; }
  int64_t rows_returned() const { return returned_; }
  sqlite3_stmt* statement() const { return stmt_.get(); }
  // Rows read from SQLite but not yet taken by Next().
  const std::deque<Row>& buffered_rows() const { return buffer_; }

  // The next row into `*row`: true if there was one, false at the end, or
  // an error (timeout, runtime error) if the query failed mid-stream. Past
  // the buffered rows, rows are read ahead in a batch and buffered.
  Result<bool> Next(Row* row);

  // For a caller that hands the values on itself: steps a batch of rows
  // (ExecutionLimits::read_ahead_rows and _bytes), calling `visit` at each
  // while it is the statement's current row (sqlite3_column_*); `visit`
  // returns the bytes it kept, which count against the batch's byte cap.
  // Only once the buffered rows are taken (a query started with probe_rows
  // = 0 has none). Returns how many rows were visited, 0 at the end; an
  // error that ends the result after some rows of a batch is returned by
  // the next call, so those rows are handed on first, but for an interrupt
  // or the time budget, which is returned at once (the rows visited are not
  // the caller's to hand on: SQLite ends the statement that asked).
  using RowVisitor = std::function<size_t(sqlite3_stmt*)>;
  Result<size_t> ReadAhead(const RowVisitor& visit);

 private:
  LiveQuery(const SqlTarget& target, Statement stmt, const ExecutionLimits& limits);
  // Steps once; with the row cap reached, a row ends the result as
  // truncated. The row, if any, is the statement's current one.
  Status StepOnce(bool* got_row);
  // Steps up to `max_rows` rows (fewer once `visit` counted `max_bytes`)
  // under one hold of PRAGMA query_only, visiting each. As ReadAhead().
  Result<size_t> Batch(const RowVisitor& visit, size_t max_rows, size_t max_bytes);
  // Batch() into the buffer.
  Result<size_t> BufferBatch(size_t max_rows, size_t max_bytes);
  // One sqlite3_step within the time budget and the value-size cap: its
  // result code, or SQLITE_ABORT with *expired when the budget ran out
  // (*interrupted: the watchdog stopped it with sqlite3_interrupt).
  int TimedStep(bool* interrupted, bool* expired);
  // The query ended with step result `rc` (not SQLITE_ROW): Ok at
  // SQLITE_DONE, else the classified failure.
  Status Ended(int rc, bool interrupted, bool expired);

  sqlite3* db_;
  std::shared_ptr<HostCheck> check_;  // a host's: kept alive, with its debt
  QueryOnlyDebt* query_only_debt_;    // null on a connection of QueryPilot's own
  Statement stmt_;
  ExecutionLimits limits_;
  std::unique_ptr<WatchdogSlot> watchdog_;  // with StopMethod::kWatchdog
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, std::string>> origins_;
  std::deque<Row> buffer_;
  int64_t budget_ns_;  // limits_.timeout_ms
  int64_t spent_ns_ =
      0;  // without the watchdog: time inside sqlite3_step (with it, the slot keeps it)
  size_t probed_ = 0;
  size_t buffered_bytes_ = 0;
  int64_t returned_ = 0;
  int64_t produced_ = 0;
  bool done_ = false;
  bool complete_after_probe_ = false;
  bool truncated_ = false;
  Status pending_;  // an error after a batch's rows, for the next call
};

}  // namespace querypilot
