#include "agent/sql/watchdog.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>
#include <vector>

#include "agent/base/sqlite.h"
#include "agent/base/thread_annotations.h"

namespace querypilot {

int64_t CoarseNowNs() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The process's watchdog: process-wide so that one thread serves every
// connection's time budget, not a thread per query. Never destroyed: a
// thread blocked on its condition variable at exit must not find it gone.
class Watchdog {
 public:
  static Watchdog& Instance() {
    static Watchdog* w = [] {
      auto* p = new Watchdog();
      pthread_atfork(LockForFork, UnlockAfterFork, [] { Instance().AfterForkInChild(); });
      return p;
    }();
    return *w;
  }

  void Add(WatchdogSlot* slot) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    slot->last_look_ns_ = CoarseNowNs();
    slots_.push_back(slot);
    if (!running_) {
      std::thread(&Watchdog::Loop, this).detach();
      running_ = true;
    }
    // Woken only from its long wait: while it polls, it looks at the new
    // slot within kPollNs anyway, and a burst of short slots (a schema's
    // sample reads, one per table) costs no thread switch each.
    if (parked_) cv_.Signal();
  }

  void Remove(WatchdogSlot* slot) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    slots_.erase(std::remove(slots_.begin(), slots_.end(), slot), slots_.end());
  }

 private:
  // How often the slots are looked at: the most a stopped step overruns.
  static constexpr int64_t kPollNs = 10'000'000;

  Watchdog() = default;

  // How long it goes on polling once no slot is left, before its long wait.
  static constexpr int64_t kLingerNs = 1'000'000'000;

  void Loop() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    int64_t last_busy = CoarseNowNs();
    for (;;) {
      const int64_t now = CoarseNowNs();
      if (slots_.empty() && now - last_busy >= kLingerNs) {
        parked_ = true;
        cv_.Wait(&mu_);
        parked_ = false;
        last_busy = CoarseNowNs();
        continue;
      }
      if (!slots_.empty()) last_busy = now;
      for (WatchdogSlot* s : slots_) s->Sample(now);
      cv_.WaitUntil(&mu_, std::chrono::steady_clock::now() + std::chrono::nanoseconds(kPollNs));
    }
  }

  // The lock is held across fork() (from the prepare handler to the parent's
  // or the child's), so that the child never finds it taken by a thread it
  // does not have. The analysis cannot follow a lock taken in one function
  // and released in another that the C library calls.
  static void LockForFork() NO_THREAD_SAFETY_ANALYSIS { Instance().mu_.Lock(); }
  static void UnlockAfterFork() NO_THREAD_SAFETY_ANALYSIS { Instance().mu_.Unlock(); }

  // fork() copies only the calling thread: the child has no watchdog thread,
  // and the lock (held across fork by the prepare handler) is made anew. No
  // other thread exists in the child to race: unchecked by the analysis.
  void AfterForkInChild() NO_THREAD_SAFETY_ANALYSIS {
    new (&mu_) Mutex();
    new (&cv_) CondVar();
    running_ = false;
    parked_ = false;
  }

  Mutex mu_;
  CondVar cv_;
  std::vector<WatchdogSlot*> slots_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  bool parked_ GUARDED_BY(mu_) = false;  // in its long wait: Add() wakes it
};

WatchdogSlot::WatchdogSlot(sqlite3* db, int64_t budget_ns) : db_(db), budget_ns_(budget_ns) {
  Watchdog::Instance().Add(this);
}

WatchdogSlot::~WatchdogSlot() {
  Watchdog::Instance().Remove(this);
}

bool WatchdogSlot::Disarm() noexcept {
  if (state_.exchange(kIdle, std::memory_order_acq_rel) == kFiring) {
    fired_.store(true, std::memory_order_release);
  }
  return fired();
}

void WatchdogSlot::Sample(int64_t now_ns) noexcept {
  const int64_t since = now_ns - last_look_ns_;
  last_look_ns_ = now_ns;
  int state = state_.load(std::memory_order_acquire);
  if (state != kInStep) return;
  const int64_t spent = spent_ns_.load(std::memory_order_relaxed) + since;
  spent_ns_.store(spent, std::memory_order_relaxed);
  if (spent < budget_ns_) return;
  // Still in the step and out of budget: claim it, so that a step ending right
  // now sees that the connection was interrupted for it (Disarm), never a
  // stray interrupt.
  if (!state_.compare_exchange_strong(state, kFiring, std::memory_order_acq_rel)) return;
  sqlite3_interrupt(db_);
}

}  // namespace querypilot
