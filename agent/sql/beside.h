// Beside: a reading of the host's data run on a connection of QueryPilot's
// own, in a thread of its own, where SQLite shows that it runs there exactly
// what it would run on the host's connection.
//
// A reply's other readings (the `candidates` setting) would otherwise run on
// the host's connection, one after another and after the first, and there
// nothing may stop a single step that never ends: sqlite3_interrupt would
// end the statement that called ask(), and the progress handler is the
// host's. On a connection of QueryPilot's own the watchdog's
// sqlite3_interrupt stops that connection's statement alone, and the reading
// runs while the host's connection runs the first.
//
// A reading runs beside only when that reads what the host would:
//  - the SQLite in use allows threads (sqlite3_threadsafe() != 0);
//  - the host is in autocommit mode (it has no uncommitted writes, which
//    only its own connection sees);
//  - every database of the host but temp is a file of the default VFS,
//    none held in exclusive locking mode;
//  - the statement calls no function the host's application registered
//    (CallsHostFunction), a built-in's name included; an application's
//    modules and collations are not found beside, and its virtual tables
//    make the programs differ (below);
//  - the program SQLite prepares for it beside is, instruction by
//    instruction, the one it prepares on the host's connection (ProgramOf):
//    a host authorizer that blanks a column (IGNORE), a temp table that
//    hides a table of main, a schema the host has not read yet or a virtual
//    table each make them differ.
// The connection is opened read-only (mode=ro, PRAGMA query_only), the SQL
// is checked again there under QueryPilot's rules (RunVerified), and the
// connection closes with the reading.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/executor.h"
#include "agent/sql/program.h"

struct sqlite3;

namespace querypilot {

// True when `program` (ProgramOf on `host`) calls a function the host's
// application registered on `host` (PRAGMA function_list: not built in),
// a built-in's name included: beside, SQLite's own would run instead. True
// too when the list cannot be read.
bool CallsHostFunction(sqlite3* host, const std::string& program);

// Why a reading does not run beside the host's connection.
enum class NotBeside {
  kNone,              // it can
  kNoThreads,         // SQLite's mutexes are off (Host().threads)
  kHostTransaction,   // the host is inside a transaction
  kNotFiles,          // a database of the host is not a file (a memory database)
  kOtherVfs,          // a database is opened with another VFS than the default
  kExclusiveLocking,  // a database is held in exclusive locking mode
  kCannotOpen,        // a database file could not be opened beside
  kHostCode,          // the SQL calls a function or module that is not SQLite's own
  kOtherProgram,      // SQLite prepares another program for it beside
};

// Why, as a user reads it ("a database of yours is in memory").
std::string_view NotBesideText(NotBeside why);

// The host's databases but temp, as files to open beside it (name, file), or
// why they cannot be: the conditions that hold for the connection as a
// whole, read from its own state (no lock on any database).
struct FilesBeside {
  NotBeside why = NotBeside::kNone;
  std::vector<std::pair<std::string, std::string>> files;
  int busy_timeout_ms = 0;  // the host's PRAGMA busy_timeout
};
FilesBeside FindFilesBeside(sqlite3* host);

// How many readings run beside at once: one per core but the one the host's
// connection runs on (at least one); the others wait their turn, in the
// order they started.
class BesideTurns {
 public:
  explicit BesideTurns(int slots) : slots_(slots < 1 ? 1 : slots) {}
  // A core per slot, but one.
  static std::shared_ptr<BesideTurns> ForThisMachine();
  BesideTurns(const BesideTurns&) = delete;
  BesideTurns& operator=(const BesideTurns&) = delete;

  // The next place in the queue.
  int Take();
  // Waits for `ticket`'s turn and a free slot: true, holding a slot; or
  // false once `stop` is set (the ticket leaves the queue).
  bool Enter(int ticket, const std::atomic<bool>& stop);
  // Gives the slot back.
  void Leave();
  // Wakes the waiters so that they look at their stop flag again.
  void Wake();

 private:
  void Advance() REQUIRES(mu_);  // past tickets that left the queue
  bool Turn(int ticket) const REQUIRES(mu_) { return ticket == next_ && running_ < slots_; }
  mutable Mutex mu_;
  CondVar cv_;
  const int slots_;
  int running_ GUARDED_BY(mu_) = 0;
  int next_ GUARDED_BY(mu_) = 0;           // the ticket whose turn it is
  int issued_ GUARDED_BY(mu_) = 0;         // tickets taken
  std::vector<int> left_ GUARDED_BY(mu_);  // tickets that left the queue before their turn
};

// One reading run beside the host's connection, in a thread of its own.
class ReadingBeside {
 public:
  using Clock = std::chrono::steady_clock;

  // Opens a connection of QueryPilot's own to `files` (read-only) and checks
  // that `sql` prepares there to `host_program` (ProgramOf on the host's
  // connection). Null with `*why` when it cannot run beside.
  static std::unique_ptr<ReadingBeside> Open(const FilesBeside& files, std::string sql,
                                             const std::string& host_program, NotBeside* why);

  // Stops the reading if it still runs and waits for its thread; the query
  // is finalized before the connection closes.
  ~ReadingBeside();
  ReadingBeside(const ReadingBeside&) = delete;
  ReadingBeside& operator=(const ReadingBeside&) = delete;

  // Starts the reading (RunVerified on this connection) in a thread, under
  // `limits` with the watchdog as its stop: past limits.timeout_ms of
  // SQLite time, sqlite3_interrupt stops this connection's statement, and
  // nothing of the host's. The wait for a lock is bounded by it too.
  // It waits for its turn in `turns` first.
  void Start(const ExecutionLimits& limits, std::shared_ptr<BesideTurns> turns);

  // Waits for the reading to end, until `until` at the latest. True once it
  // has ended.
  bool WaitUntil(Clock::time_point until);

  // Asks the reading to end now, without waiting: its statement is
  // interrupted (a no-op once it has ended).
  void Interrupt();

  // Ends the reading now: interrupts this connection until the thread is
  // done. Its result is then kInterrupted, unless it ended first.
  void Stop();

  // Once ended (WaitUntil true, or after Stop): the query, its first rows
  // read, or why it failed; and the time it ran from its turn, in
  // milliseconds.
  Result<std::unique_ptr<LiveQuery>>& result() { return *result_; }
  double ms() const { return ms_; }
  // True when Stop() ended it before it was done.
  bool stopped() const { return stopped_; }
  const std::string& sql() const { return sql_; }

 private:
  ReadingBeside(std::shared_ptr<sqlite3> db, std::string sql)
      : db_(std::move(db)), sql_(std::move(sql)) {}
  void Run(ExecutionLimits limits);

  std::shared_ptr<sqlite3> db_;
  std::string sql_;
  std::shared_ptr<BesideTurns> turns_;
  int ticket_ = 0;
  std::thread thread_;
  Mutex mu_;
  CondVar ended_cv_;
  bool ended_ GUARDED_BY(mu_) = false;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  double ms_ = 0;
  std::optional<Result<std::unique_ptr<LiveQuery>>> result_;
};

}  // namespace querypilot
