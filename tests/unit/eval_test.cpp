// The evaluation harness's scoring, dataset loading and metric definitions.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "agent/base/schema_model.h"
#include "agent/sql/sqltokens.h"
#include "eval/dataset.h"
#include "eval/mutants.h"
#include "eval/replay.h"
#include "eval/report.h"
#include "eval/review_report.h"
#include "eval/score.h"

namespace querypilot::eval {
namespace {

class ScoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE t(k TEXT, n INTEGER, r REAL, b BLOB);"
                           "INSERT INTO t VALUES ('a', 1, 1.0, x'00'), ('b', 2, 0.1, NULL),"
                           " ('a', 1, 1.0, x'00'), ('c', NULL, 33.333333333333336, x'ff');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  void TearDown() override { sqlite3_close(db_); }
  QueryResult Run(const char* sql, int timeout_ms = 30000) {
    return ExecuteForScoring(db_, sql, timeout_ms);
  }
  sqlite3* db_ = nullptr;
};

TEST_F(ScoreTest, ValueKeys) {
  EXPECT_EQ(IntegerKey(1), RealKey(1.0, false));  // 1 == 1.0, as in Python
  EXPECT_NE(TextKey("1"), IntegerKey(1));         // '1' != 1
  EXPECT_NE(RealKey(0.30000000000000004, false), RealKey(0.3, false));
  EXPECT_EQ(RealKey(0.30000000000000004, true), RealKey(0.3, true));
  EXPECT_EQ(RealKey(33.333333333333336, true), RealKey(33.33333333333333, true));
  EXPECT_NE(RealKey(33.34, true), RealKey(33.33, true));
  EXPECT_NE(TextKey("a\x1f"), TextKey("a"));
  EXPECT_NE(BlobKey("a"), TextKey("a"));
  EXPECT_NE(NullKey(), TextKey(""));
}

TEST_F(ScoreTest, Comparisons) {
  struct Case {
    const char* gold;
    const char* pred;
    bool set_ok, bag_ok, tolerant_ok;
  } cases[] = {
      // Same rows, other order, no ORDER BY: right under every comparison.
      {"SELECT k FROM t WHERE k <> 'a'", "SELECT k FROM t WHERE k <> 'a' ORDER BY k DESC", true,
       true, true},
      // Duplicates: a set ignores them, a bag does not.
      {"SELECT k FROM t", "SELECT DISTINCT k FROM t", true, false, true},
      // ORDER BY in the gold SQL: the bag comparison respects order.
      {"SELECT k FROM t WHERE k <> 'a' ORDER BY k",
       "SELECT k FROM t WHERE k <> 'a' ORDER BY k DESC", true, false, true},
      {"SELECT k FROM t WHERE k <> 'a' ORDER BY k", "SELECT k FROM t WHERE k <> 'a' ORDER BY 1",
       true, true, true},
      // Integers and integral floats are equal; text and numbers are not.
      {"SELECT n FROM t WHERE k = 'a'", "SELECT r FROM t WHERE k = 'a'", true, true, true},
      {"SELECT n FROM t WHERE k = 'a'", "SELECT CAST(n AS TEXT) FROM t WHERE k = 'a'", false, false,
       false},
      // Last-digit float differences: only the tolerant comparison forgives them.
      {"SELECT r FROM t WHERE k = 'c'", "SELECT 33.33333333333333", false, false, true},
      // Columns count: an extra column is wrong.
      {"SELECT k FROM t", "SELECT k, n FROM t", false, false, false},
      // Spider compares columns in any order (its evaluator tries the
      // orders that fit); BIRD's set comparison does not.
      {"SELECT k, n FROM t", "SELECT n, k FROM t", false, true, false},
      {"SELECT k, n FROM t WHERE k <> 'c' ORDER BY k",
       "SELECT n, k FROM t WHERE k <> 'c' ORDER BY k", false, true, false},
      {"SELECT k, n FROM t WHERE k <> 'c' ORDER BY k",
       "SELECT n, k FROM t WHERE k <> 'c' ORDER BY k DESC", false, false, false},
      // ... but the columns stay tied together within a row.
      {"SELECT k, n FROM t", "SELECT k, n FROM t ORDER BY k", true, true, true},
      {"SELECT k, r FROM t WHERE k <> 'c'", "SELECT k, n * 1.0 FROM t WHERE k <> 'c'", false, false,
       false},
      {"SELECT 'x', 'y' UNION ALL SELECT 'y', 'x'", "SELECT 'x', 'x' UNION ALL SELECT 'y', 'y'",
       false, false, false},
      // A separator byte inside a text value is data, not a column break.
      {"SELECT 'a' || char(31) || 'b', 1", "SELECT 1, 'a' || char(31) || 'b'", false, true, false},
      // NULLs and blobs compare as values.
      {"SELECT n, b FROM t WHERE k IN ('b', 'c')", "SELECT n, b FROM t WHERE n IS NULL OR n = 2",
       true, true, true},
      // A failing prediction is wrong everywhere.
      {"SELECT k FROM t", "SELECT nope FROM t", false, false, false},
  };
  for (const auto& c : cases) {
    QueryResult gold = Run(c.gold);
    ASSERT_TRUE(gold.ok) << c.gold << ": " << gold.error;
    Verdict v = Compare(gold, Run(c.pred), HasOrderBy(c.gold));
    EXPECT_EQ(v.set_ok, c.set_ok) << c.gold << " vs " << c.pred;
    EXPECT_EQ(v.bag_ok, c.bag_ok) << c.gold << " vs " << c.pred;
    EXPECT_EQ(v.tolerant_ok, c.tolerant_ok) << c.gold << " vs " << c.pred;
  }
}

TEST_F(ScoreTest, HasOrderBy) {
  EXPECT_TRUE(HasOrderBy("SELECT a FROM t ORDER BY a"));
  EXPECT_TRUE(HasOrderBy("select a from t order\n by a"));
  EXPECT_FALSE(HasOrderBy("SELECT 'order by' FROM t"));
  EXPECT_FALSE(HasOrderBy("SELECT a FROM t -- ORDER BY a"));
  EXPECT_FALSE(HasOrderBy("SELECT a FROM t GROUP BY a"));
}

TEST_F(ScoreTest, FailuresAndBudget) {
  QueryResult bad = Run("SELECT nope FROM t");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("no such column"), std::string::npos) << bad.error;
  QueryResult slow =
      Run("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c",
          200);
  EXPECT_FALSE(slow.ok);
  EXPECT_TRUE(slow.timed_out);
  // The handler is gone afterwards: a normal query runs.
  EXPECT_TRUE(Run("SELECT count(*) FROM t").ok);
  QueryResult many = ExecuteForScoring(db_, "SELECT * FROM t", 30000, 2);
  EXPECT_FALSE(many.ok);
  EXPECT_NE(many.error.find("more than 2 rows"), std::string::npos) << many.error;
}

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qp-eval-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "spider_mini" / "database" / "shop");
    std::ofstream(dir_ / "spider_mini" / "database" / "shop" / "shop.sqlite") << "";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }
  std::filesystem::path dir_;
};

TEST_F(DatasetTest, LoadsSpiderLayoutAndPredictions) {
  Write(
      dir_ / "spider_mini" / "questions.jsonl",
      R"({"db_id": "shop", "question": "How many  items?", "gold_sql": "SELECT 1"})"
      "\n\n"
      R"({"id": "q2", "db_id": "shop", "question": "Q2", "query": "SELECT 2", "evidence": "e", "difficulty": "simple"})"
      "\n");
  auto qs = LoadQuestions(dir_.string());
  ASSERT_TRUE(qs.ok()) << qs.status().message();
  ASSERT_EQ(qs->size(), 2u);
  EXPECT_EQ((*qs)[0].id, "spider_mini-1");
  EXPECT_EQ((*qs)[0].scoring, "bag");  // a Spider dataset
  EXPECT_EQ((*qs)[1].gold_sql, "SELECT 2");
  EXPECT_EQ((*qs)[1].AskText(), "Q2\nHint: e");
  EXPECT_NE((*qs)[0].db_path.find("database/shop/shop.sqlite"), std::string::npos);

  Write(
      dir_ / "p.jsonl",
      R"({"db_id": "shop", "question": "How many items?", "pred_sql": "SELECT 1", "repaired_sql": "SELECT 3"})"
      "\n");
  auto p = LoadPredictions((dir_ / "p.jsonl").string());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->name, "p");
  const Prediction* found = p->Find((*qs)[0]);  // white space differs
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->repaired_sql, "SELECT 3");
  EXPECT_EQ(p->Find((*qs)[1]), nullptr);
}

TEST_F(DatasetTest, ClearErrors) {
  Write(dir_ / "spider_mini" / "questions.jsonl",
        R"({"db_id": "nowhere", "question": "Q", "gold_sql": "SELECT 1"})");
  auto missing_db = LoadQuestions(dir_.string());
  ASSERT_FALSE(missing_db.ok());
  EXPECT_NE(missing_db.status().message().find("no database for db_id 'nowhere'"),
            std::string::npos);
  Write(dir_ / "spider_mini" / "questions.jsonl", "{not json\n");
  auto bad = LoadQuestions(dir_.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("questions.jsonl:1: not a JSON object"), std::string::npos);
  Write(dir_ / "spider_mini" / "questions.jsonl", R"({"db_id": "shop", "question": "Q"})");
  auto no_gold = LoadQuestions(dir_.string());
  ASSERT_FALSE(no_gold.ok());
  EXPECT_NE(no_gold.status().message().find("needs db_id, question and gold_sql"),
            std::string::npos);
  EXPECT_FALSE(LoadQuestions((dir_ / "absent").string()).ok());
}

// A result whose attempts were scored as listed (true = right).
QuestionResult Scored(std::vector<bool> attempts, bool run_ok = true,
                      std::string first_error = "") {
  QuestionResult q;
  q.scoring = "set";
  q.status = run_ok ? "ok" : "failed";
  q.attempts = static_cast<int>(attempts.size());
  q.llm_calls = q.attempts;
  q.prompt_tokens = 100 * q.attempts;
  q.completion_tokens = 10 * q.attempts;
  for (size_t i = 0; i < attempts.size(); ++i) {
    AttemptScore a;
    a.attempt = static_cast<int>(i + 1);
    a.sql = "SELECT 1";
    a.verdict.set_ok = a.verdict.bag_ok = a.verdict.tolerant_ok = attempts[i];
    if (i == 0) a.error_type = first_error;
    q.attempt_scores.push_back(a);
  }
  if (!run_ok) q.error = "no working SQL";
  return q;
}

TEST(SummaryTest, MetricDefinitions) {
  RunOutput run;
  run.spec.name = "r";
  run.spec.max_attempts = 3;
  run.questions = {
      Scored({true}),                                   // right first time
      Scored({false, true}, true, "column_not_found"),  // corrected
      Scored({false, false, true}),                     // wrong result, corrected on attempt 3
      Scored({true, false}),                            // a mis-repair
      Scored({false}, false, "syntax_error"),           // failed run
  };
  Summary s = Summarise(run);
  EXPECT_EQ(s.questions, 5u);
  EXPECT_EQ(s.first_ok, 2u);
  EXPECT_EQ(s.final_ok, 3u);
  EXPECT_EQ(s.first_failures, 3u);
  EXPECT_EQ(s.corrected, 2u);
  EXPECT_EQ(s.mis_repairs, 1u);
  EXPECT_NEAR(s.CorrectionEffectiveness(), 200.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.avg_attempts, 9.0 / 5);
  EXPECT_DOUBLE_EQ(s.tokens, 110.0 * 9 / 5);
  ASSERT_EQ(s.accuracy_by_attempt.size(), 3u);
  EXPECT_DOUBLE_EQ(s.accuracy_by_attempt[0], 40.0);  // 2 of 5 right after 1 attempt
  EXPECT_DOUBLE_EQ(s.accuracy_by_attempt[1], 40.0);  // +corrected, -mis-repaired
  EXPECT_DOUBLE_EQ(s.accuracy_by_attempt[2], 60.0);
  EXPECT_EQ(s.by_outcome["correct"].n, 2u);
  EXPECT_EQ(s.by_outcome["column_not_found"].final_ok, 1u);
  EXPECT_EQ(s.by_outcome["wrong_result"].n, 1u);
  EXPECT_EQ(s.by_outcome["syntax_error"].final_ok, 0u);
  EXPECT_EQ(s.by_status["failed"], 1u);

  // JSON round trip, as compare reads it.
  Summary back = SummaryFromJson(SummaryToJson(s));
  EXPECT_EQ(back.corrected, s.corrected);
  EXPECT_EQ(back.mis_repairs, s.mis_repairs);
  EXPECT_EQ(back.accuracy_by_attempt, s.accuracy_by_attempt);
  EXPECT_EQ(back.by_outcome["column_not_found"].final_ok, 1u);
}

TEST(SummaryTest, ReportShowsNoSecretOfTheSettings) {
  RunOutput run;
  run.spec.name = "r";
  run.spec.settings = {{"base_url", "https://u:pw-SECRET-1@h/v1?api-version=1&api-key=K-SECRET-2"},
                       {"api_key", "sk-SECRET-3"},
                       {"model", "m"}};
  std::string json = EvalRunToReportJson(run, Summarise(run)).dump();
  EXPECT_EQ(json.find("SECRET"), std::string::npos) << json;
  EXPECT_NE(json.find("https://[redacted]@h/v1?api-version=1&api-key=[redacted]"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"model\":\"m\""), std::string::npos) << json;
}

TEST(SummaryTest, ChartIsSvgWithEveryRun) {
  RunOutput run;
  run.spec.name = "a<b";
  run.spec.max_attempts = 2;
  run.questions = {Scored({false, true})};
  std::string svg = ChartSvg({Summarise(run)});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(Mutants, GenericRulesOverTokensAndKeys) {
  Schema schema;
  schema.tables.push_back(
      {"singer", false, {{"id", "INTEGER", true}, {"name", "TEXT"}, {"country", "TEXT"}}, {}, {}});
  schema.tables.push_back({"song",
                           false,
                           {{"id", "INTEGER", true}, {"singer_id", "INTEGER"}, {"title", "TEXT"}},
                           {{"singer_id", "singer", "id"}},
                           {}});
  const struct {
    const char* kind;
    const char* gold;
    const char* want;  // "" when the rule does not apply
  } cases[] = {
      {"literal_case", "SELECT name FROM singer WHERE country = 'France'",
       "SELECT name FROM singer WHERE country = 'france'"},
      {"literal_case", "SELECT name FROM singer WHERE country = \"usa\"",
       "SELECT name FROM singer WHERE country = \"Usa\""},
      {"literal_typo", "SELECT name FROM singer WHERE country = 'France'",
       "SELECT name FROM singer WHERE country = 'Frace'"},
      {"literal_typo", "SELECT name FROM singer WHERE country LIKE '%an%'", ""},
      {"dropped_filter",
       "SELECT name FROM singer WHERE country = 'France' AND id > 3 ORDER BY name",
       "SELECT name FROM singer WHERE country = 'France' ORDER BY name"},
      {"dropped_filter", "SELECT name FROM singer WHERE id BETWEEN 1 AND 3",
       "SELECT name FROM singer"},
      {"dropped_filter", "SELECT name FROM singer WHERE id = 1 OR id = 2", ""},
      {"missing_limit", "SELECT name FROM singer ORDER BY id DESC LIMIT 1",
       "SELECT name FROM singer ORDER BY id DESC"},
      {"missing_limit", "SELECT name FROM singer LIMIT 1", ""},
      {"wrong_aggregate", "SELECT max(id) FROM singer", "SELECT min ( id ) FROM singer"},
      {"wrong_join_key",
       "SELECT T2.title FROM singer AS T1 JOIN song AS T2 ON T1.id = T2.singer_id",
       "SELECT T2 . title FROM singer AS T1 JOIN song AS T2 ON T1 . id = T2 . \"id\""},
      {"ids_for_names", "SELECT T1.name FROM singer AS T1 JOIN song AS T2 ON T1.id = T2.singer_id",
       "SELECT \"T2\" . \"singer_id\" FROM singer AS T1 JOIN song AS T2 ON T1 . id = T2 . "
       "singer_id"},
  };
  for (const auto& c : cases) {
    std::optional<std::string> got = Mutate(c.kind, c.gold, schema);
    if (*c.want == '\0') {
      EXPECT_FALSE(got.has_value()) << c.kind << ": " << c.gold << " -> " << got.value_or("");
      continue;
    }
    ASSERT_TRUE(got.has_value()) << c.kind << ": " << c.gold;
    EXPECT_EQ(NormaliseSql(*got), NormaliseSql(c.want)) << c.kind << ": " << *got;
  }
}

}  // namespace
}  // namespace querypilot::eval

namespace querypilot::eval {
namespace {

// The request text review replies are keyed by is model_bridge.py's render():
// "=== role ===\ncontent" per message (an Anthropic system member first,
// content blocks one text per line), joined by blank lines, a final newline.
TEST(ReviewRecording, RendersRequestsAsModelBridgeWritesThem) {
  struct Case {
    const char* body;
    const char* text;
  } cases[] = {
      {R"({"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"Q\nline"}]})",
       "=== system ===\nS\n\n=== user ===\nQ\nline\n"},
      {R"({"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},)"
       R"({"role":"user","content":"c"}],"n":3})",
       "=== user ===\na\n\n=== assistant ===\nb\n\n=== user ===\nc\n"},
      {R"({"system":[{"type":"text","text":"S1"},{"type":"text","text":"S2"}],)"
       R"("messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]})",
       "=== system ===\nS1\nS2\n\n=== user ===\nx\n"},
      {R"({"messages":[{"content":"no role"}]})", "=== user ===\nno role\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RenderRequest(nlohmann::json::parse(c.body)), c.text) << c.body;
  }
}

TEST(ReviewRecording, LooksUpByExactTextAndDumpsEachMissingRequestOnce) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("qp-review-rec-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "dump");
  {
    std::ofstream f(dir / "rec.json");
    f << R"([{"request":"=== user ===\nA\n","replies":["first","second"]},)"
      << R"({"request":"=== user ===\nB\n","replies":["only"]}])";
    // A request dumped by an earlier run: numbering goes on after it.
    std::ofstream old(dir / "dump" / "0007.request.txt");
    old << "=== user ===\nOld\n";
  }
  ReviewReplies first;
  ASSERT_TRUE(first.Load((dir / "rec.json").string(), 0).ok());
  ASSERT_TRUE(first.SetDumpFolder((dir / "dump").string()).ok());
  ASSERT_NE(first.Find("=== user ===\nA\n"), nullptr);
  EXPECT_EQ(*first.Find("=== user ===\nA\n"), "first");
  EXPECT_EQ(first.Find("=== user ===\nA"), nullptr);  // the exact text, final newline included
  first.Missing("=== user ===\nC\n");
  first.Missing("=== user ===\nC\n");    // asked again: written once
  first.Missing("=== user ===\nOld\n");  // already in the folder
  first.Missing("=== user ===\nD\n");
  ASSERT_TRUE(first.Flush().ok());
  EXPECT_EQ(first.missing(), 3u);
  EXPECT_EQ(first.dumped(), 2u);
  // Numbered after the folder's highest, in the order of their CRC-32.
  std::set<std::string> texts;
  for (const char* name : {"0008.request.txt", "0009.request.txt"}) {
    std::ifstream dumped(dir / "dump" / name);
    std::stringstream text;
    text << dumped.rdbuf();
    texts.insert(text.str());
  }
  EXPECT_EQ(texts, (std::set<std::string>{"=== user ===\nC\n", "=== user ===\nD\n"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "dump" / "0010.request.txt"));
  ASSERT_TRUE(first.Flush().ok());  // nothing new: nothing written again
  EXPECT_FALSE(std::filesystem::exists(dir / "dump" / "0010.request.txt"));

  ReviewReplies second;  // the second reply; an entry with one answers with it
  ASSERT_TRUE(second.Load((dir / "rec.json").string(), 1).ok());
  EXPECT_EQ(*second.Find("=== user ===\nA\n"), "second");
  EXPECT_EQ(*second.Find("=== user ===\nB\n"), "only");

  std::ofstream(dir / "bad.json") << R"([{"request":"x","replies":[]}])";
  ReviewReplies bad;
  Status st = bad.Load((dir / "bad.json").string(), 0);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("entry 1"), std::string::npos) << st.message();
  EXPECT_FALSE(bad.Load((dir / "none.json").string(), 0).ok());
  std::filesystem::remove_all(dir);
}

TEST(ReviewRecording, ReportCountsCaughtFixedFlaggedAndReplaced) {
  auto question = [](const std::string& id, bool first_ok, bool final_ok, int confidence) {
    QuestionResult q = Scored(first_ok == final_ok ? std::vector<bool>{first_ok}
                                                   : std::vector<bool>{first_ok, final_ok});
    q.id = id;
    q.dataset = "d";
    q.status = "ok";
    q.confidence = confidence;
    return q;
  };
  RunOutput on;
  on.spec.settings = {{"review", "1"}};
  on.questions = {
      question("w1", false, false, 30),  // wrong, caught by its confidence
      question("w2", false, true, 80),   // wrong, fixed
      question("w3", false, false, 80),  // wrong, missed
      question("r1", true, true, 90),    // right, kept
      question("r2", true, true, 40),    // right, flagged
      question("r3", true, false, 70),   // right, replaced by a wrong one
  };
  RunOutput off = on;
  off.spec.settings = {{"review", "1"}, {"review", "0"}};  // the last setting counts
  ReviewReport report = BuildReviewReport({on, off});
  ASSERT_EQ(report.modes.size(), 2u);
  const ReviewGroup& g = report.modes["review on"]["all"];
  EXPECT_EQ(g.questions, 6u);
  EXPECT_EQ(g.wrong, 3u);
  EXPECT_EQ(g.caught, 2u);
  EXPECT_EQ(g.fixed, 1u);
  EXPECT_EQ(g.right, 3u);
  EXPECT_EQ(g.flagged, 1u);
  EXPECT_EQ(g.replaced, 1u);
  EXPECT_EQ(g.bands.at("25-49").n, 2u);
  EXPECT_EQ(g.bands.at("25-49").right, 1u);  // w1 wrong, r2 right
  EXPECT_EQ(g.bands.at("90-100").right, 1u);
  EXPECT_EQ(report.modes["review off"]["d"].questions, 6u);
  size_t halves = 0;
  for (const char* h : {"d A", "d B"}) {
    auto it = report.modes["review on"].find(h);
    if (it != report.modes["review on"].end()) halves += it->second.questions;
  }
  EXPECT_EQ(halves, 6u);
  nlohmann::ordered_json j = ReviewReportJson(report);
  EXPECT_EQ(j["review on"]["all"]["caught"], 2);
  EXPECT_EQ(j["review on"]["all"]["calibration"]["25-49"]["n"], 2);
}

}  // namespace
}  // namespace querypilot::eval
