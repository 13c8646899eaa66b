// agent_explain's work (ExplainRun): which runs it explains, what the model is
// told, which replies count as an explanation, and what is recorded.
#include "agent/explain.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <deque>
#include <string>

#include "agent/prompt/prompts.h"

namespace querypilot {
namespace {

// A model that answers from a script and keeps what it was asked.
class ScriptedModel : public LlmClient {
 public:
  std::deque<std::string> replies;
  std::vector<ChatRequest> requests;
  Result<ChatReply> Complete(const ChatRequest& request) override {
    requests.push_back(request);
    if (replies.empty()) return Status(ErrorKind::kProviderUnavailable, "the model is away");
    ChatReply r;
    r.text = replies.front();
    r.prompt_tokens = 40;
    r.completion_tokens = 9;
    replies.pop_front();
    return r;
  }
};

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db_,
                     "CREATE TABLE city(name TEXT, people INTEGER);"
                     "INSERT INTO city VALUES ('Oslo', 700), ('Bergen', 290), ('Kyiv', 2900);"
                     "CREATE TABLE n(i INTEGER);"
                     "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 25)"
                     "  INSERT INTO n SELECT i FROM k;",
                     nullptr, nullptr, nullptr),
        SQLITE_OK);
    ctx_.db = db_;
    ctx_.sql = SqlTarget::Own(db_);
    ctx_.config = &config_;
    ctx_.llm = &model_;
    ctx_.model = "run-model";
    ctx_.history = &history_;
  }
  void TearDown() override { sqlite3_close(db_); }

  // A run in the history, as the agent records one.
  int64_t AddRun(const std::string& question, const std::string& sql,
                 RunStatus status = RunStatus::kOk) {
    RunRecord r;
    r.id = history_.NextRunId();
    r.question = question;
    r.sql = sql;
    r.status = status;
    history_.Add(r, {});
    return r.id;
  }
  RunRecord Run(int64_t id) {
    for (const RunRecord& r : history_.Runs()) {
      if (r.id == id) return r;
    }
    ADD_FAILURE() << "no run " << id;
    return {};
  }

  sqlite3* db_ = nullptr;
  Config config_;
  ScriptedModel model_;
  History history_;
  AgentContext ctx_;
};

TEST_F(ExplainTest, TheModelSeesTheQuestionTheSqlAndTheRowsAndTheExplanationIsRecorded) {
  const int64_t id = AddRun("Which city is biggest?",
                            "SELECT name, people FROM city ORDER BY people DESC LIMIT 2");
  model_.replies = {"  Kyiv has the most people, then Oslo.  "};
  Result<std::string> got = ExplainRun(ctx_, id);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), "Kyiv has the most people, then Oslo.");

  ASSERT_EQ(model_.requests.size(), 1u);
  const ChatRequest& req = model_.requests[0];
  EXPECT_EQ(req.model, "run-model");
  EXPECT_EQ(req.max_tokens, 400);  // min(max_tokens, 400)
  ASSERT_EQ(req.messages.size(), 2u);
  EXPECT_EQ(req.messages[0].role, ChatRole::kSystem);
  EXPECT_EQ(req.messages[0].content, std::string(PromptTextFor(config_.prompts, "explain")));
  EXPECT_EQ(req.messages[1].content,
            "Question: Which city is biggest?\n"
            "SQL: SELECT name, people FROM city ORDER BY people DESC LIMIT 2\n"
            "Result (2 rows):\n"
            "{\"name\":\"Kyiv\",\"people\":2900}\n"
            "{\"name\":\"Oslo\",\"people\":700}\n");

  const RunRecord run = Run(id);
  EXPECT_EQ(run.explanation, "Kyiv has the most people, then Oslo.");
  // The call counts towards the run's model calls and tokens.
  EXPECT_EQ(run.llm_calls, 1);
  EXPECT_EQ(run.prompt_tokens, 40);
  EXPECT_EQ(run.completion_tokens, 9);
}

TEST_F(ExplainTest, SettingsChooseTheModelThePromptAndTheBudget) {
  config_.explain_model = "cheap-model";
  config_.max_tokens = 100;
  config_.prompts["explain"] = "Say it in one sentence.";
  const int64_t id = AddRun("How many?", "SELECT i FROM n");
  model_.replies = {"There are 25."};
  ASSERT_TRUE(ExplainRun(ctx_, id).ok());
  const ChatRequest& req = model_.requests.at(0);
  EXPECT_EQ(req.model, "cheap-model");
  EXPECT_EQ(req.max_tokens, 100);
  EXPECT_EQ(req.messages.at(0).content, "Say it in one sentence.");
  // 20 rows at most go to the model, and it is told there are more.
  const std::string& user = req.messages.at(1).content;
  EXPECT_NE(user.find("Result (the first 20 rows of more):\n"), std::string::npos) << user;
  EXPECT_NE(user.find("{\"i\":20}\n"), std::string::npos);
  EXPECT_EQ(user.find("{\"i\":21}"), std::string::npos);
}

TEST_F(ExplainTest, AnEmptyResultIsSaidSo) {
  const int64_t id = AddRun("Any city of 10 people?", "SELECT name FROM city WHERE people = 10");
  model_.replies = {"No city has exactly 10 people."};
  ASSERT_TRUE(ExplainRun(ctx_, id).ok());
  EXPECT_NE(model_.requests.at(0).messages.at(1).content.find("Result (0 rows):\n(no rows)\n"),
            std::string::npos);
}

TEST_F(ExplainTest, RunsWithNothingToExplainAreRefusedBeforeAnyModelCall) {
  const int64_t failed = AddRun("q", "SELECT nope FROM city", RunStatus::kFailed);
  const int64_t no_sql = AddRun("q", "");
  struct Case {
    int64_t id;
    const char* says;
  } cases[] = {
      {99, "there is no run 99 in agent_runs"},
      {failed, "has no result to explain (its status is "},
      {no_sql, "has no result to explain"},
  };
  for (const auto& c : cases) {
    Result<std::string> got = ExplainRun(ctx_, c.id);
    ASSERT_FALSE(got.ok()) << c.id;
    EXPECT_EQ(got.status().kind(), ErrorKind::kInvalidArgument) << c.id;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos) << got.status().message();
  }
  EXPECT_TRUE(model_.requests.empty());
}

TEST_F(ExplainTest, NoModelIsTheProvidersError) {
  const int64_t id = AddRun("q", "SELECT name FROM city");
  ctx_.llm = nullptr;
  ctx_.llm_status = Status::NotConfigured("no model endpoint is configured");
  Result<std::string> got = ExplainRun(ctx_, id);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().kind(), ErrorKind::kNotConfigured);
  EXPECT_EQ(got.status().message(), "no model endpoint is configured");
}

TEST_F(ExplainTest, SqlThatNoLongerRunsIsNotSentToTheModel) {
  const int64_t id = AddRun("q", "SELECT name FROM city");
  ASSERT_EQ(sqlite3_exec(db_, "DROP TABLE city", nullptr, nullptr, nullptr), SQLITE_OK);
  Result<std::string> got = ExplainRun(ctx_, id);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message().rfind("the run's SQL no longer runs: ", 0), 0u)
      << got.status().message();
  EXPECT_TRUE(model_.requests.empty());
  EXPECT_EQ(Run(id).explanation, "");
}

TEST_F(ExplainTest, OnlyProseIsAnExplanation) {
  struct Case {
    const char* reply;
    const char* error;  // "" when it is recorded
  } cases[] = {
      {"Oslo has 700 people.", ""},
      {"Oslo is listed first.\n```sql\nSELECT 1\n```\nIt has 700 people.", ""},
      {"", "the model's explanation was empty"},
      {"   \n ", "the model's explanation was empty"},
      {"```\nSELECT name FROM city\n```", "its reply was only a code block"},
      {"SELECT name FROM city WHERE people > 500", "its reply was SQL"},
  };
  for (const auto& c : cases) {
    const int64_t id = AddRun("q", "SELECT name FROM city");
    model_.replies = {c.reply};
    Result<std::string> got = ExplainRun(ctx_, id);
    if (*c.error == '\0') {
      ASSERT_TRUE(got.ok()) << c.reply << ": " << got.status().message();
      EXPECT_EQ(Run(id).explanation, got.value());
      continue;
    }
    ASSERT_FALSE(got.ok()) << c.reply;
    EXPECT_EQ(got.status().kind(), ErrorKind::kProviderBadResponse) << c.reply;
    EXPECT_NE(got.status().message().find(c.error), std::string::npos) << got.status().message();
    EXPECT_EQ(Run(id).explanation, "") << c.reply;  // nothing recorded
  }
}

TEST_F(ExplainTest, AChattyLeadInLineIsNotPartOfTheExplanation) {
  struct Case {
    const char* reply;
    const char* recorded;  // "" when the reply is refused
  } cases[] = {
      {"Here is the explanation:\n\nKyiv has the most people, then Oslo.",
       "Kyiv has the most people, then Oslo."},
      {"Sure! In plain words:\r\n\r\nKyiv has the most people.\n\nOslo follows.",
       "Kyiv has the most people.\n\nOslo follows."},
      // A colon inside the explanation, or a line it runs on into, is the text itself.
      {"The two biggest are:\nKyiv and Oslo.", "The two biggest are:\nKyiv and Oslo."},
      {"Kyiv leads: 2900 people.\n\nOslo has 700.", "Kyiv leads: 2900 people.\n\nOslo has 700."},
      {"Here is the explanation:", "Here is the explanation:"},
      // A lead-in before SQL leaves only code: refused, not recorded as prose.
      {"Here is the query:\n\n```sql\nSELECT name FROM city\n```\n", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.reply);
    const int64_t id = AddRun("q", "SELECT name FROM city");
    model_.replies = {c.reply};
    Result<std::string> got = ExplainRun(ctx_, id);
    if (*c.recorded == '\0') {
      ASSERT_FALSE(got.ok());
      EXPECT_NE(got.status().message().find("its reply was only a code block"), std::string::npos)
          << got.status().message();
      EXPECT_EQ(Run(id).explanation, "");
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got.value(), c.recorded);
    EXPECT_EQ(Run(id).explanation, c.recorded);
  }
}

TEST_F(ExplainTest, AModelFailureRecordsNothing) {
  const int64_t id = AddRun("q", "SELECT name FROM city");
  Result<std::string> got = ExplainRun(ctx_, id);  // no reply scripted
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().kind(), ErrorKind::kProviderUnavailable);
  EXPECT_EQ(Run(id).explanation, "");
}

}  // namespace
}  // namespace querypilot
