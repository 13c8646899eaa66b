// Watchdog: stops a statement that runs past its deadline without touching
// the connection's progress handler.
//
// A host's progress handler is the host's: an application may use it for its
// own time limits, and some builds have none at all (better-sqlite3 compiles
// SQLite with SQLITE_OMIT_PROGRESS_CALLBACK). sqlite3_interrupt() is in every
// build and may be called from another thread while the connection is open.
// So one thread for the process, started on first use, checks the armed
// deadlines every few milliseconds and interrupts a connection whose step has
// passed its deadline.
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

// A monotonic clock in nanoseconds, cheap enough to read around every step
// (CLOCK_MONOTONIC_COARSE: a few nanoseconds, millisecond resolution).
int64_t CoarseNowNs() noexcept;

// One query's registration with the watchdog. Construct it for the life of the
// query; arm it around each sqlite3_step. Its destructor unregisters under the
// watchdog's lock, so once it returns the watchdog never touches `db` again.
class WatchdogSlot {
 public:
  explicit WatchdogSlot(sqlite3* db);
  ~WatchdogSlot();
  WatchdogSlot(const WatchdogSlot&) = delete;
  WatchdogSlot& operator=(const WatchdogSlot&) = delete;

  // The running step must end by `deadline_ns` (CoarseNowNs() time).
  void Arm(int64_t deadline_ns) noexcept { deadline_.store(deadline_ns, std::memory_order_release); }
  // The step ended. True when the watchdog interrupted the connection for this
  // slot, now or before: the connection stays interrupted (see above).
  bool Disarm() noexcept;
  bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }

 private:
  friend class Watchdog;
  // Called by the watchdog, under its lock: interrupts if still armed and due.
  // Returns the slot's deadline when still armed and not yet due, else 0.
  int64_t Check(int64_t now_ns) noexcept;

  static constexpr int64_t kFiring = -1;
  sqlite3* db_;
  std::atomic<int64_t> deadline_{0};  // 0 = not in a step; kFiring = being interrupted
  std::atomic<bool> fired_{false};
};

}  // namespace querypilot
