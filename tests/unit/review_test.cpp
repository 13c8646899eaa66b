// Review: the review's request, the reading of its reply and the record
// kept, on canned input.
#include "agent/quality/review.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace querypilot {
namespace {

TEST(ReviewTest, ParsesTheRecordAndNothingElse) {
  struct Case {
    const char* reply;
    bool readable;
    bool acceptable;
    bool refine;
    size_t issues;
  } cases[] = {
      {R"({"is_acceptable": true, "should_refine": false, "issues": [], "reasoning": "ok"})", true,
       true, false, 0},
      {"```json\n{\"is_acceptable\": false, \"should_refine\": true, \"issues\": [\"wrong "
       "year\"], \"reasoning\": \"2019 asked\"}\n```",
       true, false, true, 1},
      {"Here is my review: {\"is_acceptable\": false, \"should_refine\": false, \"issues\": "
       "[{\"kind\": \"filter\"}]} done",
       true, false, false, 1},
      {"", false, false, false, 0},
      {"looks fine to me", false, false, false, 0},
      {R"({"is_acceptable": "yes", "should_refine": false})", false, false, false, 0},
      {R"({"should_refine": false, "issues": []})", false, false, false, 0},
      {R"({"is_acceptable": true, "should_refine": false, "issues": "none"})", false, false, false,
       0},
      {R"([true, false])", false, false, false, 0},
  };
  for (const Case& c : cases) {
    std::optional<ModelReview> r = ParseReview(c.reply);
    ASSERT_EQ(r.has_value(), c.readable) << c.reply;
    if (!r) continue;
    EXPECT_EQ(r->is_acceptable, c.acceptable) << c.reply;
    EXPECT_EQ(r->should_refine, c.refine) << c.reply;
    EXPECT_EQ(r->issues.size(), c.issues) << c.reply;
  }
  EXPECT_EQ(ParseReview(cases[1].reply)->issues.front(), "wrong year");
  EXPECT_EQ(ParseReview(cases[1].reply)->reasoning, "2019 asked");
  EXPECT_EQ(ParseReview(cases[2].reply)->issues.front(), R"({"kind":"filter"})");
}

TEST(ReviewTest, ThePromptShowsReviewRowsRowsAtMost) {
  const std::vector<std::string> columns = {"name", "n"};
  std::deque<Row> rows;
  for (int64_t i = 0; i < 5; ++i) rows.push_back({std::string("row") + std::to_string(i), i});
  ReviewSubject subject;
  subject.question = "How many? Hint: n counts";
  subject.sql = "SELECT name, n FROM t";
  subject.columns = &columns;
  subject.rows = &rows;
  subject.complete = true;
  subject.review_rows = 2;
  std::string prompt = ReviewPrompt(subject);
  EXPECT_NE(prompt.find("Question: How many? Hint: n counts"), std::string::npos);
  EXPECT_NE(prompt.find("SELECT name, n FROM t"), std::string::npos);
  EXPECT_NE(prompt.find("columns: name, n"), std::string::npos);
  EXPECT_NE(prompt.find("Its rows: 5"), std::string::npos);
  EXPECT_NE(prompt.find(R"({"name":"row1","n":1})"), std::string::npos);
  EXPECT_EQ(prompt.find("row2"), std::string::npos);
  EXPECT_NE(prompt.find("\"is_acceptable\""), std::string::npos);
  // review_rows 0: the names and the count, no value.
  subject.review_rows = 0;
  subject.complete = false;
  prompt = ReviewPrompt(subject);
  EXPECT_NE(prompt.find("Its rows: more than 5"), std::string::npos);
  EXPECT_EQ(prompt.find("row0"), std::string::npos);
}

TEST(ReviewTest, TheRecordSaysItIsTheModelsReview) {
  ModelReview r;
  r.issues = {"wrong column"};
  r.reasoning = "it reads ids";
  auto j = nlohmann::json::parse(ReviewRecordJson(r, "m", "reply"));
  EXPECT_EQ(j["source"], "review");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["is_acceptable"], false);
  EXPECT_EQ(j["issues"][0], "wrong column");
  j = nlohmann::json::parse(ReviewRecordJson(std::nullopt, "m", "no idea"));
  EXPECT_EQ(j["unreadable"], true);
  EXPECT_EQ(j["reply"], "no idea");
  j = nlohmann::json::parse(ReviewRecordJson(std::nullopt, "m", "", "down"));
  EXPECT_EQ(j["error"], "down");
  EXPECT_EQ(ReviewOutcomeName(ReviewOutcome::kNotAccepted), "not accepted");
  EXPECT_NE(ReviewCorrectionPrompt(r, "Fix it.", "Stand by.").find("- wrong column"),
            std::string::npos);
}

// Why an empty answer is doubted: a critical finding first, then a review
// that did not accept it; nothing else.
TEST(ReviewTest, AnEmptyAnswerIsDoubtedForAFindingOrAReviewOnly) {
  using O = ReviewOutcome;
  struct Case {
    std::vector<std::string> critical;
    O review;
    const char* reasoning;
    const char* doubt;
  } cases[] = {
      {{}, O::kNotReviewed, "", ""},
      {{}, O::kAccepted, "fine", ""},
      {{}, O::kUnreadable, "", ""},
      {{"'fiction' does not occur in books.genre"},
       O::kNotReviewed,
       "",
       "'fiction' does not occur in books.genre"},
      {{"first", "second"}, O::kNotAccepted, "wrong", "first"},
      {{},
       O::kNotAccepted,
       "the filter is invented",
       "its review did not accept it: the filter is invented"},
      {{}, O::kNotAccepted, "", "its review did not accept it"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EmptyAnswerDoubt(c.critical, c.review, c.reasoning), c.doubt);
  }
}

}  // namespace
}  // namespace querypilot
