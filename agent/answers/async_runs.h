// Asynchronous asks (ask_start, ask_result, ask_state): the process's runs
// that wait on a model, and the worker threads that make their model calls.
//
// A run starts on the caller's connection (the reads its prompt needs, as
// ask() makes them), pauses before its model call (Agent::Advance), and is
// kept here under an id unique in the process: any connection of the
// process to the same databases can ask for it. The call is made on one of
// at most `async_threads` worker threads, which hold no SQLite connection and
// no lock; runs beyond them wait in a queue, in order. When the reply is in,
// the run is `ready`, and the next ask_result goes on with it on its own
// connection (checks, execution, result checks), which may pause it again
// for a correction's model call.
//
// States (ask_state, and agent_runs.status while a run waits):
//   pending -> ready -> (pending -> ready ...) -> done | failed
//   pending | ready -> lost (the connection that started it closed, or the
//   process ended: a history file then shows it lost when read again).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "agent/answers/answers.h"
#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/config.h"
#include "agent/memory/history.h"
#include "agent/providers/llm.h"

namespace querypilot {

enum class AsyncState { kPending, kReady, kDone, kFailed, kLost };

// "pending", "ready", "done", "failed", "lost".
std::string_view AsyncStateName(AsyncState state);

// One model call, made on a worker thread: `cancelled` is polled while it
// runs, and says true once the run is abandoned or the process unloads.
using ModelCall = std::function<Result<ChatReply>(const ChatRequest& request,
                                                  const std::function<bool()>& cancelled)>;

class AnswerCache;

// What AsyncRun::Claim found of a run that can go on: done (`answer`) or
// ready (`paused`).
struct ClaimedRun {
  // Done: the answer, whose SQL the caller checks and runs again.
  std::shared_ptr<const StatementAnswer> answer;
  // Ready: the paused run, now the caller's to advance; the run stays busy
  // (no other connection claims it, and its connection's close waits) until
  // the caller gives it back or ends it, under the run's lock.
  Agent::RunStatePtr paused;
  // Ready: where the run is recorded, and the answer cache of the
  // connection that started it; both live while the run is busy.
  History* history = nullptr;
  AnswerCache* answer_cache = nullptr;
};

// One asynchronous run. Fixed fields are set before it is added; the rest
// are under `mu`.
struct AsyncRun {
  AsyncRun() = default;
  AsyncRun(const AsyncRun&) = delete;
  AsyncRun& operator=(const AsyncRun&) = delete;

  int64_t id = 0;
  std::string question;
  // The databases of the connection that started it (DatabasesKey): only a
  // connection with the same may go on with it.
  std::string databases;
  Config config;  // the settings of the start, for the whole run
  std::string provider_name;
  std::string model;
  ModelCall call;
  std::atomic<bool> cancelled{false};

  // Taken before its history's lock (History::Add under it: the run's
  // record when it pauses, ends or is lost).
  Mutex mu ACQUIRED_BEFORE(History::mu_);
  CondVar changed;  // signalled on every change of state or busy
  // The session that started it, the history the run is recorded in and
  // that session's answer cache; null once that session has closed (the
  // run is then lost, or ended).
  const void* owner GUARDED_BY(mu) = nullptr;
  History* history GUARDED_BY(mu) = nullptr;
  AnswerCache* answer_cache GUARDED_BY(mu) = nullptr;
  AsyncState state GUARDED_BY(mu) = AsyncState::kPending;
  bool busy GUARDED_BY(mu) = false;       // a connection is advancing the run now
  Agent::RunStatePtr run GUARDED_BY(mu);  // pending and ready: the paused run
  ChatRequest request GUARDED_BY(mu);     // pending: the call to make
  std::chrono::steady_clock::time_point waiting_since GUARDED_BY(mu){};
  Status error GUARDED_BY(mu);  // failed and lost: the message to give
  std::shared_ptr<const StatementAnswer> answer GUARDED_BY(mu);  // done: SQL, columns, confidence

  // For ask_result: waits up to `wait` while the run is pending or another
  // connection advances it (`interrupted`, polled every 50 ms, ends the
  // wait with an interrupted error), then claims it: done, its answer;
  // ready, its paused run (the run is then busy: see ClaimedRun). Else the
  // error to give: pending (PendingError), failed or lost (its error).
  Result<ClaimedRun> Claim(std::chrono::milliseconds wait, const std::function<bool()>& interrupted)
      EXCLUDES(mu);
  // The error ask_result gives while the run waits on its model: how long
  // it has waited, and how to wait.
  Status PendingError() const REQUIRES(mu);
};

// The process's asynchronous runs and their worker threads. Thread-safe.
class AsyncRuns {
 public:
  AsyncRuns() = default;
  // Stop().
  ~AsyncRuns();
  AsyncRuns(const AsyncRuns&) = delete;
  AsyncRuns& operator=(const AsyncRuns&) = delete;

  // The process's registry (one per loaded library). It is never destroyed,
  // so that a connection closed late in the process's exit still finds it;
  // it is stopped when the process exits.
  static AsyncRuns& Process();
  // Cancels every call in flight and joins the threads: a process (or a
  // library) ending with runs pending never leaves a thread behind. Runs
  // queued afterwards are cancelled at once.
  void Stop() EXCLUDES(mu_);

  // A fresh run id of `history`, unique among this registry's runs and above
  // every id SkipPast was given.
  int64_t NewId(History& history) EXCLUDES(mu_);
  // Ids given from now on are above `id`: a history file read back holds
  // runs of earlier processes up to it, and no run of this process, on any
  // connection, may then be taken for one of them (ask_result, agent_runs,
  // agent_feedback, agent_chart name a run by its id).
  void SkipPast(int64_t id) EXCLUDES(mu_);
  // Keeps `run` under its id; with state pending, queues its call.
  void Add(std::shared_ptr<AsyncRun> run, int threads) EXCLUDES(mu_);
  // Queues the call of a run pending again (a correction), with up to
  // `threads` workers.
  void Submit(std::shared_ptr<AsyncRun> run, int threads) EXCLUDES(mu_);
  // The run with this id, or null.
  std::shared_ptr<AsyncRun> Find(int64_t id) const EXCLUDES(mu_);
  // The runs `owner` started: each waits until no connection is advancing
  // it, then `lost` is called under its lock (run.mu held) for one pending or ready (it
  // records the loss), and its call is cancelled; every one forgets its
  // owner.
  void Abandon(const void* owner, const std::function<void(AsyncRun&)>& lost) EXCLUDES(mu_);
  // Worker threads started so far.
  size_t threads() const EXCLUDES(mu_);

 private:
  void Queue(std::shared_ptr<AsyncRun> run, int threads) REQUIRES(mu_);
  void Work() EXCLUDES(mu_);

  // Taken before a run's own lock when both are held (Add, Abandon), and
  // before a history's (NewId); a run's lock is in turn taken before its
  // history's (AsyncRun::mu).
  mutable Mutex mu_ ACQUIRED_BEFORE(AsyncRun::mu, History::mu_);
  CondVar queued_;
  bool stopping_ GUARDED_BY(mu_) = false;
  int idle_ GUARDED_BY(mu_) = 0;  // workers waiting for a call
  int64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<int64_t, std::shared_ptr<AsyncRun>> runs_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<AsyncRun>> queue_ GUARDED_BY(mu_);
  std::vector<std::thread> workers_ GUARDED_BY(mu_);
};

// What identifies a connection's databases: each one but temp, by name and
// file (device, inode and real path; a memory database by its connection). Two
// connections with the same key read the same data.
std::string DatabasesKey(sqlite3* db);

}  // namespace querypilot
