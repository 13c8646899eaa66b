#include "agent/memory/examples.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

RunRecord Record(int64_t id, const char* q, const char* sql, const char* feedback,
                 int answer_attempt = 1, const char* status = "ok") {
  RunRecord r;
  r.id = id;
  r.question = q;
  r.sql = sql;
  r.feedback = feedback;
  r.status = RunStatusFromName(status);
  r.attempts = answer_attempt;
  r.answer_attempt = answer_attempt;
  return r;
}

TEST(Examples, OnlyGoodRunsTeachAndBadNeverDoes) {
  std::vector<RunRecord> history = {
      Record(1, "How many orders were refunded?",
             "SELECT COUNT(*) FROM orders WHERE status = 'refunded'", "good"),
      Record(2, "Total revenue by category", "SELECT 1", "bad"),
      Record(3, "Which products cost most?", "SELECT name FROM products ORDER BY price DESC", ""),
      Record(4, "Orders per country", "SELECT 2", "good", 2),
      Record(5, "Failed one", "", "good", 0, "failed"),
      // The same question and SQL as a bad run: never taught, even marked good elsewhere.
      Record(6, "total revenue by category?", "SELECT 1", "good"),
  };
  auto ids = [](const std::vector<Example>& v) {
    std::vector<int64_t> out;
    for (const auto& e : v) out.push_back(e.run_id);
    return out;
  };
  EXPECT_EQ(ids(TeachingRuns(history, false)), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(ids(TeachingRuns(history, true)), (std::vector<int64_t>{4, 3, 1}));
}

TEST(Examples, MostSimilarFirstAndOnlySimilar) {
  std::vector<Example> candidates = {
      {1, "How many orders were refunded?", "A"},
      {2, "Which products cost the most?", "B"},
      {3, "How many orders came from Canada?", "C"},
      {4, "List the customers from France", "D"},
  };
  auto picked = PickExamples("How many refunded orders came from Spain?", candidates, 3);
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].run_id, 1);  // "refunded" is the rarer word
  EXPECT_EQ(picked[1].run_id, 3);
  EXPECT_GT(picked[0].score, picked[1].score);
  EXPECT_TRUE(PickExamples("What is the weather?", candidates, 3).empty());
  EXPECT_EQ(PickExamples("orders", candidates, 1).size(), 1u);
  EXPECT_TRUE(PickExamples("orders", candidates, 0).empty());
}

TEST(Examples, SessionTurnsAreTheSessionsLastAnsweredRunsOldestFirst) {
  std::vector<RunRecord> history;
  for (int i = 1; i <= 6; ++i) {
    RunRecord r = Record(i, "q", "SELECT 1", "", 1, i == 5 ? "failed" : "ok");
    r.session = i % 2 ? "a" : "b";
    r.question = "q" + std::to_string(i);
    if (i == 3) r.standalone = "q3 on its own";
    history.push_back(r);
  }
  std::vector<std::string> qs;
  for (const auto& e : SessionTurns(history, "a", 3)) qs.push_back(e.question);
  EXPECT_EQ(qs, (std::vector<std::string>{"q1", "q3 on its own"}));  // 5 failed
  EXPECT_EQ(SessionTurns(history, "b", 2).size(), 2u);
  EXPECT_TRUE(SessionTurns(history, "", 3).empty());
  EXPECT_TRUE(SessionTurns(history, "c", 3).empty());
}

}  // namespace
}  // namespace querypilot
