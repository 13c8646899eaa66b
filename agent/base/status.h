// Status: the error value passed across every module boundary of the agent.
//
// Modelled on LevelDB's Status: a small value type, ok() for success, named
// constructors for each failure. The kind is the agent's classification of
// what went wrong (it is what agent_attempts.error_type shows); the message is
// the human-readable text, which never contains a secret.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace querypilot {

enum class ErrorKind {
  kNone = 0,
  // The generated SQL, as SQLite judged it.
  kSyntaxError,
  kTableNotFound,
  kColumnNotFound,
  kAmbiguousColumn,
  kAggregationError,
  kTypeMismatch,
  kFunctionError,
  kExecutionError,
  kTooComplex,   // the query nests or joins past SQLite's limits (parser stack overflow...)
  kValueTooBig,  // a string or blob past the length limit
  kTimeout,
  kInterrupted,
  // Facts about the database or the machine, reported by SQLite's result
  // code: no query can fix them, so the ask ends at once.
  kDatabaseCorrupt,  // SQLITE_CORRUPT: "database disk image is malformed"
  kNotADatabase,     // SQLITE_NOTADB: "file is not a database"
  kDatabaseIo,       // SQLITE_IOERR, SQLITE_CANTOPEN
  kDiskFull,         // SQLITE_FULL
  kOutOfMemory,      // SQLITE_NOMEM
  kDatabaseBusy,     // SQLITE_BUSY, SQLITE_LOCKED past the busy timeout
  // What the critic and the extractor refused before anything ran.
  kRefused,             // a write, ATTACH, a file function, a recursive ask()...
  kMultipleStatements,  // more than one statement in the reply
  kNoSql,               // the model's reply held no SQL
  kUnchangedSql,        // the model repeated the SQL that just failed
  kNeedsClarification,  // the model asked the user questions instead of answering
  // The model provider.
  kProviderAuth,         // 401/403: wrong or missing key
  kProviderRateLimit,    // 429 after the bounded retries
  kProviderUnavailable,  // 5xx after the bounded retries
  kProviderTimeout,      // connect or total timeout
  kProviderConnection,   // refused connection, DNS, TLS
  kProviderRequest,      // other 4xx: bad model name, bad request
  kProviderBadResponse,  // the reply was not the wire format we expect
  // The user and the configuration.
  kNotConfigured,
  kInvalidArgument,
  kInternal,  // the last kind: ErrorKindRows() ends with it
};

// How a run ended. Named in text only where it leaves QueryPilot
// (agent_runs.status, the history file, agent_metrics).
enum class RunStatus {
  kOk,
  kFailed,
  kRefused,
  kProviderError,
  kNotConfigured,
  kInterrupted,
  kNeedsClarification,
  // An asynchronous run (ask_start) before its end: waiting on the model,
  // its reply in and not yet checked (ask_result runs the rest), or lost (the
  // process, or the connection that started it, ended while it waited).
  kPending,
  kReady,
  kLost,
  kInvalid,  // the last status: RunStatusFromName counts up to it
};

// What an error kind says about where the failure lies.
enum class ErrorClass {
  kNone,           // kNone only: no error
  kQuery,          // the generated SQL, as SQLite judged it
  kDatabaseFault,  // a fact about the database or the machine: no new query can fix it
  kRejected,       // refused by the critic or the extractor before anything ran
  kProvider,       // the model provider
  kUsage,          // the user and the configuration
  kInternal,       // QueryPilot's own fault
};

// One error kind: everything QueryPilot derives from it. Adding a kind is
// one enumerator above and its row in ErrorKindRows() (status.cpp); a kind
// without its row does not compile (a static_assert walks the table).
struct ErrorKindRow {
  ErrorKind kind;
  std::string_view name;  // stable snake_case, as agent_attempts.error_type shows it
  ErrorClass error_class;
  // A new attempt at generating SQL might fix it (IsRetryableSqlError).
  bool retryable;
  RunStatus run_status;  // how a run that ends with this kind ended (RunStatusFor)
};

// Every kind's row, in the order of enum ErrorKind (row i is kind i, kNone
// first). The table lives for the whole program.
std::span<const ErrorKindRow> ErrorKindRows();

// The row of `kind`. Never fails: every kind has a row.
const ErrorKindRow& RowOf(ErrorKind kind);

// The stable snake_case name of a kind ("column_not_found"); "" for kNone.
std::string_view ErrorKindName(ErrorKind kind);

// The kind ErrorKindName() names; kNone for "" or a name it never gives.
ErrorKind ErrorKindFromName(std::string_view name);

// True for kinds that a new attempt at generating SQL might fix (the row's
// `retryable`).
bool IsRetryableSqlError(ErrorKind kind);

// True for the provider kinds (ErrorClass::kProvider).
bool IsProviderError(ErrorKind kind);

// True for the facts SQLite reports about the database or the machine
// (ErrorClass::kDatabaseFault): no new query can fix them.
bool IsDatabaseFault(ErrorKind kind);

// The status's name as agent_runs.status shows it ("ok", "failed",
// "refused", "provider_error", "not_configured", "interrupted",
// "needs_clarification", "pending", "ready", "lost", "invalid"): one name a
// status, in RunStatus's order (status.cpp).
std::string_view RunStatusName(RunStatus status);
// The status RunStatusName() names; kFailed for a name it never gives.
RunStatus RunStatusFromName(std::string_view name);

class Status;
// The status of a run that ended with `error`: its kind's row's run_status
// (OK: kOk).
RunStatus RunStatusFor(const Status& error);

class Status {
 public:
  Status() = default;  // OK
  Status(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(ErrorKind::kInvalidArgument, std::move(msg));
  }
  static Status NotConfigured(std::string msg) {
    return Status(ErrorKind::kNotConfigured, std::move(msg));
  }
  static Status Internal(std::string msg) { return Status(ErrorKind::kInternal, std::move(msg)); }

  bool ok() const { return kind_ == ErrorKind::kNone; }
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  // "column_not_found: no such column: nme"
  std::string ToString() const;

 private:
  ErrorKind kind_ = ErrorKind::kNone;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace querypilot
