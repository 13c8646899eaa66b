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

}  // namespace
}  // namespace querypilot
