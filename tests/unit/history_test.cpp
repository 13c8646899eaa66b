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
  Status SaveRun(const RunRecord&, const std::vector<AttemptRecord>*) override { return Status::Ok(); }
  Status ForgetRun(int64_t run_id) override {
    forgotten.push_back(run_id);
    return Status::Ok();
  }
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
  EXPECT_TRUE(h.Forget(2).ok());
  EXPECT_EQ(h.Forget(2).message(), "there is no run 2 in agent_runs");
  EXPECT_FALSE(h.Forget(9).ok());
  std::vector<int64_t> runs, attempt_runs;
  for (const RunRecord& r : h.Runs()) runs.push_back(r.id);
  for (const AttemptRecord& a : h.Attempts()) attempt_runs.push_back(a.run_id);
  EXPECT_EQ(runs, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(attempt_runs, (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(sink->forgotten, (std::vector<int64_t>{2}));
  EXPECT_EQ(h.NextRunId(), 4);  // ids are never reused
}

// A sink whose writes fail while `fail` is set, as a locked or full file's do.
struct FailingSink : HistorySink {
  bool fail = true;
  std::vector<std::pair<int64_t, size_t>> saved;  // run id, attempts written with it
  Status SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts) override {
    if (fail) return Status(ErrorKind::kDatabaseBusy, "it is locked");
    saved.push_back({run.id, attempts ? attempts->size() : 0});
    return Status::Ok();
  }
  Status ForgetRun(int64_t) override {
    return fail ? Status(ErrorKind::kDiskFull, "database or disk is full") : Status::Ok();
  }
};

TEST(History, AWriteTheSinkFailsIsNamedOnTheRunAndCaughtUpLater) {
  History h;
  auto sink = std::make_shared<FailingSink>();
  ASSERT_TRUE(h.Attach(sink, {}, {}));
  RunRecord r;
  r.id = h.NextRunId();
  AttemptRecord a;
  a.run_id = r.id;
  a.attempt = 1;
  h.Add(r, {a});
  ASSERT_EQ(h.Runs().size(), 1u);  // kept in memory all the same
  EXPECT_EQ(h.Runs()[0].not_kept,
            "history_file did not keep this run (it is locked); it lasts only as long as this connection");
  h.SetRows(r.id, 3, false);  // still failing: still the whole run
  EXPECT_EQ(h.Runs()[0].rows, 3);
  EXPECT_NE(h.Runs()[0].not_kept.find("did not keep this run ("), std::string::npos);
  // A verdict or a forgetting the sink could not write changes nothing.
  Status fb = h.SetFeedback(r.id, "good");
  EXPECT_EQ(fb.kind(), ErrorKind::kDatabaseBusy);
  EXPECT_NE(fb.message().find("the verdict on run 1 is not recorded"), std::string::npos) << fb.message();
  EXPECT_EQ(h.Runs()[0].feedback, "");
  Status fo = h.Forget(r.id);
  EXPECT_EQ(fo.kind(), ErrorKind::kDiskFull);
  EXPECT_NE(fo.message().find("run 1 is not forgotten"), std::string::npos) << fo.message();
  EXPECT_EQ(h.Runs().size(), 1u);
  EXPECT_EQ(h.Attempts().size(), 1u);
  // Once the sink writes again, the next change writes the run whole.
  sink->fail = false;
  h.SetRows(r.id, 4, false);
  EXPECT_EQ(h.Runs()[0].not_kept, "");
  EXPECT_EQ(sink->saved, (std::vector<std::pair<int64_t, size_t>>{{1, 1}}));
  sink->fail = true;
  h.SetExplanation(r.id, "text", -1, -1);  // a kept run: only its change is named
  EXPECT_EQ(h.Runs()[0].not_kept,
            "history_file did not keep this run's explanation (it is locked); it lasts only as long as this "
            "connection");
}

}  // namespace
}  // namespace querypilot
