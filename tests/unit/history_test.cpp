#include "agent/memory/history.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

TEST(History, RecordsRoundTripThroughJson) {
  RunRecord r;
  r.id = 7;
  r.question = "Café revenue?";
  r.status = RunStatus::kOk;
  r.sql = "SELECT 1";
  r.attempts = 2;
  r.answer_attempt = 2;
  r.rows = 4;
  r.prompt_tokens = -1;
  r.clarifications = {"Which year?"};
  r.examples = {3, 5};
  r.feedback = "good";
  r.session = "s";
  r.cached_from = 2;
  auto back = RunFromJson(RunToJson(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(RunToJson(*back), RunToJson(r));
  EXPECT_EQ(back->rows, 4);
  EXPECT_EQ(back->examples, (std::vector<int64_t>{3, 5}));

  AttemptRecord a;
  a.run_id = 7;
  a.attempt = 2;
  a.error_type = "column_not_found";
  a.model = "m";
  auto a2 = AttemptFromJson(AttemptToJson(a));
  ASSERT_TRUE(a2);
  EXPECT_EQ(AttemptToJson(*a2), AttemptToJson(a));

  for (const char* bad : {"", "[]", "{\"question\": 1}", "{\"id\": \"x\"}", "not json"}) {
    EXPECT_FALSE(RunFromJson(bad)) << bad;
  }
  EXPECT_FALSE(AttemptFromJson("{\"run_id\": []}"));
}

TEST(History, AttachTakesSavedRunsOnlyWhenEmpty) {
  History h;
  RunRecord old;
  old.id = 41;
  EXPECT_TRUE(h.Attach(nullptr, {old}, {}));
  EXPECT_EQ(h.NextRunId(), 42);
  History used;
  used.NextRunId();
  EXPECT_FALSE(used.Attach(nullptr, {old}, {}));
}

// A sink that records what it was told to forget.
struct ForgetSink : HistorySink {
  std::vector<int64_t> forgotten;
  void SaveRun(const RunRecord&) override {}
  void SaveAttempts(const std::vector<AttemptRecord>&) override {}
  void ForgetRun(int64_t run_id) override { forgotten.push_back(run_id); }
};

TEST(History, ForgetRemovesTheRunAndItsAttemptsOnly) {
  History h;
  auto sink = std::make_shared<ForgetSink>();
  ASSERT_TRUE(h.Attach(sink, {}, {}));
  for (int64_t id = 1; id <= 3; ++id) {
    RunRecord r;
    r.id = h.NextRunId();
    r.feedback = "good";
    AttemptRecord a1, a2;
    a1.run_id = a2.run_id = r.id;
    a1.attempt = 1;
    a2.attempt = 2;
    h.Add(r, {a1, a2});
  }
  EXPECT_TRUE(h.Forget(2));
  EXPECT_FALSE(h.Forget(2));
  EXPECT_FALSE(h.Forget(9));
  std::vector<int64_t> runs, attempt_runs;
  for (const RunRecord& r : h.Runs()) runs.push_back(r.id);
  for (const AttemptRecord& a : h.Attempts()) attempt_runs.push_back(a.run_id);
  EXPECT_EQ(runs, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(attempt_runs, (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(sink->forgotten, (std::vector<int64_t>{2}));
  EXPECT_EQ(h.NextRunId(), 4);  // ids are never reused
}

}  // namespace
}  // namespace querypilot
