// The session: what each SQL entry point does, through Session's methods, on
// an in-memory database and a model server on 127.0.0.1 that speaks the
// OpenAI wire format (real HTTP, real provider code, nothing off loopback).
#include "agent/session/session.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/answers/async_runs.h"
#include "agent/memory/history.h"
#include "agent/memory/metrics.h"
#include "agent/sql/executor.h"
#include "tests/review_request.h"

namespace querypilot {
namespace {

// Chat completions on 127.0.0.1: each request is answered with the next
// scripted text (an empty one when the script has ended) and kept. Reviews of
// an answer (`review`, on by default) are kept apart and accept the answer
// unless a review reply is scripted.
class LoopbackModel {
 public:
  LoopbackModel() {
    server_.Post(
        "/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu_);
          nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
          std::string text;
          if (IsReview(body)) {
            reviews_.push_back(std::move(body));
            text = test_models::kAcceptingReview;
            if (!review_replies_.empty()) {
              text = review_replies_.front();
              review_replies_.pop_front();
            }
          } else {
            requests_.push_back(std::move(body));
            if (!replies_.empty()) {
              text = replies_.front();
              replies_.pop_front();
            }
          }
          nlohmann::json reply = {{"choices",
                                   {{{"index", 0},
                                     {"message", {{"role", "assistant"}, {"content", text}}},
                                     {"finish_reason", "stop"}}}},
                                  {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}};
          res.set_content(reply.dump(), "application/json");
        });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoopbackModel() {
    server_.stop();
    thread_.join();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  void Say(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.push_back(text);
  }
  void Review(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    review_replies_.push_back(text);
  }
  // Calls other than reviews.
  size_t calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  size_t reviews() {
    std::lock_guard<std::mutex> lock(mu_);
    return reviews_.size();
  }
  nlohmann::json request(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.at(i);
  }

 private:
  static bool IsReview(const nlohmann::json& body) {
    const nlohmann::json& messages = body.value("messages", nlohmann::json::array());
    return !messages.empty() && messages[0].value("role", "") == "system" &&
           test_models::IsReviewSystemText(messages[0].value("content", ""));
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::deque<std::string> replies_;
  std::deque<std::string> review_replies_;
  std::vector<nlohmann::json> requests_;
  std::vector<nlohmann::json> reviews_;
};

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The session reads these when it is made and at each ask: none may come
    // from the environment the tests run in.
    for (const char* v :
         {"QUERYPILOT_PROVIDER", "QUERYPILOT_BASE_URL", "QUERYPILOT_MODEL", "QUERYPILOT_API_KEY",
          "QUERYPILOT_MAX_ATTEMPTS", "QUERYPILOT_REQUEST_TIMEOUT_MS", "QUERYPILOT_SQL_TIMEOUT_MS",
          "QUERYPILOT_MAX_ROWS", "QUERYPILOT_ANSWER_CACHE", "QUERYPILOT_CORRECTION_MODEL",
          "QUERYPILOT_EXPLAIN_MODEL", "QUERYPILOT_CLARIFY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
          "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}) {
      unsetenv(v);
    }
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
                           "INSERT INTO customers(name, city) VALUES ('Ada', 'London'), "
                           "('Grace', 'New York'), ('Linus', 'Helsinki');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  void TearDown() override {
    session_.reset();
    sqlite3_close(db_);
  }
  // A session on the connection, its model the loopback one.
  Session& Connect() {
    session_ = std::make_unique<Session>(db_);
    EXPECT_TRUE(session_->Set("base_url", model_.base_url()).ok());
    EXPECT_TRUE(session_->Set("model", "test-model").ok());
    return *session_;
  }
  // Every row of a stream, each as its values' text.
  static std::vector<std::string> Drain(AnswerStream& stream) {
    std::vector<std::string> rows;
    Row row;
    for (;;) {
      Result<bool> more = stream.Next(&row);
      EXPECT_TRUE(more.ok()) << more.status().message();
      if (!more.ok() || !more.value()) break;
      std::string shown;
      for (const Value& v : row) {
        if (const auto* s = std::get_if<std::string>(&v)) shown += (shown.empty() ? "" : "|") + *s;
        if (const auto* i = std::get_if<int64_t>(&v))
          shown += (shown.empty() ? "" : "|") + std::to_string(*i);
      }
      rows.push_back(shown);
    }
    return rows;
  }

  sqlite3* db_ = nullptr;
  LoopbackModel model_;
  std::unique_ptr<Session> session_;
};

TEST_F(SessionTest, AskRunsTheAgentAndStreamsTheRowsWhichTheRunCounts) {
  Session& s = Connect();
  model_.Say("SELECT name FROM customers ORDER BY id");
  Result<AskedRows> asked = s.Ask("What are the customers' names?");
  ASSERT_TRUE(asked.ok()) << asked.status().message();
  EXPECT_EQ(model_.calls(), 1u);
  EXPECT_EQ(model_.request(0)["model"], "test-model");
  ASSERT_TRUE(asked->answer);
  EXPECT_EQ(asked->answer->run_id, 1);
  EXPECT_EQ(asked->answer->sql, "SELECT name FROM customers ORDER BY id");
  EXPECT_EQ(asked->answer->column_names, std::vector<std::string>{"name"});
  EXPECT_TRUE(asked->answer->complete);  // three rows: kept whole for the statement
  EXPECT_EQ(asked->answer->rows.size(), 3u);
  ASSERT_TRUE(asked->stream);
  EXPECT_EQ(Drain(*asked->stream), (std::vector<std::string>{"Ada", "Grace", "Linus"}));

  std::vector<RunRecord> runs = s.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].question, "What are the customers' names?");
  EXPECT_EQ(runs[0].status, RunStatus::kOk);
  EXPECT_EQ(runs[0].provider, "openai");
  EXPECT_EQ(runs[0].model, "test-model");
  EXPECT_EQ(runs[0].rows, 3);  // recorded when the rows ended
  EXPECT_EQ(s.Attempts().size(), 1u);
  EXPECT_FALSE(s.Metrics().empty());
}

// A record table is one row of RecordTables(): its name, its columns and
// its rows, each with a cell per column.
TEST_F(SessionTest, EachRecordTableIsOneRowWhoseRowsHaveACellPerColumn) {
  Session& s = Connect();
  model_.Say("SELECT name FROM customers ORDER BY id");
  {
    Result<AskedRows> asked = s.Ask("What are the customers' names?");
    ASSERT_TRUE(asked.ok()) << asked.status().message();
    Drain(*asked->stream);
  }
  ASSERT_TRUE(s.Describe("customers", std::string("who bought"), false).ok());
  std::vector<std::string> names;
  for (const RecordTableSpec& table : RecordTables()) {
    names.emplace_back(table.name);
    const std::vector<std::string>& columns = table.columns();
    EXPECT_FALSE(columns.empty()) << table.name;
    const std::unique_ptr<RecordRows> rows = table.rows(s, {});
    EXPECT_GT(rows->size(), 0u) << table.name;
    // Each row has a cell per column: past the last, a null one.
    for (size_t r = 0; r < rows->size(); ++r) {
      EXPECT_FALSE(std::holds_alternative<std::monostate>(rows->Cell(r, 0).value)) << table.name;
      EXPECT_TRUE(std::holds_alternative<std::monostate>(rows->Cell(r, columns.size()).value))
          << table.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"agent_runs", "agent_attempts", "agent_metrics",
                                             "agent_prompts", "agent_descriptions"}));
  EXPECT_EQ(RecordTables()[0].rows(s, {})->size(), s.Runs().size());
  EXPECT_EQ(RecordTables()[4].rows(s, {})->size(), s.Descriptions().size());
}

TEST_F(SessionTest, QuestionsAreCheckedBeforeAnyModelCall) {
  Session& s = Connect();
  ASSERT_TRUE(s.Set("max_question_bytes", "16").ok());
  struct Case {
    std::string question;
    const char* says;
  } cases[] = {
      {"", "the question is empty"},
      {" \t\n", "the question is empty"},
      {"seventeen bytes!!", "the question is 17 bytes long; the limit is 16"},
      {"caf\xc3", "the question is not valid UTF-8"},
      {std::string("who\0?", 5), "the question contains a NUL character"},
  };
  for (const auto& c : cases) {
    Result<AskedRows> asked = s.Ask(c.question);
    ASSERT_FALSE(asked.ok()) << c.says;
    EXPECT_EQ(asked.status().kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(asked.status().message().find(c.says), std::string::npos) << asked.status().message();
    Result<std::string> sql = s.AskSql(c.question);
    ASSERT_FALSE(sql.ok()) << c.says;
    EXPECT_EQ(sql.status().message(), asked.status().message());
  }
  EXPECT_EQ(model_.calls(), 0u);
  EXPECT_TRUE(s.Runs().empty());
}

TEST_F(SessionTest, AFailedRunIsAnErrorThatNamesTheRun) {
  Session& s = Connect();
  ASSERT_TRUE(s.Set("max_attempts", "1").ok());
  model_.Say("SELECT nickname FROM customers");
  Result<AskedRows> asked = s.Ask("What are their nicknames?");
  ASSERT_FALSE(asked.ok());
  EXPECT_NE(asked.status().message().find("nickname"), std::string::npos)
      << asked.status().message();
  ASSERT_EQ(s.Runs().size(), 1u);
  EXPECT_NE(s.Runs()[0].status, RunStatus::kOk);
}

TEST_F(SessionTest, AskSqlGivesTheCheckedSqlOfARecordedRun) {
  Session& s = Connect();
  model_.Say("SELECT city FROM customers WHERE name = 'Ada'");
  Result<std::string> sql = s.AskSql("Where does Ada live?");
  ASSERT_TRUE(sql.ok()) << sql.status().message();
  EXPECT_EQ(sql.value(), "SELECT city FROM customers WHERE name = 'Ada'");
  ASSERT_EQ(s.Runs().size(), 1u);
  EXPECT_EQ(s.Runs()[0].sql, sql.value());
}

TEST_F(SessionTest, NoEndpointMeansNoModelCall) {
  Session& s = Connect();
  ASSERT_TRUE(s.Set("base_url", "").ok());
  Result<AskedRows> asked = s.Ask("How many customers are there?");
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.status().kind(), ErrorKind::kNotConfigured);
  EXPECT_NE(asked.status().message().find("no model endpoint is configured"), std::string::npos)
      << asked.status().message();
  EXPECT_EQ(model_.calls(), 0u);
}

TEST_F(SessionTest, AnAnswerTableAsksOnceAndEachScanRunsItsSqlAgain) {
  Session& s = Connect();
  model_.Say("SELECT name, city FROM customers ORDER BY id");
  auto spec = s.AnswerTable("temp", "people", "Who lives where?");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec.value()->answer_columns, 2);
  std::vector<std::string> names;
  for (const AnswerColumn& c : spec.value()->columns) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"name", "city", "run_id", "sql", "confidence",
                                             "confidence_reason"}));
  EXPECT_EQ(spec.value()->confidence_reason,
            "one reading, no finding, the model's review accepted it");

  // SQLite reconnecting the table after a schema reset: the same answer, no
  // model call.
  auto again = s.AnswerTable("TEMP", "People", "Who lives where?");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), spec.value());
  EXPECT_EQ(model_.calls(), 1u);

  // A scan sees the rows as they are now.
  ASSERT_EQ(sqlite3_exec(db_, "INSERT INTO customers(name, city) VALUES ('Barbara', 'Boston')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto scan = s.ScanAnswerTable(*spec.value());
  ASSERT_TRUE(scan.ok()) << scan.status().message();
  size_t rows = 0;
  for (;;) {
    Result<size_t> more = scan.value()->ReadAhead([](sqlite3_stmt*) { return size_t{1}; });
    ASSERT_TRUE(more.ok());
    if (more.value() == 0) break;
    rows += more.value();
  }
  EXPECT_EQ(rows, 4u);
  EXPECT_EQ(model_.calls(), 1u);

  // Dropped, the same name is a new run (which the answer cache answers).
  s.DropAnswerTable("temp", "people");
  auto recreated = s.AnswerTable("temp", "people", "Who lives where?");
  ASSERT_TRUE(recreated.ok());
  EXPECT_EQ(recreated.value()->run_id, 2);
  EXPECT_EQ(s.Runs().at(1).cached_from, 1);
  // Another question under the name is another run, asked of the model.
  model_.Say("SELECT name FROM customers");
  auto other = s.AnswerTable("temp", "people", "Who are they?");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other.value()->run_id, 3);
  EXPECT_EQ(model_.calls(), 2u);
}

TEST_F(SessionTest, AnAnswerTableWhoseSqlNowGivesOtherColumnsIsNotScanned) {
  Session& s = Connect();
  model_.Say("SELECT * FROM customers");
  auto spec = s.AnswerTable("temp", "everyone", "Show every customer.");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(
      sqlite3_exec(db_, "ALTER TABLE customers ADD COLUMN email TEXT", nullptr, nullptr, nullptr),
      SQLITE_OK);
  auto scan = s.ScanAnswerTable(*spec.value());
  ASSERT_FALSE(scan.ok());
  EXPECT_EQ(scan.status().message(),
            "the answer's SQL now gives other columns; create the table again");
  ASSERT_EQ(sqlite3_exec(db_, "DROP TABLE customers", nullptr, nullptr, nullptr), SQLITE_OK);
  scan = s.ScanAnswerTable(*spec.value());
  ASSERT_FALSE(scan.ok());
  EXPECT_EQ(scan.status().message().rfind("the answer's SQL no longer runs: ", 0), 0u)
      << scan.status().message();
}

TEST_F(SessionTest, SettingsReadBackTypedAndReadOnlyOnesRefuse) {
  Session& s = Connect();
  EXPECT_EQ(std::get<int64_t>(s.Setting("max_rows").value()), 10000);
  ASSERT_TRUE(s.Set("max_rows", "5").ok());
  EXPECT_EQ(std::get<int64_t>(s.Setting("max_rows").value()), 5);
  ASSERT_TRUE(s.Reset("max_rows").ok());
  EXPECT_EQ(std::get<int64_t>(s.Setting("max_rows").value()), 10000);
  ASSERT_TRUE(s.Set("temperature", "0.5").ok());
  EXPECT_EQ(std::get<double>(s.Setting("temperature").value()), 0.5);
  EXPECT_EQ(std::get<std::string>(s.Setting("model").value()), "test-model");

  // An out-of-range value changes nothing.
  EXPECT_FALSE(s.Set("max_attempts", "50").ok());
  EXPECT_EQ(std::get<int64_t>(s.Setting("max_attempts").value()), 3);

  for (const char* key : {"host", "value_index", "findings", "in_use", "problems"}) {
    Status st = s.Set(key, "x");
    EXPECT_EQ(st.kind(), ErrorKind::kInvalidArgument) << key;
    EXPECT_NE(st.message().find(std::string(key) + " is read-only"), std::string::npos)
        << st.message();
    // Each reads back as JSON.
    auto shown = s.Setting(key);
    ASSERT_TRUE(shown.ok()) << key;
    EXPECT_FALSE(
        nlohmann::json::parse(std::get<std::string>(shown.value()), nullptr, false).is_discarded())
        << key;
  }
  EXPECT_FALSE(s.Setting("no_such_setting").ok());

  // The API key is never read back, only where it comes from.
  ASSERT_TRUE(s.Set("api_key", "sk-secret-value").ok());
  EXPECT_EQ(std::get<std::string>(s.Setting("api_key").value()), "set (agent_config)");
  const nlohmann::json all = nlohmann::json::parse(s.SettingsJson());
  EXPECT_EQ(all["api_key"], "set (agent_config)");
  EXPECT_EQ(all["model"], "test-model");
  EXPECT_TRUE(all["host"].is_object());
  EXPECT_EQ(s.SettingsJson().find("sk-secret-value"), std::string::npos);
  ASSERT_TRUE(s.Reset("api_key").ok());
  EXPECT_EQ(std::get<std::string>(s.Setting("api_key").value()), "unset");
}

TEST_F(SessionTest, AVariableThatCouldNotBeUsedStopsEveryAskUntilItsSettingIsSet) {
  setenv("QUERYPILOT_MAX_ATTEMPTS", "50", 1);
  Session& s = Connect();
  unsetenv("QUERYPILOT_MAX_ATTEMPTS");
  Result<AskedRows> asked = s.Ask("How many customers are there?");
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.status().kind(), ErrorKind::kNotConfigured);
  EXPECT_NE(asked.status().message().find("QUERYPILOT_MAX_ATTEMPTS"), std::string::npos)
      << asked.status().message();
  EXPECT_EQ(model_.calls(), 0u);

  ASSERT_TRUE(s.Set("max_attempts", "2").ok());
  model_.Say("SELECT COUNT(*) FROM customers");
  asked = s.Ask("How many customers are there?");
  ASSERT_TRUE(asked.ok()) << asked.status().message();
  EXPECT_EQ(model_.calls(), 1u);
}

// agent_config() names the provider an ask would use, and what it would stop
// at before a model call, without calling the model.
TEST_F(SessionTest, TheListingNamesTheProviderInUseAndWhatTheNextAskWouldStopAt) {
  setenv("QUERYPILOT_MAX_ATTEMPTS", "50", 1);
  Session& s = Connect();
  unsetenv("QUERYPILOT_MAX_ATTEMPTS");
  nlohmann::json all = nlohmann::json::parse(s.SettingsJson());
  EXPECT_EQ(all["in_use"]["provider"], "openai");
  EXPECT_EQ(all["in_use"]["model"], "test-model");
  EXPECT_EQ(all["in_use"]["endpoint"], model_.base_url() + "/chat/completions");
  ASSERT_EQ(all["problems"].size(), 1u) << all["problems"];
  EXPECT_NE(all["problems"][0].get<std::string>().find("QUERYPILOT_MAX_ATTEMPTS"),
            std::string::npos)
      << all["problems"][0];
  // The ask stops at the same message.
  Result<AskedRows> asked = s.Ask("How many customers are there?");
  ASSERT_FALSE(asked.ok());
  EXPECT_NE(asked.status().message().find(all["problems"][0].get<std::string>()),
            std::string::npos);

  // A base URL that cannot be used: no provider in use, and the reason.
  ASSERT_TRUE(s.Set("base_url", "").ok());
  ASSERT_TRUE(s.Set("model", "").ok());
  all = nlohmann::json::parse(std::get<std::string>(s.Setting("problems").value()));
  ASSERT_EQ(all.size(), 2u) << all;
  EXPECT_NE(all[1].get<std::string>().find("no model endpoint is configured"), std::string::npos)
      << all[1];
  EXPECT_EQ(std::get<std::string>(s.Setting("in_use").value()), "null");
  EXPECT_EQ(model_.calls(), 0u);
}

TEST_F(SessionTest, FeedbackMarksARunAndForgetRemovesIt) {
  Session& s = Connect();
  model_.Say("SELECT name FROM customers WHERE city = 'London'");
  ASSERT_TRUE(s.AskSql("Who lives in London?").ok());
  const int64_t id = s.Runs().at(0).id;

  Status st = s.Feedback(id, "maybe");
  EXPECT_EQ(st.kind(), ErrorKind::kInvalidArgument);
  EXPECT_EQ(st.message(), "the verdict is 'good', 'bad' or NULL (none)");
  ASSERT_TRUE(s.Feedback(id, "good").ok());
  EXPECT_EQ(s.Runs().at(0).feedback, "good");
  ASSERT_TRUE(s.Feedback(id, "").ok());
  EXPECT_EQ(s.Runs().at(0).feedback, "");
  EXPECT_FALSE(s.Feedback(id + 1, "bad").ok());

  ASSERT_TRUE(s.Forget(id).ok());
  EXPECT_TRUE(s.Runs().empty());
  EXPECT_TRUE(s.Attempts().empty());
  EXPECT_FALSE(s.Forget(id).ok());  // gone already

  // Its cached answer went with it: the same question asks the model again.
  model_.Say("SELECT name FROM customers WHERE city = 'London'");
  ASSERT_TRUE(s.AskSql("Who lives in London?").ok());
  EXPECT_EQ(model_.calls(), 2u);
}

TEST_F(SessionTest, TheSameQuestionAgainRunsItsVerifiedSqlWithoutTheModel) {
  Session& s = Connect();
  model_.Say("SELECT name FROM customers WHERE city = 'Helsinki'");
  ASSERT_TRUE(s.AskSql("Who lives in Helsinki?").ok());
  Result<std::string> again = s.AskSql("who lives in helsinki?");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again.value(), "SELECT name FROM customers WHERE city = 'Helsinki'");
  EXPECT_EQ(model_.calls(), 1u);
  ASSERT_EQ(s.Runs().size(), 2u);
  EXPECT_EQ(s.Runs()[1].cached_from, s.Runs()[0].id);
}

TEST_F(SessionTest, AVerdictOfBadOrANewDescriptionTakesTheAnswerOutOfTheCache) {
  Session& s = Connect();
  // Each ask queues the model's reply; one a cache hit left unread is the
  // same SQL, read by the next ask that calls the model.
  auto ask = [&] {
    model_.Say("SELECT name FROM customers WHERE city = 'London'");
    Result<std::string> got = s.AskSql("Who lives in London?");
    EXPECT_TRUE(got.ok()) << got.status().message();
  };
  // Each change is given the run that verified the cached SQL (`origin`) and
  // the run answered from the cache after it (`repeat`).
  struct Case {
    const char* what;
    std::function<Status(int64_t origin, int64_t repeat)> change;
    bool asks_again;
  } cases[] = {
      {"bad on the run that made the SQL",
       [&](int64_t origin, int64_t) { return s.Feedback(origin, "bad"); }, true},
      {"bad on a run answered from the cache",
       [&](int64_t, int64_t repeat) { return s.Feedback(repeat, "bad"); }, true},
      {"good", [&](int64_t origin, int64_t) { return s.Feedback(origin, "good"); }, false},
      {"no verdict", [&](int64_t origin, int64_t) { return s.Feedback(origin, ""); }, false},
      {"a description set",
       [&](int64_t, int64_t) {
         return s.Describe("customers.city", std::string("where they live"), false).status();
       },
       true},
      {"the same description again",
       [&](int64_t, int64_t) {
         return s.Describe("customers.city", std::string("where they live"), false).status();
       },
       false},
      {"a description read",
       [&](int64_t, int64_t) { return s.Describe("customers.city", std::nullopt, true).status(); },
       false},
      {"a description removed",
       [&](int64_t, int64_t) { return s.Describe("customers.city", std::nullopt, false).status(); },
       true},
  };
  ask();  // the model answers; the cache holds its SQL from now on
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const size_t before = model_.calls();
    ask();  // from the cache: no model call
    ASSERT_EQ(model_.calls(), before);
    const int64_t repeat = s.Runs().back().id;
    const int64_t origin = s.Runs().back().cached_from;
    ASSERT_NE(origin, 0);
    ASSERT_TRUE(c.change(origin, repeat).ok());
    ask();
    EXPECT_EQ(model_.calls(), before + (c.asks_again ? 1 : 0));
    EXPECT_EQ(s.Runs().back().cached_from != 0, !c.asks_again);
  }
}

TEST_F(SessionTest, PromptTextsCanBeRewrittenAndRestored) {
  Session& s = Connect();
  Result<std::string> original = s.PromptText("explain");
  ASSERT_TRUE(original.ok());
  EXPECT_FALSE(original.value().empty());
  EXPECT_FALSE(s.PromptText("no_such_prompt").ok());

  Result<std::string> set = s.SetPrompt("explain", std::string("Answer in one sentence."));
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set.value(), "Answer in one sentence.");
  EXPECT_EQ(s.PromptText("explain").value(), "Answer in one sentence.");
  bool seen = false;
  for (const PromptRecord& p : s.Prompts()) {
    if (p.name != "explain") {
      EXPECT_TRUE(p.is_default) << p.name;
      continue;
    }
    seen = true;
    EXPECT_FALSE(p.is_default);
    EXPECT_EQ(p.text, "Answer in one sentence.");
    EXPECT_FALSE(p.description.empty());
  }
  EXPECT_TRUE(seen);

  Result<std::string> restored = s.SetPrompt("explain", std::nullopt);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored.value(), original.value());
  EXPECT_FALSE(s.SetPrompt("no_such_prompt", std::string("x")).ok());
}

TEST_F(SessionTest, DescriptionsAreKeptPerTableOrColumnAndReachThePrompt) {
  Session& s = Connect();
  auto set = s.Describe("customers.city", std::string("  the city they live in  "), false);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set.value(), "the city they live in");
  EXPECT_EQ(s.Describe("Customers.City", std::nullopt, true).value(), "the city they live in");
  ASSERT_EQ(s.Descriptions().size(), 1u);
  EXPECT_EQ(s.Descriptions()[0].column, "city");

  struct Case {
    const char* target;
    std::optional<std::string> text;
    const char* says;
  } refused[] = {
      {"nowhere", std::string("x"), ""},
      {"customers.nothing", std::string("x"), ""},
      {"customers", std::string("   "), "the description is empty"},
      {"customers", std::string(2001, 'x'), "the description is 2001 bytes long"},
  };
  for (const auto& c : refused) {
    auto got = s.Describe(c.target, c.text, false);
    ASSERT_FALSE(got.ok()) << c.target;
    EXPECT_EQ(got.status().kind(), ErrorKind::kInvalidArgument) << c.target;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos) << got.status().message();
  }
  EXPECT_EQ(s.Descriptions().size(), 1u);

  model_.Say("SELECT name FROM customers WHERE city = 'London'");
  ASSERT_TRUE(s.AskSql("Who lives in London?").ok());
  EXPECT_NE(model_.request(0).dump().find("the city they live in"), std::string::npos);

  auto removed = s.Describe("customers.city", std::nullopt, false);
  ASSERT_TRUE(removed.ok());
  EXPECT_FALSE(removed.value().has_value());
  EXPECT_TRUE(s.Descriptions().empty());
}

TEST_F(SessionTest, ExplainAsksTheModelAboutARecordedRun) {
  Session& s = Connect();
  model_.Say("SELECT name FROM customers ORDER BY name");
  ASSERT_TRUE(s.AskSql("List the customers by name.").ok());
  model_.Say("Three customers, in alphabetical order.");
  Result<std::string> got = s.Explain(1);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), "Three customers, in alphabetical order.");
  EXPECT_EQ(s.Runs().at(0).explanation, got.value());
  EXPECT_FALSE(s.Explain(9).ok());
  EXPECT_EQ(model_.calls(), 2u);
}

TEST_F(SessionTest, AskStartThenAskResultGivesTheRowsAndTheRunIsRecorded) {
  Session& s = Connect();
  model_.Say("SELECT name FROM customers ORDER BY id");
  Result<int64_t> id = s.AskStart("What are the customers' names?");
  ASSERT_TRUE(id.ok()) << id.status().message();
  Result<AskedRows> rows = s.AskResult(*id, Session::kMaxResultWaitMs);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->question, "What are the customers' names?");
  ASSERT_TRUE(rows->stream);
  EXPECT_EQ(Drain(*rows->stream), (std::vector<std::string>{"Ada", "Grace", "Linus"}));
  EXPECT_EQ(s.AskState(*id).value(), "done");
  std::vector<RunRecord> runs = s.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, *id);
  EXPECT_EQ(runs[0].status, RunStatus::kOk);
  EXPECT_EQ(runs[0].rows, 3);
  EXPECT_EQ(model_.calls(), 1u);
  // The review's call, made by the worker while the one ask_result waited.
  EXPECT_EQ(model_.reviews(), 1u);
  EXPECT_EQ(runs[0].review, "accepted");
}

TEST_F(SessionTest, AskResultRefusesUnknownIdsAndWaitsOutOfBounds) {
  Session& s = Connect();
  Result<AskedRows> unknown = s.AskResult(987654321, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no run 987654321"), std::string::npos);
  EXPECT_FALSE(s.AskState(987654321).ok());
  Result<AskedRows> too_long = s.AskResult(1, Session::kMaxResultWaitMs + 1);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("wait_ms"), std::string::npos);
  EXPECT_FALSE(s.AskResult(1, -1).ok());
}

TEST_F(SessionTest, ARunWaitingWhenItsConnectionClosesIsLost) {
  Session& s = Connect();
  Result<int64_t> id = s.AskStart("What are the customers' names?");
  ASSERT_TRUE(id.ok()) << id.status().message();
  std::shared_ptr<AsyncRun> run = AsyncRuns::Process().Find(*id);
  ASSERT_TRUE(run);
  session_.reset();  // nobody asked for its result
  AsyncRun& r = *run;
  MutexLock lock(&r.mu);
  EXPECT_EQ(r.state, AsyncState::kLost);
  EXPECT_NE(r.error.message().find("is lost"), std::string::npos);
  EXPECT_TRUE(r.cancelled.load());
}

TEST_F(SessionTest, RunIdsComeAfterTheRunsAHistoryFileHolds) {
  // A history file an earlier process wrote: its last run is numbered
  // beyond any this process has given.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("qp-session-ids-" + std::to_string(getpid()) + ".qp"))
                               .string();
  std::filesystem::remove(path);
  constexpr int64_t kEarlier = 900000;
  {
    sqlite3* file = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &file), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(file,
                           "CREATE TABLE querypilot_runs(id INTEGER PRIMARY KEY, record TEXT NOT "
                           "NULL);"
                           "INSERT INTO querypilot_runs VALUES (900000, "
                           "'{\"id\":900000,\"question\":\"earlier\",\"status\":\"ok\"}');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(file);
  }
  Session& s = Connect();
  ASSERT_TRUE(s.Set("history_file", path).ok());
  ASSERT_EQ(s.Runs().size(), 1u);
  EXPECT_EQ(s.Runs()[0].id, kEarlier);
  // Another connection of this process, with no history file: its run is
  // not taken for the file's.
  sqlite3* other_db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &other_db), SQLITE_OK);
  {
    Session other(other_db);
    ASSERT_TRUE(other.Set("base_url", model_.base_url()).ok());
    ASSERT_TRUE(other.Set("model", "test-model").ok());
    Result<int64_t> theirs = other.AskStart("How many customers are there?");
    ASSERT_TRUE(theirs.ok()) << theirs.status().message();
    EXPECT_GT(*theirs, kEarlier);
    Result<int64_t> mine = s.AskStart("How many customers are there?");
    ASSERT_TRUE(mine.ok()) << mine.status().message();
    EXPECT_GT(*mine, *theirs);
  }
  sqlite3_close(other_db);
  session_.reset();
  std::filesystem::remove(path);
}

TEST_F(SessionTest, AnAsyncRunReadOnAnotherConnectionIsRecordedAsOnItsOwn) {
  // A file, so that two connections see the same database; more rows than
  // a run reads before it answers, so that the count is known only once the
  // reader has read them all.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("qp-session-rows-" + std::to_string(getpid()) + ".db"))
                               .string();
  std::filesystem::remove(path);
  sqlite3* starter_db = nullptr;
  sqlite3* reader_db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &starter_db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(starter_db,
                         "CREATE TABLE numbers(n INTEGER PRIMARY KEY);"
                         "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
                         "WHERE i < 300) INSERT INTO numbers SELECT i FROM c;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_open(path.c_str(), &reader_db), SQLITE_OK);
  {
    auto owned = std::make_unique<Session>(starter_db);
    Session& starter = *owned;
    Session reader(reader_db);
    for (Session* s : {&starter, &reader}) {
      ASSERT_TRUE(s->Set("base_url", model_.base_url()).ok());
      ASSERT_TRUE(s->Set("model", "test-model").ok());
    }
    const std::string sql = "SELECT n FROM numbers ORDER BY n";
    // Run `question` with ask_start on the starter and ask_result on `on`,
    // every row read.
    auto run = [&](const std::string& question, Session& on) -> int64_t {
      model_.Say(sql);
      Result<int64_t> id = starter.AskStart(question);
      EXPECT_TRUE(id.ok()) << id.status().message();
      if (!id.ok()) return 0;
      Result<AskedRows> rows = on.AskResult(*id, Session::kMaxResultWaitMs);
      EXPECT_TRUE(rows.ok()) << rows.status().message();
      if (!rows.ok() || !rows->stream) return 0;
      EXPECT_EQ(Drain(*rows->stream).size(), 300u);
      return *id;
    };
    const int64_t here = run("Which numbers are there?", starter);
    const int64_t there = run("Which numbers are there, all of them?", reader);
    ASSERT_GT(there, here);
    std::vector<RunRecord> runs = starter.Runs();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[1].rows, 300);
    // Every column agrees, but those that name the run or time it.
    auto shown = [](const RecordField<RunRecord>& f, const RunRecord& r) -> std::string {
      const Value v = ShowField(f, r).value;
      if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
      if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
      if (const auto* t = std::get_if<std::string>(&v)) return "'" + *t + "'";
      return std::holds_alternative<std::monostate>(v) ? "NULL" : "a blob";
    };
    for (const RecordField<RunRecord>& f : kRunFields) {
      if (f.column == "id" || f.column == "question" || f.column == "created_at" ||
          f.column == "duration_ms" || f.column == "llm_ms" || f.column == "node_times") {
        continue;
      }
      EXPECT_EQ(shown(f, runs[0]), shown(f, runs[1])) << f.column;
    }
    // Its answer is the starter's to give again, as ask() there would have
    // kept it: the same question asks no model.
    {  // (its rows, a stream on the starter, end before the starter does)
      const size_t calls = model_.calls();
      Result<AskedRows> again = starter.Ask("Which numbers are there, all of them?");
      ASSERT_TRUE(again.ok()) << again.status().message();
      EXPECT_EQ(model_.calls(), calls);
      EXPECT_EQ(starter.Runs().back().cached_from, there);
    }
    // Rows read after the starter closed are recorded nowhere, and nothing
    // breaks.
    model_.Say(sql);
    Result<int64_t> late = starter.AskStart("How many numbers are there?");
    ASSERT_TRUE(late.ok()) << late.status().message();
    Result<AskedRows> rows = reader.AskResult(*late, Session::kMaxResultWaitMs);
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    ASSERT_TRUE(rows->stream);
    Row row;
    ASSERT_TRUE(rows->stream->Next(&row).ok());
    owned.reset();
    EXPECT_EQ(Drain(*rows->stream).size(), 299u);
  }
  sqlite3_close(reader_db);
  sqlite3_close(starter_db);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace querypilot
