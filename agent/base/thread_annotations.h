// Thread-safety annotations: which mutex guards which state, checked by clang.
//
// Modelled on LevelDB's port/thread_annotations.h and Abseil's
// base/thread_annotations.h. With clang and -Wthread-safety (the CMake build
// adds it for clang; CI's clang build turns it into an error), reading or
// writing a GUARDED_BY member without holding its mutex, or calling a
// REQUIRES function without it, is a compile-time warning. Other compilers
// see empty macros.
//
// libstdc++'s std::mutex carries no annotations, so state guarded by one is
// not checked: use querypilot::Mutex, MutexLock and CondVar below instead.
//
// Usage:
//   class Counter {
//    public:
//     void Add(int n) EXCLUDES(mu_) {
//       MutexLock lock(&mu_);
//       total_ += n;
//     }
//    private:
//     Mutex mu_;
//     int total_ GUARDED_BY(mu_) = 0;
//   };
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define QP_THREAD_ANNOTATION_ATTRIBUTE(x) __attribute__((x))
#else
#define QP_THREAD_ANNOTATION_ATTRIBUTE(x)
#endif

// A class that is a lock (Mutex below).
#ifndef CAPABILITY
#define CAPABILITY(x) QP_THREAD_ANNOTATION_ATTRIBUTE(capability(x))
#endif
// An RAII class that holds a lock for its lifetime (MutexLock below).
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY QP_THREAD_ANNOTATION_ATTRIBUTE(scoped_lockable)
#endif
// This member is read and written only with the mutex held.
#ifndef GUARDED_BY
#define GUARDED_BY(x) QP_THREAD_ANNOTATION_ATTRIBUTE(guarded_by(x))
#endif
// What this pointer member points to is read and written only with the mutex
// held (the pointer itself is not guarded).
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) QP_THREAD_ANNOTATION_ATTRIBUTE(pt_guarded_by(x))
#endif
// The caller must hold the mutex(es).
#ifndef REQUIRES
#define REQUIRES(...) QP_THREAD_ANNOTATION_ATTRIBUTE(requires_capability(__VA_ARGS__))
#endif
// The caller must not hold the mutex(es): the function takes them itself.
#ifndef EXCLUDES
#define EXCLUDES(...) QP_THREAD_ANNOTATION_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#endif
// The function takes the mutex(es) and returns holding them.
#ifndef ACQUIRE
#define ACQUIRE(...) QP_THREAD_ANNOTATION_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#endif
// The function releases mutex(es) the caller held.
#ifndef RELEASE
#define RELEASE(...) QP_THREAD_ANNOTATION_ATTRIBUTE(release_capability(__VA_ARGS__))
#endif
// The function takes the mutex only when it returns the given value.
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) QP_THREAD_ANNOTATION_ATTRIBUTE(try_acquire_capability(__VA_ARGS__))
#endif
// The function checks (at run time) that the mutex is held.
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) QP_THREAD_ANNOTATION_ATTRIBUTE(assert_capability(x))
#endif
// The function returns a reference to the given mutex.
#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) QP_THREAD_ANNOTATION_ATTRIBUTE(lock_returned(x))
#endif
// Lock order: this mutex is taken before (or after) the given one whenever
// both are held. Clang checks it with -Wthread-safety-beta; the plain
// analysis reads it as the documentation it is.
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) QP_THREAD_ANNOTATION_ATTRIBUTE(acquired_before(__VA_ARGS__))
#endif
#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) QP_THREAD_ANNOTATION_ATTRIBUTE(acquired_after(__VA_ARGS__))
#endif
// The analysis is turned off for this function; say why beside each use.
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS QP_THREAD_ANNOTATION_ATTRIBUTE(no_thread_safety_analysis)
#endif

namespace querypilot {

// A std::mutex that clang's analysis knows as a lock. Not recursive; never
// copied or moved.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (no run-time check: a
  // std::mutex cannot say who holds it).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction (std::lock_guard's part).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable (Abseil's CondVar): every wait is made with the given
// mutex held, and returns holding it. Waits may wake spuriously: callers
// loop on their condition.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) REQUIRES(*mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns false when `deadline` passed before a signal came.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(*mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace querypilot
