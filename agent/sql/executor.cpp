#include "agent/sql/executor.h"

#include <fmt/format.h>

#include <mutex>
#include <set>

#include "agent/base/sqlite.h"
#include "agent/sql/sqlite_errors.h"
#include "agent/sql/watchdog.h"

namespace querypilot {
namespace {

// The time budget counts the time spent inside sqlite3_step. With the
// watchdog (the default), the watchdog keeps that account (watchdog.h), so a
// step reads no clock. Otherwise it is read with the coarse clock (a few
// nanoseconds, no system call) at each step's start and end, and from the
// progress handler (every 1000 VM instructions) within a long step. Cheap
// steps count too: a query that streams many rows, each a step of a few
// instructions, runs out of budget like one long step.
struct Budget {
  double spent_ms = 0;  // before this step
  double timeout_ms = 0;
  int64_t start_ns = 0;  // this step's start, CoarseNowNs() time
  bool expired = false;
};

int OnProgress(void* user) noexcept {
  auto* b = static_cast<Budget*>(user);
  double step_ms = static_cast<double>(CoarseNowNs() - b->start_ns) / 1e6;
  if (b->spent_ms + step_ms >= b->timeout_ms) {
    b->expired = true;
    return 1;  // interrupts the statement
  }
  return 0;
}

// PRAGMA query_only on the connection for the length of one step of a query
// that calls code outside SQLite's own library: whatever that code runs on
// the connection while the step lasts, SQLite refuses to write. The flag is
// set while "PRAGMA query_only = 1" is prepared (never stepped: its program
// would expire every statement of the connection), read back to be sure, and
// cleared after, unless the connection held it already (then it stays).
// Connections whose query_only QueryPilot set and could not clear: a step
// the watchdog interrupted leaves the connection unable to prepare anything
// until the statement that asked has ended. Cleared at QueryPilot's next use
// of the connection (SettleQueryOnly).
std::mutex owed_mu;
std::set<sqlite3*>& OwedQueryOnly() {
  static auto* owed = new std::set<sqlite3*>();
  return *owed;
}

class QueryOnlyHold {
 public:
  QueryOnlyHold() = default;
  QueryOnlyHold(const QueryOnlyHold&) = delete;
  QueryOnlyHold& operator=(const QueryOnlyHold&) = delete;
  ~QueryOnlyHold() {
    if (!db_) return;
    Prepare(db_, "PRAGMA query_only = 0");
    if (Read(db_) != 0) {
      std::lock_guard<std::mutex> lock(owed_mu);
      OwedQueryOnly().insert(db_);
    }
  }
  static void Clear(sqlite3* db) { Prepare(db, "PRAGMA query_only = 0"); }
  static int Get(sqlite3* db) { return Read(db); }

  Status Take(sqlite3* db) {
    const int held = Read(db);
    if (held == 1) return Status::Ok();  // the host's own: kept as it is
    if (held == 0) {
      Prepare(db, "PRAGMA query_only = 1");
      if (Read(db) == 1) {
        db_ = db;
        return Status::Ok();
      }
    }
    return Status(
        ErrorKind::kRefused,
        fmt::format(
            "this query calls code outside SQLite's own library (an application's function "
            "or another extension's virtual table), which QueryPilot runs only under PRAGMA "
            "query_only, and the connection did not allow it ({})",
            sqlite3_errmsg(db)));
  }

 private:
  static void Prepare(sqlite3* db, const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
    sqlite3_finalize(stmt);
  }
  // 1 or 0, or -1 when the connection will not say.
  static int Read(sqlite3* db) {
    sqlite3_stmt* stmt = nullptr;
    int out = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA query_only", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      out = sqlite3_column_int(stmt, 0) != 0 ? 1 : 0;
    }
    sqlite3_finalize(stmt);
    return out;
  }

  sqlite3* db_ = nullptr;  // set while QueryPilot holds the flag
};

}  // namespace

void SettleQueryOnly(sqlite3* db) {
  {
    std::lock_guard<std::mutex> lock(owed_mu);
    if (!OwedQueryOnly().count(db)) return;
  }
  QueryOnlyHold::Clear(db);
  if (QueryOnlyHold::Get(db) == 0) {
    std::lock_guard<std::mutex> lock(owed_mu);
    OwedQueryOnly().erase(db);
  }
}

namespace {

Value ReadValue(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(stmt, i));
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt, i);
    case SQLITE_TEXT:
      return std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)),
                         static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
    case SQLITE_BLOB: {
      const void* p = sqlite3_column_blob(stmt, i);
      int n = sqlite3_column_bytes(stmt, i);
      return Blob{p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n))
                    : std::string()};
    }
    default:
      return std::monostate{};
  }
}

size_t ValueBytes(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return s->size();
  if (const auto* b = std::get_if<Blob>(&v)) return b->bytes.size();
  return sizeof(Value);
}

}  // namespace

LiveQuery::LiveQuery(sqlite3* db, Statement stmt, const ExecutionLimits& limits)
    : db_(db),
      stmt_(std::move(stmt)),
      limits_(limits),
      budget_ns_(static_cast<int64_t>(limits.timeout_ms) * 1000000) {
  if (limits_.stop == StopMethod::kWatchdog)
    watchdog_ = std::make_unique<WatchdogSlot>(db_, budget_ns_);
  std::vector<std::string> raw;
  const bool metadata = Host().column_metadata;
  for (int i = 0; i < stmt_.ColumnCount(); ++i) {
    raw.push_back(stmt_.ColumnName(i));
    const char* table = metadata ? sqlite3_column_table_name(stmt_.get(), i) : nullptr;
    const char* column = metadata ? sqlite3_column_origin_name(stmt_.get(), i) : nullptr;
    origins_.emplace_back(table ? table : "", column ? column : "");
  }
  names_ = UniqueColumnNames(raw);
}

int LiveQuery::TimedStep(bool* interrupted, bool* expired) {
  // The connection's length limit is lowered for the step only: between
  // steps, the statements around it run under the host's own limit.
  const int host_length = sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1);
  const bool lower_length = limits_.max_value_bytes > 0 && limits_.max_value_bytes < host_length;
  if (lower_length) sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, limits_.max_value_bytes);
  int rc;
  if (watchdog_) {
    // The watchdog keeps the time account: no clock read here.
    watchdog_->Arm();
    rc = stmt_.Step();
    *interrupted = watchdog_->Disarm();
    *expired = *interrupted || (rc == SQLITE_ROW && watchdog_->spent());
  } else {
    // Two coarse clock reads a step. Within a long step, the progress handler
    // (when asked for) stops it once it passes what is left of the budget;
    // between steps, the budget is checked here.
    const int64_t start = CoarseNowNs();
    bool handler_stopped = false;
    if (limits_.stop == StopMethod::kProgressHandler) {
      Budget budget;
      budget.spent_ms = static_cast<double>(spent_ns_) / 1e6;
      budget.timeout_ms = limits_.timeout_ms;
      budget.start_ns = start;
      sqlite3_progress_handler(db_, 1000, OnProgress, &budget);
      rc = stmt_.Step();
      sqlite3_progress_handler(db_, 0, nullptr, nullptr);
      handler_stopped = budget.expired;
    } else {
      rc = stmt_.Step();
    }
    spent_ns_ += CoarseNowNs() - start;
    *expired = handler_stopped || (rc == SQLITE_ROW && spent_ns_ >= budget_ns_);
  }
  if (lower_length) sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, host_length);
  // A row that came back past the budget ends the query all the same; a
  // connection the watchdog interrupted cannot go on, whatever the step said.
  return *expired ? SQLITE_ABORT : rc;
}

Status LiveQuery::StepOnce(bool* got_row, Row* direct, bool in_place) {
  *got_row = false;
  if (done_) return Status::Ok();
  const bool at_cap = limits_.max_rows > 0 && produced_ >= limits_.max_rows;
  bool interrupted = false;  // by the watchdog's sqlite3_interrupt
  bool expired = false;
  // Released as this returns, after any error message below is read.
  QueryOnlyHold hold;
  if (limits_.hold_query_only) {
    if (Status held = hold.Take(db_); !held.ok()) {
      done_ = true;
      return held;
    }
  }
  const int rc = TimedStep(&interrupted, &expired);
  if (rc == SQLITE_ROW && at_cap) {
    // One row more than the cap allows: the result is cut here.
    truncated_ = true;
    done_ = true;
    return Status::Ok();
  }
  if (rc != SQLITE_ROW) return Ended(rc, interrupted, expired);
  if (!in_place) {
    Row fresh;
    Row& row = direct ? *direct : fresh;
    row.clear();  // a reused row keeps its capacity
    row.reserve(names_.size());
    for (int i = 0; i < static_cast<int>(names_.size()); ++i)
      row.push_back(ReadValue(stmt_.get(), i));
    if (!direct) {
      for (const Value& v : fresh) buffered_bytes_ += ValueBytes(v);
      buffer_.push_back(std::move(fresh));
    }
  }
  ++produced_;
  *got_row = true;
  return Status::Ok();
}

Status LiveQuery::Ended(int rc, bool interrupted, bool expired) {
  done_ = true;
  if (rc == SQLITE_DONE) return Status::Ok();
  if (expired) {
    return Status(
        ErrorKind::kTimeout,
        fmt::format("the query ran past its time budget of {} ms (sql_timeout_ms){}",
                    limits_.timeout_ms,
                    interrupted ? "; SQLite stopped it with sqlite3_interrupt, which ends the "
                                  "statement that asked too"
                                : ""));
  }
  std::string msg = sqlite3_errmsg(db_);
  if ((rc & 0xff) == SQLITE_TOOBIG) {
    return Status(ErrorKind::kValueTooBig,
                  fmt::format("{}: a value in the result would pass {} bytes, the most one value "
                              "of an answer may hold",
                              msg, limits_.max_value_bytes));
  }
  if (rc == SQLITE_INTERRUPT) return Status(ErrorKind::kInterrupted, msg);
  return SqliteFailure(rc, msg);
}

Result<std::unique_ptr<LiveQuery>> LiveQuery::Start(sqlite3* db, Statement stmt,
                                                    const ExecutionLimits& limits) {
  SettleQueryOnly(db);
  std::unique_ptr<LiveQuery> q(new LiveQuery(db, std::move(stmt), limits));
  while (q->buffer_.size() < limits.probe_rows && q->buffered_bytes_ < limits.probe_bytes) {
    bool got = false;
    Status st = q->StepOnce(&got);
    if (!st.ok()) return st;
    if (!got) break;
  }
  q->probed_ = q->buffer_.size();
  q->complete_after_probe_ = q->done_;
  return q;
}

Result<bool> LiveQuery::Advance() {
  if (!buffer_.empty()) return Status::Internal("Advance() with buffered rows left");
  bool got = false;
  Status st = StepOnce(&got, nullptr, true);
  if (!st.ok()) return st;
  if (got) ++returned_;
  return got;
}

Result<bool> LiveQuery::Next(Row* row) {
  if (buffer_.empty()) {
    // Straight from SQLite into the caller's row, with no buffering.
    bool got = false;
    Status st = StepOnce(&got, row);
    if (!st.ok()) return st;
    if (got) ++returned_;
    return got;
  }
  *row = std::move(buffer_.front());
  buffer_.pop_front();
  ++returned_;
  return true;
}

}  // namespace querypilot
