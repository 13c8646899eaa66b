// Watchdog: stops a statement that runs past its deadline without touching
// the connection's progress handler.
//
// A host's progress handler is the host's: an application may use it for its
// own time limits, and some builds have none at all (better-sqlite3 compiles
// SQLite with SQLITE_OMIT_PROGRESS_CALLBACK). sqlite3_interrupt() is in every
// build and may be called from another thread while the connection is open.
// So one thread for the process, started on first use, keeps each query's
// time account every few milliseconds and interrupts a connection whose step
// is running when its query's budget is spent.
//
// What the host cannot be spared: SQLite keeps a connection interrupted until
// no statement on it runs, and the host's own statement (the one that called
// ask()) always does. A query stopped this way therefore ends the whole SQL
// statement that asked; nothing after it on that statement can run SQL.
//
// The library is linked with -z nodelete (CMakeLists.txt), so the thread never
// outlives its code when SQLite closes the last connection that loaded it. In
// a child made by fork() the thread is started anew on first use.
#pragma once

#include <atomic>
#include <cstdint>

struct sqlite3;

namespace querypilot {

// A monotonic clock in nanoseconds, cheap enough to read around a step
// (CLOCK_MONOTONIC_COARSE: a few nanoseconds, millisecond resolution).
int64_t CoarseNowNs() noexcept;

// One query's registration with the watchdog, with its time budget: what its
// steps may spend inside sqlite3_step in all. Construct it for the life of the
// query; arm it around each sqlite3_step. Its destructor unregisters under the
// watchdog's lock, so once it returns the watchdog never touches `db` again.
//
// The watchdog keeps the account, so that a step costs no clock read: every
// few milliseconds it looks at each slot and charges the time since its last
// look to a slot whose step is running. Over many cheap steps that is the
// share of the time spent inside them; a long step is charged as it runs. A
// step still running once the budget is spent is interrupted.
class WatchdogSlot {
 public:
  WatchdogSlot(sqlite3* db, int64_t budget_ns);
  ~WatchdogSlot();
  WatchdogSlot(const WatchdogSlot&) = delete;
  WatchdogSlot& operator=(const WatchdogSlot&) = delete;

  // A step starts.
  void Arm() noexcept { state_.store(kInStep, std::memory_order_release); }
  // The step ended. True when the watchdog interrupted the connection for this
  // slot, now or before: the connection stays interrupted (see above).
  bool Disarm() noexcept;
  bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }
  // True once the steps were charged the whole budget: the query must not go on.
  bool spent() const noexcept { return spent_ns_.load(std::memory_order_relaxed) >= budget_ns_; }

 private:
  friend class Watchdog;
  // Called by the watchdog, under its lock: charges the time since its last
  // look if a step is running, and interrupts it once the budget is spent.
  void Sample(int64_t now_ns) noexcept;

  static constexpr int kIdle = 0;
  static constexpr int kInStep = 1;
  static constexpr int kFiring = 2;  // being interrupted
  sqlite3* db_;
  const int64_t budget_ns_;
  std::atomic<int> state_{kIdle};
  std::atomic<int64_t> spent_ns_{0};  // written by the watchdog only
  int64_t last_look_ns_ = 0;          // the watchdog's, under its lock
  std::atomic<bool> fired_{false};
};

}  // namespace querypilot
