#include "agent/sql/beside.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <set>
#include <string_view>
#include <vector>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/database_list.h"
#include "agent/sql/program.h"
#include "agent/sql/read_connection.h"
#include "agent/sql/statement.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

#ifdef __linux__
// The nice value of a thread that runs a reading beside: the lowest
// priority, about 1.5% of a default thread's share of a busy core. Still, a
// thread that has not run lately is given a turn soon, so a reading of a
// millisecond ends within a few.
constexpr int kBesideNice = 19;
#endif

}  // namespace

bool CallsHostFunction(sqlite3* host, const std::string& program) {
  const std::set<CalledFunction> called = FunctionsCalled(program);
  if (called.empty()) return false;
  const FunctionDefinitions defs = ReadFunctionDefinitions(host);
  if (!defs.knows_builtin) return true;  // cannot tell: as a host's
  for (const CalledFunction& f : called) {
    // A definition not built in under the name, whatever its arguments.
    for (auto it = defs.kinds.lower_bound({f.name, INT_MIN});
         it != defs.kinds.end() && it->first.name == f.name; ++it) {
      if (it->second.second) return true;
    }
  }
  return false;
}

std::string_view NotBesideText(NotBeside why) {
  switch (why) {
    case NotBeside::kNone:
      return "";
    case NotBeside::kNoThreads:
      return "this SQLite's mutexes are off (built with SQLITE_THREADSAFE=0, or set to "
             "SQLITE_CONFIG_SINGLETHREAD by the program)";
    case NotBeside::kHostTransaction:
      return "your connection is inside a transaction, whose changes only it sees";
    case NotBeside::kNotFiles:
      return "a database of yours is not a file (a memory database only your connection reads)";
    case NotBeside::kOtherVfs:
      return "a database of yours is opened with a VFS other than the default";
    case NotBeside::kExclusiveLocking:
      return "a database of yours is held in exclusive locking mode";
    case NotBeside::kCannotOpen:
      return "a database file of yours could not be opened beside your connection";
    case NotBeside::kHostCode:
      return "it calls a function or module of your application's, which only your connection "
             "has";
    case NotBeside::kOtherProgram:
      return "SQLite prepares another program for it beside your connection (your authorizer, "
             "your temp tables or a virtual table)";
  }
  return "";
}

FilesBeside FindFilesBeside(sqlite3* host) {
  FilesBeside out;
  auto fail = [&](NotBeside why) {
    out.why = why;
    out.files.clear();
    return out;
  };
  if (!Host().threads) return fail(NotBeside::kNoThreads);
  if (!sqlite3_get_autocommit(host)) return fail(NotBeside::kHostTransaction);
  std::optional<std::vector<DatabaseInfo>> list = ListDatabases(host);
  if (!list) return fail(NotBeside::kNotFiles);
  for (DatabaseInfo& d : *list) {
    if (d.name == "temp") continue;
    if (d.file.empty()) return fail(NotBeside::kNotFiles);
    if (PragmaText(host, d.name, "locking_mode") == "exclusive")
      return fail(NotBeside::kExclusiveLocking);
    if (!DefaultVfs(host, d.name)) return fail(NotBeside::kOtherVfs);
    out.files.emplace_back(std::move(d.name), std::move(d.file));
  }
  if (out.files.empty() || out.files[0].first != "main") return fail(NotBeside::kNotFiles);
  const std::string timeout = PragmaText(host, "main", "busy_timeout");
  out.busy_timeout_ms = timeout.empty() ? 0 : std::atoi(timeout.c_str());
  return out;
}

std::shared_ptr<BesideTurns> BesideTurns::ForThisMachine() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::make_shared<BesideTurns>(cores > 1 ? static_cast<int>(cores) - 1 : 1);
}

int BesideTurns::Take() {
  MutexLock lock(&mu_);
  return issued_++;
}

void BesideTurns::Advance() {
  for (auto it = std::find(left_.begin(), left_.end(), next_); it != left_.end();
       it = std::find(left_.begin(), left_.end(), next_)) {
    left_.erase(it);
    ++next_;
  }
}

bool BesideTurns::Enter(int ticket, const std::atomic<bool>& stop) {
  MutexLock lock(&mu_);
  while (!Turn(ticket) && !stop.load()) cv_.Wait(&mu_);
  if (!Turn(ticket)) {
    left_.push_back(ticket);
    Advance();
    cv_.SignalAll();
    return false;
  }
  ++next_;
  Advance();
  ++running_;
  cv_.SignalAll();
  return true;
}

void BesideTurns::Leave() {
  MutexLock lock(&mu_);
  --running_;
  cv_.SignalAll();
}

void BesideTurns::Wake() {
  MutexLock lock(&mu_);
  cv_.SignalAll();
}

std::unique_ptr<ReadingBeside> ReadingBeside::Open(const FilesBeside& files, std::string sql,
                                                   const std::string& host_program,
                                                   NotBeside* why) {
  *why = files.why;
  if (files.why != NotBeside::kNone) return nullptr;
  *why = NotBeside::kCannotOpen;
  Result<sqlite3*> opened = OpenBeside(files.files[0].second, false, SQLITE_OPEN_FULLMUTEX);
  if (!opened.ok()) return nullptr;
  // close_v2: a statement still open on it delays the close instead of
  // leaking the connection and its files.
  std::shared_ptr<sqlite3> db(opened.value(), [](sqlite3* d) { sqlite3_close_v2(d); });
  for (size_t i = 1; i < files.files.size(); ++i) {
    const auto& [name, file] = files.files[i];
    auto attach =
        Statement::Prepare(db.get(), fmt::format("ATTACH ?1 AS {}", QuoteIdentifier(name)));
    if (!attach.ok()) return nullptr;
    attach->Bind(1, BesideUri(file, false));
    if (attach->Step() != SQLITE_DONE) return nullptr;
  }
  sqlite3_busy_timeout(db.get(), files.busy_timeout_ms);
  Result<std::string> program = ProgramOf(db.get(), sql);
  if (!program.ok() || *program != host_program) {
    *why = NotBeside::kOtherProgram;
    return nullptr;
  }
  *why = NotBeside::kNone;
  return std::unique_ptr<ReadingBeside>(new ReadingBeside(std::move(db), std::move(sql)));
}

ReadingBeside::~ReadingBeside() {
  Stop();
  result_.reset();  // the statement is finalized before its connection closes
}

void ReadingBeside::Start(const ExecutionLimits& limits, std::shared_ptr<BesideTurns> turns) {
  turns_ = std::move(turns);
  ticket_ = turns_->Take();
  ExecutionLimits beside = limits;
  // The watchdog interrupts this connection only: the host's is untouched.
  beside.stop = StopMethod::kWatchdog;
  // Waiting for a lock counts against the reading's time too.
  int busy = 0;
  if (auto st = Statement::Prepare(db_.get(), "PRAGMA busy_timeout");
      st.ok() && st->Step() == SQLITE_ROW) {
    busy = static_cast<int>(st->ColumnInt(0));
  }
  sqlite3_busy_timeout(db_.get(), std::min(busy, beside.timeout_ms));
  thread_ = std::thread([this, beside] { Run(beside); });
}

void ReadingBeside::Run(ExecutionLimits limits) {
#ifdef __linux__
  // Below the other threads of the process (on Linux a thread has a nice
  // value of its own): on a busy machine the reading on the host's
  // connection, which the ask waits for first, is not slowed by those
  // beside it; they take the time it leaves.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kBesideNice);
#endif
  std::optional<Result<std::unique_ptr<LiveQuery>>> result;
  const bool entered = turns_->Enter(ticket_, stopping_);
  const Clock::time_point start = Clock::now();
  try {
    if (!entered || stopping_.load()) {
      result.emplace(Status(ErrorKind::kInterrupted, "stopped before its turn"));
    } else {
      result.emplace(RunVerified(SqlTarget::Own(db_.get()), sql_, limits));
    }
  } catch (const std::bad_alloc&) {
    result.emplace(Status(ErrorKind::kOutOfMemory, "out of memory"));
  } catch (const std::exception& e) {
    result.emplace(Status(ErrorKind::kInternal, e.what()));
  } catch (...) {
    result.emplace(Status(ErrorKind::kInternal, "an unknown error while reading beside"));
  }
  if (entered) turns_->Leave();
  MutexLock lock(&mu_);
  result_ = std::move(result);
  ms_ = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  ended_ = true;
  ended_cv_.SignalAll();
}

bool ReadingBeside::WaitUntil(Clock::time_point until) {
  MutexLock lock(&mu_);
  if (!thread_.joinable()) return true;
  while (!ended_) {
    if (!ended_cv_.WaitUntil(&mu_, until)) return ended_;
  }
  return true;
}

void ReadingBeside::Interrupt() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  turns_->Wake();
  MutexLock lock(&mu_);
  if (!ended_) {
    stopped_ = true;
    sqlite3_interrupt(db_.get());
  }
}

void ReadingBeside::Stop() {
  if (!thread_.joinable()) {
    if (!result_) result_.emplace(Status(ErrorKind::kInterrupted, "never started"));
    return;
  }
  stopping_.store(true);
  turns_->Wake();
  {
    MutexLock lock(&mu_);
    // An interrupt reaches a statement that runs; the one sent before the
    // thread's statement began is lost, so it is sent until the thread ends.
    while (!ended_) {
      stopped_ = true;
      sqlite3_interrupt(db_.get());
      ended_cv_.WaitUntil(&mu_, Clock::now() + std::chrono::milliseconds(5));
    }
    if (stopped_ && result_->ok()) stopped_ = false;  // it was done all the same
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace querypilot
