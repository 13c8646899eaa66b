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
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "agent/answers.h"
#include "agent/base/status.h"
#include "agent/config.h"
#include "agent/providers/llm.h"

namespace querypilot {

enum class AsyncState { kPending, kReady, kDone, kFailed, kLost };

// "pending", "ready", "done", "failed", "lost".
std::string_view AsyncStateName(AsyncState state);

// One model call, made on a worker thread: `cancelled` is polled while it
// runs, and says true once the run is abandoned or the process unloads.
using ModelCall = std::function<Result<ChatReply>(const ChatRequest& request,
                                                  const std::function<bool()>& cancelled)>;

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

  std::mutex mu;
  std::condition_variable changed;  // notified on every change of state or busy
  // The session that started it, and the history the run is recorded in;
  // null once that session has closed (the run is then lost, or ended).
  const void* owner = nullptr;
  History* history = nullptr;
  AsyncState state = AsyncState::kPending;
  bool busy = false;       // a connection is advancing the run now
  Agent::RunStatePtr run;  // pending and ready: the paused run
  ChatRequest request;     // pending: the call to make
  std::chrono::steady_clock::time_point waiting_since{};
  Status error;                                   // failed and lost: the message to give
  std::shared_ptr<const StatementAnswer> answer;  // done: its SQL, columns, confidence
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
  void Stop();

  // A fresh run id of `history`, unique among this registry's runs.
  int64_t NewId(History& history);
  // Keeps `run` under its id; with state pending, queues its call.
  void Add(std::shared_ptr<AsyncRun> run, int threads);
  // Queues the call of a run pending again (a correction), with up to
  // `threads` workers.
  void Submit(std::shared_ptr<AsyncRun> run, int threads);
  // The run with this id, or null.
  std::shared_ptr<AsyncRun> Find(int64_t id) const;
  // The runs `owner` started: each waits until no connection is advancing
  // it, then `lost` is called under its lock for one pending or ready (it
  // records the loss), and its call is cancelled; every one forgets its
  // owner.
  void Abandon(const void* owner, const std::function<void(AsyncRun&)>& lost);
  // Worker threads started so far.
  size_t threads() const;

 private:
  void Queue(std::shared_ptr<AsyncRun> run, int threads);  // mu_ held
  void Work();

  mutable std::mutex mu_;
  std::condition_variable queued_;
  bool stopping_ = false;
  int idle_ = 0;  // workers waiting for a call
  int64_t next_id_ = 1;
  std::map<int64_t, std::shared_ptr<AsyncRun>> runs_;
  std::deque<std::shared_ptr<AsyncRun>> queue_;
  std::vector<std::thread> workers_;
};

// What identifies a connection's databases: each one but temp, by name and
// file (device, inode and real path; a memory database by its connection). Two
// connections with the same key read the same data.
std::string DatabasesKey(sqlite3* db);

}  // namespace querypilot
