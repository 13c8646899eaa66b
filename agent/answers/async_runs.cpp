#include "agent/answers/async_runs.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "agent/base/enum_names.h"
#include "agent/sql/database_list.h"

namespace querypilot {
namespace {

// Finished runs kept for ask_result beyond that many are dropped, oldest first.
constexpr size_t kFinishedKept = 10000;

bool Finished(AsyncState state) {
  return state != AsyncState::kPending && state != AsyncState::kReady;
}

}  // namespace

namespace {

// One name a state, in AsyncState's order.
constexpr std::array<std::string_view, 5> kAsyncStateNames = {"pending", "ready", "done", "failed",
                                                              "lost"};
static_assert(kAsyncStateNames.size() == static_cast<size_t>(AsyncState::kLost) + 1);

}  // namespace

std::string_view AsyncStateName(AsyncState state) {
  return EnumName(kAsyncStateNames, state, "lost");
}

Result<ClaimedRun> AsyncRun::Claim(std::chrono::milliseconds wait,
                                   const std::function<bool()>& interrupted) {
  MutexLock lock(&mu);
  // Waits in steps of 50 ms, so that the host's interrupt stops the wait.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while ((state == AsyncState::kPending || busy) && std::chrono::steady_clock::now() < deadline) {
    changed.WaitUntil(
        &mu, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    if (interrupted()) return Status(ErrorKind::kInterrupted, "interrupted");
  }
  if (busy) return PendingError();
  ClaimedRun claimed;
  switch (state) {
    case AsyncState::kPending:
      return PendingError();
    case AsyncState::kFailed:
    case AsyncState::kLost:
      return error;
    case AsyncState::kDone:
      claimed.answer = answer;
      return claimed;
    case AsyncState::kReady:
      break;
  }
  busy = true;
  claimed.paused = std::move(run);
  claimed.history = history;
  claimed.answer_cache = answer_cache;
  return claimed;
}

Status AsyncRun::PendingError() const {
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting_since).count();
  return Status(ErrorKind::kInterrupted,
                fmt::format("run {0} is pending: waiting on the model for {1:.1f} s; ask again, or "
                            "wait: SELECT * FROM ask_result({0}, 5000)",
                            id, waited));
}

// Process-wide because a run outlives the statement (and may outlive the
// connection) that started it, and ask_result reads it from any connection
// of the process to the same databases; its workers serve every connection.
AsyncRuns& AsyncRuns::Process() {
  static AsyncRuns* const runs = new AsyncRuns();
  static const struct Stopper {
    ~Stopper() { runs->Stop(); }
  } stopper;
  return *runs;
}

AsyncRuns::~AsyncRuns() {
  Stop();
}

void AsyncRuns::Stop() {
  std::vector<std::thread> workers;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, run] : runs_) run->cancelled = true;
    workers = std::move(workers_);
  }
  queued_.SignalAll();
  for (std::thread& t : workers) t.join();
}

int64_t AsyncRuns::NewId(History& history) {
  MutexLock lock(&mu_);
  const int64_t id = history.NextRunIdFrom(next_id_);
  next_id_ = id + 1;
  return id;
}

void AsyncRuns::SkipPast(int64_t id) {
  MutexLock lock(&mu_);
  next_id_ = std::max(next_id_, id + 1);
}

void AsyncRuns::Add(std::shared_ptr<AsyncRun> run, int threads) {
  MutexLock lock(&mu_);
  runs_[run->id] = run;
  // Finished runs beyond the bound go, oldest first.
  size_t finished = 0;
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    AsyncRun& r = *it->second;
    MutexLock run_lock(&r.mu);
    finished += Finished(r.state);
  }
  for (auto it = runs_.begin(); finished > kFinishedKept && it != runs_.end();) {
    bool drop = false;
    {
      AsyncRun& r = *it->second;
      MutexLock run_lock(&r.mu);
      drop = Finished(r.state) && !r.busy;
    }
    if (drop) {
      it = runs_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
  bool pending = false;
  {
    AsyncRun& r = *run;
    MutexLock run_lock(&r.mu);
    pending = r.state == AsyncState::kPending;
  }
  if (pending) Queue(std::move(run), threads);
}

void AsyncRuns::Submit(std::shared_ptr<AsyncRun> run, int threads) {
  MutexLock lock(&mu_);
  Queue(std::move(run), threads);
}

void AsyncRuns::Queue(std::shared_ptr<AsyncRun> run, int threads) {
  if (stopping_) {
    run->cancelled = true;
    return;
  }
  queue_.push_back(std::move(run));
  // A new thread only when no idle one can take the call.
  if (workers_.size() < static_cast<size_t>(std::max(threads, 1)) &&
      static_cast<size_t>(idle_) < queue_.size()) {
    workers_.emplace_back([this] { Work(); });
  }
  queued_.Signal();
}

void AsyncRuns::Work() {
  for (;;) {
    std::shared_ptr<AsyncRun> run;
    {
      MutexLock lock(&mu_);
      ++idle_;
      while (!stopping_ && queue_.empty()) queued_.Wait(&mu_);
      --idle_;
      if (stopping_) return;
      run = std::move(queue_.front());
      queue_.pop_front();
    }
    AsyncRun* r = run.get();
    ChatRequest request;
    {
      MutexLock lock(&r->mu);
      if (r->state != AsyncState::kPending || !r->run) continue;  // lost meanwhile
      request = r->request;
    }
    Result<ChatReply> reply =
        r->cancelled ? Result<ChatReply>(Status(ErrorKind::kInterrupted, "interrupted"))
                     : r->call(request, [r] { return r->cancelled.load(); });
    {
      MutexLock lock(&r->mu);
      if (r->state == AsyncState::kPending && r->run) {
        Agent::GiveReply(*r->run, std::move(reply));
        r->state = AsyncState::kReady;
      }
    }
    r->changed.SignalAll();
  }
}

std::shared_ptr<AsyncRun> AsyncRuns::Find(int64_t id) const {
  MutexLock lock(&mu_);
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : it->second;
}

void AsyncRuns::Abandon(const void* owner, const std::function<void(AsyncRun&)>& lost) {
  std::vector<std::shared_ptr<AsyncRun>> owned;
  {
    MutexLock lock(&mu_);
    for (auto& [id, run] : runs_) {
      AsyncRun& r = *run;
      MutexLock run_lock(&r.mu);
      if (r.owner == owner) owned.push_back(run);
    }
  }
  for (auto& run : owned) {
    AsyncRun& r = *run;
    {
      MutexLock lock(&r.mu);
      while (r.busy) r.changed.Wait(&r.mu);
      if (!Finished(r.state)) {
        lost(r);
        r.state = AsyncState::kLost;
        r.run.reset();
        r.cancelled = true;
      }
      r.owner = nullptr;
      r.history = nullptr;
      r.answer_cache = nullptr;
    }
    r.changed.SignalAll();
  }
}

size_t AsyncRuns::threads() const {
  MutexLock lock(&mu_);
  return workers_.size();
}

std::string DatabasesKey(sqlite3* db) {
  std::string key;
  std::optional<std::vector<DatabaseInfo>> list = ListDatabases(db);
  if (!list) return fmt::format("connection {}", static_cast<const void*>(db));
  for (const DatabaseInfo& d : *list) {
    if (d.name == "temp") continue;
    struct stat st {};
    if (!d.file.empty() && stat(d.file.c_str(), &st) == 0) {
      // The file's identity, and its name: an inode is reused once a file
      // is deleted.
      char* real = realpath(d.file.c_str(), nullptr);
      key += fmt::format("{}={}:{}:{};", d.name, st.st_dev, st.st_ino, real ? real : d.file);
      free(real);
    } else if (!d.file.empty()) {
      key += fmt::format("{}={};", d.name, d.file);
    } else {
      key += fmt::format("{}=memory@{};", d.name, static_cast<const void*>(db));
    }
  }
  return key;
}

}  // namespace querypilot
