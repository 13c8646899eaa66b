// The asynchronous runs' registry: bounded worker threads, a queue that
// loses nothing, and calls cancelled when their connection closes or the
// registry ends; with model calls made by functions, without a network.
#include "agent/answers/async_runs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace querypilot {
namespace {

std::shared_ptr<AsyncRun> PendingRun(int64_t id, ModelCall call) {
  auto run = std::make_shared<AsyncRun>();
  run->id = id;
  run->call = std::move(call);
  AsyncRun& r = *run;
  MutexLock lock(&r.mu);
  r.run = Agent::Begin(id, "q");
  r.state = AsyncState::kPending;
  return run;
}

void SetOwner(AsyncRun& run, const void* owner) {
  MutexLock lock(&run.mu);
  run.owner = owner;
}

// Waits until `done` says so; false if it never does (the test then fails,
// rather than hangs).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 60000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A call that lasts until it is cancelled.
Result<ChatReply> UntilCancelled(std::atomic<int>* started,
                                 const std::function<bool()>& cancelled) {
  started->fetch_add(1);
  while (!cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status(ErrorKind::kInterrupted, "interrupted");
}

TEST(AsyncRunsTest, AHundredRunsShareAtMostTheirThreadsAndNoneIsLost) {
  AsyncRuns runs;
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  ModelCall call = [&](const ChatRequest&, const std::function<bool()>&) -> Result<ChatReply> {
    const int now = in_flight.fetch_add(1) + 1;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    in_flight.fetch_sub(1);
    ChatReply reply;
    reply.text = "SELECT 1";
    return reply;
  };
  std::vector<std::shared_ptr<AsyncRun>> started;
  for (int64_t id = 1; id <= 100; ++id) {
    started.push_back(PendingRun(id, call));
    runs.Add(started.back(), 4);
  }
  auto all_ready = [&] {
    for (auto& run : started) {
      AsyncRun& r = *run;
      MutexLock lock(&r.mu);
      if (r.state != AsyncState::kReady) return false;
    }
    return true;
  };
  ASSERT_TRUE(Eventually(all_ready));
  EXPECT_LE(runs.threads(), 4u);
  EXPECT_LE(most.load(), 4);
  for (int64_t id = 1; id <= 100; ++id) EXPECT_EQ(runs.Find(id), started[id - 1]);
  EXPECT_EQ(runs.Find(101), nullptr);
}

TEST(AsyncRunsTest, ClosingTheConnectionCancelsItsCallsAndMarksItsRunsLost) {
  AsyncRuns runs;
  std::atomic<int> started{0};
  int owner = 0;
  int other = 0;
  auto mine = PendingRun(1, [&](const ChatRequest&, const std::function<bool()>& cancelled) {
    return UntilCancelled(&started, cancelled);
  });
  SetOwner(*mine, &owner);
  auto theirs = PendingRun(2, [&](const ChatRequest&, const std::function<bool()>& cancelled) {
    return UntilCancelled(&started, cancelled);
  });
  SetOwner(*theirs, &other);
  runs.Add(mine, 2);
  runs.Add(theirs, 2);
  ASSERT_TRUE(Eventually([&] { return started.load() == 2; }));
  std::vector<int64_t> lost;
  runs.Abandon(&owner, [&](AsyncRun& run) { lost.push_back(run.id); });
  EXPECT_EQ(lost, std::vector<int64_t>{1});
  {
    AsyncRun& r = *mine;
    MutexLock lock(&r.mu);
    EXPECT_EQ(r.state, AsyncState::kLost);
    EXPECT_EQ(r.owner, nullptr);
    EXPECT_FALSE(r.run);
  }
  EXPECT_TRUE(mine->cancelled.load());
  EXPECT_FALSE(theirs->cancelled.load());
  // The other connection's run goes on; the registry's end cancels it and
  // joins its thread (this test would hang otherwise).
}

TEST(AsyncRunsTest, AFinishedRunIsNotLostWhenItsConnectionCloses) {
  AsyncRuns runs;
  int owner = 0;
  auto run = std::make_shared<AsyncRun>();
  run->id = 5;
  SetOwner(*run, &owner);
  {
    AsyncRun& r = *run;
    MutexLock lock(&r.mu);
    r.state = AsyncState::kDone;
  }
  runs.Add(run, 1);
  bool called = false;
  runs.Abandon(&owner, [&](AsyncRun&) { called = true; });
  EXPECT_FALSE(called);
  {
    AsyncRun& r = *run;
    MutexLock lock(&r.mu);
    EXPECT_EQ(r.state, AsyncState::kDone);
  }
  EXPECT_EQ(runs.threads(), 0u);  // nothing to call: no thread
}

TEST(AsyncRunsTest, IdsAreFreshInTheHistoryAndInTheProcess) {
  AsyncRuns runs;
  History a;
  History b;
  EXPECT_EQ(a.NextRunId(), 1);
  EXPECT_EQ(a.NextRunId(), 2);
  const int64_t first = runs.NewId(a);
  EXPECT_EQ(first, 3);  // after the history's own
  const int64_t second = runs.NewId(b);
  EXPECT_EQ(second, 4);  // after the process's
  EXPECT_EQ(b.NextRunId(), 5);
  EXPECT_EQ(a.NextRunId(), 4);  // a's history never gave 4
}

TEST(AsyncRunsTest, IdsComeAfterTheRunsAHistoryFileHeld) {
  AsyncRuns runs;
  History fresh;  // another connection's, with no history file
  EXPECT_EQ(runs.NewId(fresh), 1);
  runs.SkipPast(40);  // a history file read back holds runs up to 40
  EXPECT_EQ(runs.NewId(fresh), 41);
  runs.SkipPast(7);  // never back
  History other;
  EXPECT_EQ(runs.NewId(other), 42);
}

TEST(AsyncRunsTest, StateNames) {
  EXPECT_EQ(AsyncStateName(AsyncState::kPending), "pending");
  EXPECT_EQ(AsyncStateName(AsyncState::kReady), "ready");
  EXPECT_EQ(AsyncStateName(AsyncState::kDone), "done");
  EXPECT_EQ(AsyncStateName(AsyncState::kFailed), "failed");
  EXPECT_EQ(AsyncStateName(AsyncState::kLost), "lost");
}

}  // namespace
}  // namespace querypilot
