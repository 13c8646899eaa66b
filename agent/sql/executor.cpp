#include "agent/sql/executor.h"

#include <fmt/format.h>

#include "agent/base/sqlite.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/query_only.h"
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

}  // namespace

namespace {

// The value of column `i` into `*out`, reusing the string it holds. One
// sqlite3_column_value a column (the connection's mutex taken once), the
// rest read from the value itself.
void ReadValueInto(sqlite3_stmt* stmt, int i, Value* out) {
  sqlite3_value* v = sqlite3_column_value(stmt, i);
  switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER:
      *out = static_cast<int64_t>(sqlite3_value_int64(v));
      return;
    case SQLITE_FLOAT:
      *out = sqlite3_value_double(v);
      return;
    case SQLITE_TEXT: {
      const char* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
      const size_t n = static_cast<size_t>(sqlite3_value_bytes(v));
      if (auto* s = std::get_if<std::string>(out)) {
        s->assign(p ? p : "", n);
      } else {
        *out = std::string(p ? p : "", n);
      }
      return;
    }
    case SQLITE_BLOB: {
      const void* p = sqlite3_value_blob(v);
      const size_t n = static_cast<size_t>(sqlite3_value_bytes(v));
      std::string bytes = p ? std::string(static_cast<const char*>(p), n) : std::string();
      *out = Blob{std::move(bytes)};
      return;
    }
    default:
      *out = std::monostate{};
  }
}

// Lowers the connection's SQLITE_LIMIT_LENGTH to `max_bytes` (never raises
// it; 0: no cap) for its lifetime, and puts the host's own limit back. Held
// around a batch's steps and the reads of their rows, which run no SQL but
// the statement's own: between QueryPilot's calls, the host's statements
// run under the host's limit.
class LengthLimit {
 public:
  LengthLimit(sqlite3* db, int max_bytes)
      : db_(db), host_(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1)) {
    lowered_ = max_bytes > 0 && max_bytes < host_;
    if (lowered_) sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, max_bytes);
  }
  ~LengthLimit() {
    if (lowered_) sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, host_);
  }
  LengthLimit(const LengthLimit&) = delete;
  LengthLimit& operator=(const LengthLimit&) = delete;

 private:
  sqlite3* db_;
  int host_;
  bool lowered_ = false;
};

size_t ValueBytes(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return s->size();
  if (const auto* b = std::get_if<Blob>(&v)) return b->bytes.size();
  return sizeof(Value);
}

}  // namespace

void ReadRow(sqlite3_stmt* stmt, Row* row) {
  const int n = sqlite3_column_count(stmt);
  row->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ReadValueInto(stmt, i, &(*row)[static_cast<size_t>(i)]);
}

LiveQuery::LiveQuery(const SqlTarget& target, Statement stmt, const ExecutionLimits& limits)
    : db_(target.db()),
      check_(target.shared_check()),
      query_only_debt_(target.query_only_debt()),
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
  // A row that came back past the budget ends the query all the same; a
  // connection the watchdog interrupted cannot go on, whatever the step said.
  return *expired ? SQLITE_ABORT : rc;
}

Status LiveQuery::StepOnce(bool* got_row) {
  *got_row = false;
  if (done_) return Status::Ok();
  const bool at_cap = limits_.max_rows > 0 && produced_ >= limits_.max_rows;
  bool interrupted = false;  // by the watchdog's sqlite3_interrupt
  bool expired = false;
  const int rc = TimedStep(&interrupted, &expired);
  if (rc == SQLITE_ROW && at_cap) {
    // One row more than the cap allows: the result is cut here.
    truncated_ = true;
    done_ = true;
    return Status::Ok();
  }
  if (rc != SQLITE_ROW) return Ended(rc, interrupted, expired);
  ++produced_;
  *got_row = true;
  return Status::Ok();
}

Result<size_t> LiveQuery::Batch(const RowVisitor& visit, size_t max_rows, size_t max_bytes) {
  if (!pending_.ok()) {
    Status st = std::move(pending_);
    pending_ = Status::Ok();
    return st;
  }
  if (done_ || max_rows == 0) return size_t{0};
  // One hold for the batch, released as this returns, after any error
  // message is read (Ended reads sqlite3_errmsg before the hold's own
  // prepares replace it).
  QueryOnlyHold hold;
  if (Status held = hold.Take(db_, query_only_debt_); !held.ok()) {
    done_ = true;
    return held;
  }
  // The value-size cap for the batch's steps; the host's own limit is back
  // before this returns.
  LengthLimit length(db_, limits_.max_value_bytes);
  size_t rows = 0;
  size_t bytes = 0;
  while (rows < max_rows && bytes < max_bytes) {
    bool got = false;
    Status st = StepOnce(&got);
    if (!st.ok()) {
      // An interrupt (the host's, or the watchdog's at the time budget)
      // leaves the connection interrupted while the statement that asked
      // runs: SQLite would end that statement before the rows visited could
      // be handed on, so the error is returned now, with none of them.
      if (rows == 0 || st.kind() == ErrorKind::kInterrupted || st.kind() == ErrorKind::kTimeout)
        return st;
      pending_ = std::move(st);  // the rows read first, then the error
      break;
    }
    if (!got) break;
    bytes += visit(stmt_.get());
    ++rows;
  }
  return rows;
}

Result<size_t> LiveQuery::BufferBatch(size_t max_rows, size_t max_bytes) {
  return Batch(
      [this](sqlite3_stmt* stmt) {
        Row row;
        row.reserve(names_.size());
        ReadRow(stmt, &row);
        size_t bytes = 0;
        for (const Value& v : row) bytes += ValueBytes(v);
        buffered_bytes_ += bytes;
        buffer_.push_back(std::move(row));
        return bytes;
      },
      max_rows, max_bytes);
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

Result<std::unique_ptr<LiveQuery>> LiveQuery::Start(const SqlTarget& target, Statement stmt,
                                                    const ExecutionLimits& limits) {
  SettleQueryOnly(target.db(), target.query_only_debt());
  std::unique_ptr<LiveQuery> q(new LiveQuery(target, std::move(stmt), limits));
  // The probe: one batch, all of its rows or its error.
  Result<size_t> probed = q->BufferBatch(limits.probe_rows, limits.probe_bytes);
  if (!probed.ok()) return probed.status();
  if (!q->pending_.ok()) return std::move(q->pending_);
  q->probed_ = q->buffer_.size();
  q->complete_after_probe_ = q->done_;
  return q;
}

Result<size_t> LiveQuery::ReadAhead(const RowVisitor& visit) {
  if (!buffer_.empty()) return Status::Internal("ReadAhead() with buffered rows left");
  Result<size_t> rows = Batch(visit, limits_.read_ahead_rows, limits_.read_ahead_bytes);
  if (rows.ok()) returned_ += static_cast<int64_t>(rows.value());
  return rows;
}

Result<bool> LiveQuery::Next(Row* row) {
  if (buffer_.empty()) {
    buffered_bytes_ = 0;
    Result<size_t> read = BufferBatch(limits_.read_ahead_rows, limits_.read_ahead_bytes);
    if (!read.ok()) return read.status();
    if (read.value() == 0) return false;
  }
  *row = std::move(buffer_.front());
  buffer_.pop_front();
  ++returned_;
  return true;
}

}  // namespace querypilot
