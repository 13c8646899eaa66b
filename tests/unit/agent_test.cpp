// The state machine with a scripted in-process model: transitions, guards and
// the records they leave, without a network.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/review_request.h"

namespace querypilot {
namespace {

// Reviews of an answer (`review`, on by default) are kept apart in `reviews`
// and accept the answer, unless `reviews_in_script`: then they take the next
// scripted reply and are kept in `requests` as every other call.
class ScriptedClient : public LlmClient {
 public:
  std::deque<Result<ChatReply>> replies;
  std::vector<ChatRequest> requests;  // every call but reviews
  std::vector<ChatRequest> reviews;
  bool reviews_in_script = false;
  Result<ChatReply> Complete(const ChatRequest& request) override {
    if (!reviews_in_script && !request.messages.empty() &&
        request.messages[0].role == ChatRole::kSystem &&
        test_models::IsReviewSystemText(request.messages[0].content)) {
      reviews.push_back(request);
      ChatReply r;
      r.text = test_models::kAcceptingReview;
      r.prompt_tokens = 10;
      r.completion_tokens = 2;
      return r;
    }
    requests.push_back(request);
    if (replies.empty()) return Status(ErrorKind::kProviderBadResponse, "script exhausted");
    Result<ChatReply> r = replies.front();
    replies.pop_front();
    return r;
  }
  void Say(const std::string& text) {
    ChatReply r;
    r.text = text;
    r.prompt_tokens = 10;
    r.completion_tokens = 2;
    replies.push_back(r);
  }
};

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);"
                           "INSERT INTO customers(name) VALUES ('Ada'), ('Grace'), ('Linus');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    ctx_.db = db_;
    ctx_.sql = SqlTarget::Own(db_);
    ctx_.config = &config_;
    ctx_.llm = &llm_;
    ctx_.schema_cache = &cache_;
    ctx_.history = &history_;
    ctx_.model = "m";
  }
  void TearDown() override { sqlite3_close(db_); }

  RunResult Run(const char* q) { return Agent(ctx_).Run(q); }

  sqlite3* db_ = nullptr;
  Config config_;
  ScriptedClient llm_;
  SchemaCache cache_;
  History history_;
  AgentContext ctx_;
};

// The node table has one row per node, each with a name of its own (the key
// of its time in agent_runs.node_times).
TEST(NodeTable, EveryNodeHasOneRowWithItsOwnName) {
  const size_t nodes = static_cast<size_t>(Node::kFinish) + 1;
  EXPECT_EQ(NodeCount(), nodes);
  std::set<std::string_view> names;
  for (size_t i = 0; i < nodes; ++i) {
    const std::string_view name = NodeName(static_cast<Node>(i));
    EXPECT_NE(name, "?") << "node " << i << " has no row";
    EXPECT_TRUE(names.insert(name).second) << name << " names two nodes";
  }
  EXPECT_EQ(NodeName(Node::kLoadSchema), "load_schema");
  EXPECT_EQ(NodeName(Node::kFinish), "finish");
}

// With the review on (the default), a first answer the review accepts is
// one generation and one review.
TEST_F(AgentTest, FirstAttemptSuccessIsOneGenerationAndOneReview) {
  llm_.Say("```sql\nSELECT name FROM customers ORDER BY id\n```");
  RunResult r = Run("names?");
  ASSERT_EQ(r.status, RunStatus::kOk) << r.error.ToString();
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(llm_.requests.size(), 1u);
  EXPECT_EQ(llm_.reviews.size(), 1u);
  ASSERT_TRUE(r.query);
  Row row;
  std::vector<std::string> names;
  while (r.query->Next(&row).value()) names.push_back(std::get<std::string>(row[0]));
  EXPECT_EQ(names, (std::vector<std::string>{"Ada", "Grace", "Linus"}));
  auto runs = history_.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].llm_calls, 2);
  EXPECT_EQ(runs[0].prompt_tokens, 20);  // 10 each
  EXPECT_EQ(runs[0].review, "accepted");
  EXPECT_EQ(runs[0].rows, 3);
}

// A run that pauses for its model (ask_start): Advance stops before each
// generation's call with no statement open, and goes on with the reply given
// back; a correction pauses it again; the record is the same as Run's.
TEST_F(AgentTest, APausedRunGoesOnWithTheRepliesGivenBack) {
  ctx_.pause_for_model = true;
  ctx_.llm = nullptr;  // the calls are made elsewhere
  Agent::RunStatePtr s = Agent::Begin(history_.NextRunId(), "names?");
  std::optional<RunResult> out = Agent(ctx_).Advance(*s);
  ASSERT_FALSE(out);
  EXPECT_EQ(sqlite3_next_stmt(db_, nullptr), nullptr);
  const ChatRequest first = Agent::AwaitedCall(*s);
  ASSERT_EQ(first.messages.size(), 2u);
  EXPECT_NE(first.messages[0].content.find("customers"), std::string::npos);
  EXPECT_EQ(Agent::PendingRecord(*s, RunStatus::kPending).status, RunStatus::kPending);

  ChatReply bad;
  bad.text = "```sql\nSELECT name FROM customer\n```";
  Agent::GiveReply(*s, bad);
  out = Agent(ctx_).Advance(*s);
  ASSERT_FALSE(out);  // the correction waits on the model again
  EXPECT_EQ(sqlite3_next_stmt(db_, nullptr), nullptr);
  const ChatRequest second = Agent::AwaitedCall(*s);
  EXPECT_GT(second.messages.size(), first.messages.size());
  EXPECT_NE(second.messages.back().content.find("no such table"), std::string::npos);
  EXPECT_EQ(Agent::AttemptsSoFar(*s).size(), 2u);

  ChatReply good;
  good.text = "```sql\nSELECT name FROM customers ORDER BY id\n```";
  Agent::GiveReply(*s, good);
  out = Agent(ctx_).Advance(*s);
  ASSERT_FALSE(out);  // the review (on by default) waits on the model too
  EXPECT_EQ(sqlite3_next_stmt(db_, nullptr), nullptr);
  const ChatRequest review = Agent::AwaitedCall(*s);
  EXPECT_NE(review.messages[0].content.find("is_acceptable"), std::string::npos);
  ChatReply accept;
  accept.text = R"({"is_acceptable": true, "should_refine": false, "issues": [], "reasoning": ""})";
  Agent::GiveReply(*s, accept);
  out = Agent(ctx_).Advance(*s);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->status, RunStatus::kOk) << out->error.ToString();
  EXPECT_EQ(out->attempts, 2);
  ASSERT_TRUE(out->query);
  EXPECT_EQ(out->query->buffered_rows().size(), 3u);
  auto runs = history_.Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::kOk);
  EXPECT_EQ(runs[0].llm_calls, 3);
  EXPECT_EQ(runs[0].review, "accepted");
  EXPECT_TRUE(llm_.requests.empty());
}

// A model error given back ends the run as Run would have.
TEST_F(AgentTest, APausedRunGivenAProviderErrorFails) {
  ctx_.pause_for_model = true;
  Agent::RunStatePtr s = Agent::Begin(history_.NextRunId(), "names?");
  ASSERT_FALSE(Agent(ctx_).Advance(*s));
  Agent::GiveReply(*s, Status(ErrorKind::kProviderAuth, "invalid api key"));
  std::optional<RunResult> out = Agent(ctx_).Advance(*s);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, RunStatus::kProviderError);
  EXPECT_NE(out->UserMessage().find("invalid api key"), std::string::npos);
}

// samples 3: the first generation asks for three choices; the first is the
// reply as with one, the others' first readings run and are compared with
// the answer, which they never change; their calls and tokens are the run's.
TEST_F(AgentTest, SamplesAreComparedButNeverChangeTheAnswer) {
  struct Case {
    const char* name;
    std::vector<std::string> more;  // the other choices
    int calls;
    const char* verdict;
    int agreeing;
    int vs_alone;  // the confidence against one sample's: -1 lower, 1 higher
  } cases[] = {
      {"agreeing",
       {"```sql\nSELECT name FROM customers ORDER BY id\n```",
        "```sql\nSELECT c.name FROM customers AS c\n```"},
       1,
       "every sample gives it",
       3,
       1},
      {"disagreeing",
       {"```sql\nSELECT name FROM customers WHERE id = 1\n```",
        "```sql\nSELECT id FROM customers\n```"},
       1,
       "no other sample gives it",
       1,
       -1},
      // A sample's reading is its first block, not an alternative after it.
      {"samples with alternatives",
       {"```sql\nSELECT name FROM customers ORDER BY id\n```\n```sql\nSELECT id FROM "
        "customers\n```",
        "```sql\nSELECT name FROM customers\n```\n```sql\nSELECT 1\n```"},
       1,
       "every sample gives it",
       3,
       1},
      {"one disagrees, one has no SQL",
       {"```sql\nSELECT name FROM customers LIMIT 2\n```", "I cannot answer that."},
       1,
       "no other sample gives it",
       1,
       -1},
  };
  config_.answer_cache = 0;
  config_.max_attempts = 1;
  llm_.Say("```sql\nSELECT name FROM customers ORDER BY id\n```");
  ASSERT_EQ(Run("names?").status, RunStatus::kOk);
  const int64_t alone = history_.Runs().back().confidence.value_or(-1);
  config_.samples = 3;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    llm_.requests.clear();
    ChatReply reply;
    reply.text = "```sql\nSELECT name FROM customers ORDER BY id\n```";
    reply.more = c.more;
    reply.calls = c.calls;
    reply.prompt_tokens = 10;
    reply.completion_tokens = 6;
    llm_.replies.push_back(reply);
    RunResult r = Run("names?");
    ASSERT_EQ(r.status, RunStatus::kOk) << r.error.ToString();
    ASSERT_EQ(llm_.requests.size(), 1u);
    EXPECT_EQ(llm_.requests[0].choices, 3);
    EXPECT_EQ(r.sql, "SELECT name FROM customers ORDER BY id");  // never changed
    const RunRecord run = history_.Runs().back();
    EXPECT_EQ(run.llm_calls, c.calls + 1);  // and the review's
    EXPECT_EQ(run.prompt_tokens, 10 + 10);
    EXPECT_EQ(run.completion_tokens, 6 + 2);
    const nlohmann::json j = nlohmann::json::parse(run.samples);
    EXPECT_EQ(j["asked"], 3);
    EXPECT_EQ(j["verdict"], c.verdict);
    EXPECT_EQ(j["agreeing"], c.agreeing);
    ASSERT_EQ(j["samples"].size(), 3u);
    EXPECT_EQ(j["samples"][0]["agrees"], true);
    ASSERT_TRUE(run.confidence.has_value());
    if (c.vs_alone < 0) {
      EXPECT_LT(*run.confidence, alone);
    } else {
      EXPECT_GT(*run.confidence, alone);
    }
  }
  // A correction asks for one choice only.
  llm_.requests.clear();
  config_.max_attempts = 2;
  ChatReply bad;
  bad.text = "```sql\nSELECT nme FROM customers\n```";
  bad.more = {"```sql\nSELECT name FROM customers\n```", "```sql\nSELECT name FROM customers\n```"};
  llm_.replies.push_back(bad);
  llm_.Say("```sql\nSELECT name FROM customers\n```");
  RunResult r = Run("the names, again?");
  ASSERT_EQ(r.status, RunStatus::kOk) << r.error.ToString();
  ASSERT_EQ(llm_.requests.size(), 2u);
  EXPECT_EQ(llm_.requests[0].choices, 3);
  EXPECT_EQ(llm_.requests[1].choices, 1);
  const nlohmann::json j = nlohmann::json::parse(history_.Runs().back().samples);
  // The first reply's reading failed: the two others, compared, give the answer.
  EXPECT_EQ(j["verdict"], "every sample gives it");
  EXPECT_EQ(j["compared"], 2);
  EXPECT_EQ(j["samples"][0]["ran"], false);
}

TEST_F(AgentTest, CorrectionConversationCarriesErrorAndHint) {
  llm_.Say("SELECT nme FROM customers");
  llm_.Say("SELECT name FROM customers");
  RunResult r = Run("names?");
  ASSERT_EQ(r.status, RunStatus::kOk);
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(llm_.requests.size(), 2u);
  const auto& msgs = llm_.requests[1].messages;
  ASSERT_EQ(msgs.size(), 4u);  // system, question, failed SQL, correction
  EXPECT_EQ(msgs[2].role, ChatRole::kAssistant);
  EXPECT_EQ(msgs[2].content, "```sql\nSELECT nme FROM customers\n```");
  EXPECT_NE(msgs[3].content.find("no such column: nme"), std::string::npos);
  EXPECT_NE(msgs[3].content.find("did you mean name"), std::string::npos);
  auto attempts = history_.Attempts();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].error_type, "column_not_found");
  EXPECT_EQ(attempts[0].strategy, "schema");
  EXPECT_EQ(attempts[1].diff, "'nme' -> 'name'");
  EXPECT_EQ(history_.Runs()[0].prompt_tokens, 30);  // two generations, one review
}

TEST_F(AgentTest, Guards) {
  struct Case {
    const char* name;
    std::vector<const char*> replies;
    int max_attempts;
    const char* status;
    int attempts;
    ErrorKind kind;
  } cases[] = {
      // The first real cause, not the guard that stopped the run.
      {"unchanged",
       {"SELECT x FROM customers", "select X from customers;"},
       3,
       "failed",
       2,
       ErrorKind::kColumnNotFound},
      {"max attempts",
       {"SELECT a FROM customers", "SELECT b FROM customers", "SELECT c FROM customers"},
       2,
       "failed",
       2,
       ErrorKind::kColumnNotFound},
      {"refused once, then a read",
       {"DELETE FROM customers", "SELECT 1"},
       3,
       "ok",
       2,
       ErrorKind::kNone},
      {"refused twice is final",
       {"DELETE FROM customers", "DROP TABLE customers", "SELECT 1"},
       3,
       "refused",
       2,
       ErrorKind::kRefused},
      {"empty result accepted",
       {"SELECT name FROM customers WHERE 0"},
       3,
       "ok",
       1,
       ErrorKind::kNone},
  };
  for (const auto& c : cases) {
    llm_.replies.clear();
    llm_.requests.clear();
    for (const char* r : c.replies) llm_.Say(r);
    config_.max_attempts = c.max_attempts;
    RunResult r = Run(c.name);
    EXPECT_EQ(RunStatusName(r.status), c.status) << c.name << ": " << r.error.ToString();
    EXPECT_EQ(r.attempts, c.attempts) << c.name;
    EXPECT_EQ(r.error.kind(), c.kind) << c.name;
    EXPECT_EQ(static_cast<int>(llm_.requests.size()), c.attempts) << c.name;
    if (std::string(c.name) == "unchanged") {
      EXPECT_EQ(
          r.error.message(),
          "no such column: x (attempt 1); attempt 2: the model repeated the query of attempt 1");
    }
  }
  // The database was not changed by the refused DELETE.
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db_, "SELECT count(*) FROM customers", -1, &s, nullptr);
  sqlite3_step(s);
  EXPECT_EQ(sqlite3_column_int(s, 0), 3);
  sqlite3_finalize(s);
}

TEST_F(AgentTest, ProviderErrorStopsAtOnce) {
  llm_.replies.push_back(Status(ErrorKind::kProviderAuth, "HTTP 401"));
  RunResult r = Run("q");
  EXPECT_EQ(r.status, RunStatus::kProviderError);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(llm_.requests.size(), 1u);
}

TEST_F(AgentTest, TimeoutIsClassifiedAndRetried) {
  config_.sql_timeout_ms = 50;
  llm_.Say(
      "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c");
  llm_.Say("SELECT count(*) AS n FROM customers");
  RunResult r = Run("q");
  ASSERT_EQ(r.status, RunStatus::kOk);
  EXPECT_EQ(history_.Attempts()[0].error_type, "timeout");
}

TEST_F(AgentTest, RowCapTruncates) {
  config_.max_rows = 2;
  llm_.Say("SELECT name FROM customers");
  RunResult r = Run("q");
  ASSERT_EQ(r.status, RunStatus::kOk);
  Row row;
  int n = 0;
  while (r.query->Next(&row).value()) ++n;
  EXPECT_EQ(n, 2);
  EXPECT_TRUE(r.query->truncated());
}

TEST_F(AgentTest, SchemaCacheRefreshesOnSchemaChange) {
  llm_.Say("SELECT 1");
  llm_.Say("SELECT 2");
  llm_.Say("SELECT 3");
  Run("a");
  Run("b");
  EXPECT_EQ(cache_.introspections(), 1);
  ASSERT_EQ(sqlite3_exec(db_, "CREATE TABLE extra(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  Run("c");
  EXPECT_EQ(cache_.introspections(), 2);
  EXPECT_NE(llm_.requests[2].messages[0].content.find("CREATE TABLE extra"), std::string::npos);
}

// Reads every row of an ok run's first column, as text.
std::vector<std::string> Column(RunResult& r) {
  std::vector<std::string> out;
  Row row;
  while (r.query->Next(&row).value()) {
    const Value& v = row[0];
    out.push_back(std::holds_alternative<int64_t>(v) ? std::to_string(std::get<int64_t>(v))
                                                     : std::get<std::string>(v));
  }
  return out;
}

TEST_F(AgentTest, WrongLiteralIsGroundedAndCorrected) {
  llm_.Say("SELECT COUNT(*) AS n FROM customers WHERE name = 'ada'");
  llm_.Say("SELECT COUNT(*) AS n FROM customers WHERE name = 'Ada'");
  RunResult r = Run("How many customers are called Ada?");
  ASSERT_EQ(r.status, RunStatus::kOk) << r.error.ToString();
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.answer_attempt, 2);
  EXPECT_EQ(Column(r), (std::vector<std::string>{"1"}));
  ASSERT_EQ(llm_.requests.size(), 2u);
  const std::string& correction = llm_.requests[1].messages.back().content;
  EXPECT_NE(correction.find("the query counted 0 rows"), std::string::npos) << correction;
  EXPECT_NE(correction.find("'ada' does not occur in customers.name; it has 'Ada'"),
            std::string::npos)
      << correction;
  auto attempts = history_.Attempts();
  EXPECT_EQ(attempts[0].strategy, "rewrite");
  EXPECT_NE(attempts[0].reflection.find("\"value_not_found\""), std::string::npos);
  EXPECT_NE(attempts[1].reflection.find("\"is_acceptable\":true"), std::string::npos);
  EXPECT_EQ(history_.Runs()[0].answer_attempt, 2);
}

TEST_F(AgentTest, AFlaggedAnswerIsKeptWhenTheRetryDoesNoBetter) {
  struct Case {
    const char* name;
    std::vector<Result<ChatReply>> retry;  // replies after the flagged answer
    int attempts;
    const char* reasoning;
  };
  ChatReply same, broken, also_flagged;
  same.text = "SELECT COUNT(*) AS n FROM customers WHERE name = 'ada'";  // model stands by it
  broken.text = "SELECT nope FROM customers";
  also_flagged.text = "SELECT COUNT(*) AS n FROM customers WHERE name = 'ADA'";
  Case cases[] = {
      {"unchanged", {same}, 2, "the model stood by the query of attempt 1: its result is returned"},
      {"error then limit", {broken, broken}, 3, "returning the result of attempt 1"},
      {"provider down",
       {Status(ErrorKind::kProviderUnavailable, "HTTP 503")},
       2,
       "returning the result of attempt 1"},
      {"no fewer findings", {also_flagged, also_flagged}, 3, "returning the result of attempt 1"},
  };
  for (auto& c : cases) {
    llm_.replies.clear();
    llm_.requests.clear();
    llm_.Say("SELECT COUNT(*) AS n FROM customers WHERE name = 'ada'");
    for (auto& reply : c.retry) llm_.replies.push_back(reply);
    RunResult r = Run("How many customers are called Ada?");
    ASSERT_EQ(r.status, RunStatus::kOk) << c.name << ": " << r.error.ToString();
    EXPECT_EQ(r.attempts, c.attempts) << c.name;
    EXPECT_EQ(r.answer_attempt, 1) << c.name;
    EXPECT_EQ(r.sql, "SELECT COUNT(*) AS n FROM customers WHERE name = 'ada'") << c.name;
    EXPECT_EQ(Column(r), (std::vector<std::string>{"0"})) << c.name;
    EXPECT_NE(history_.Runs().back().reflection.find(c.reasoning), std::string::npos) << c.name;
    // Only a repeat of the flagged query is standing by; it is no error.
    const bool stood = std::string(c.name) == "unchanged";
    EXPECT_EQ(history_.Runs().back().stood_by, stood ? 1 : 0) << c.name;
    EXPECT_EQ(history_.Attempts().back().stood_by, stood ? 1 : 0) << c.name;
    if (stood) {
      EXPECT_EQ(history_.Attempts().back().error_type, "") << c.name;
    }
  }
}

TEST_F(AgentTest, AKeptAnswerStillStreamsPastTheProbe) {
  ASSERT_EQ(
      sqlite3_exec(db_,
                   "CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT, born INTEGER);"
                   "CREATE TABLE pets(id INTEGER PRIMARY KEY, pet TEXT);"
                   "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) "
                   "INSERT INTO people SELECT n, 'p' || n, n FROM c;"
                   "INSERT INTO pets SELECT id, 'pet' || id FROM people;",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  // 1000 rows, sent back: the join equates two tables' own ids.
  llm_.Say("SELECT p.name FROM people p JOIN pets t ON p.id = t.id ORDER BY p.born");
  llm_.Say("SELECT nam FROM people ORDER BY born");
  config_.max_attempts = 2;
  RunResult r = Run("Which people have pets?");
  ASSERT_EQ(r.status, RunStatus::kOk) << r.error.ToString();
  EXPECT_EQ(r.answer_attempt, 1);
  EXPECT_EQ(history_.Attempts()[0].strategy, "rewrite");
  std::vector<std::string> names = Column(r);
  ASSERT_EQ(names.size(), 1000u);
  EXPECT_EQ(names.front(), "p1");
  EXPECT_EQ(names.back(), "p1000");
}

TEST_F(AgentTest, AnInterruptionIsNotCoveredByAKeptAnswer) {
  llm_.Say("SELECT COUNT(*) AS n FROM customers WHERE name = 'ada'");
  llm_.replies.push_back(Status(ErrorKind::kInterrupted, "interrupted"));
  RunResult r = Run("How many customers are called Ada?");
  EXPECT_EQ(r.status, RunStatus::kInterrupted);
  EXPECT_FALSE(r.query);
}

// What a run reads before its model call (schema, value index) on a read
// connection of its own is one read transaction that the agent ends itself
// once that reading is done: by the time the model is asked, another
// connection with busy timeout 0 can commit to the file (rollback-journal
// mode). The session's AfterReads would end it at the model call at the
// latest; this is without it.
TEST(AgentReadsTest, TheAgentEndsItsReadsBeforeItAsksTheModel) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("qp-agent-reads-" + std::to_string(getpid()) + ".db"))
                               .string();
  std::filesystem::remove(path);
  sqlite3* host = nullptr;
  sqlite3* reader = nullptr;
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &host), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(host,
                   "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
                   "INSERT INTO customers(name, city) VALUES ('Ada', 'Lyon'), ('Grace', 'Paris');",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_open(path.c_str(), &writer), SQLITE_OK);

  {  // everything holding the connections goes before they close
    struct Checking : ScriptedClient {
      sqlite3* reader = nullptr;
      sqlite3* writer = nullptr;
      int reader_autocommit = -1;
      int write_rc = -1;
      Result<ChatReply> Complete(const ChatRequest& request) override {
        reader_autocommit = sqlite3_get_autocommit(reader);
        write_rc =
            sqlite3_exec(writer, "INSERT INTO customers(name, city) VALUES ('Linus', 'Oslo')",
                         nullptr, nullptr, nullptr);
        return ScriptedClient::Complete(request);
      }
    } llm;
    llm.reader = reader;
    llm.writer = writer;
    llm.Say("SELECT count(*) AS n FROM customers WHERE city = 'Lyon'");
    Config config;
    SchemaCache cache;
    History history;
    ValueIndexCache values;
    PreModelReads reads(reader);
    AgentContext ctx;
    ctx.db = host;
    ctx.sql = SqlTarget::Own(host);
    ctx.read_db = reader;
    ctx.pre_model_reads = &reads;
    ctx.config = &config;
    ctx.llm = &llm;
    ctx.schema_cache = &cache;
    ctx.value_index = &values;
    ctx.history = &history;
    ctx.model = "m";
    RunResult r = Agent(ctx).Run("How many customers live in lyon?");
    EXPECT_EQ(r.status, RunStatus::kOk) << r.error.message();
    EXPECT_EQ(llm.reader_autocommit, 1);
    EXPECT_EQ(llm.write_rc, SQLITE_OK);
    EXPECT_EQ(llm.requests.size(), 1u);
    // The reads happened: the value index found the city the question names.
    if (!llm.requests.empty()) {
      EXPECT_NE(llm.requests[0].messages.back().content.find("'Lyon'"), std::string::npos)
          << llm.requests[0].messages.back().content;
    }
  }
  EXPECT_EQ(sqlite3_close(writer), SQLITE_OK);
  EXPECT_EQ(sqlite3_close(reader), SQLITE_OK);
  EXPECT_EQ(sqlite3_close(host), SQLITE_OK);
  std::filesystem::remove(path);
}

// The model's review (review 1) of an answer that ran: off, it makes no
// call; accepting, it keeps the answer and adds one call; not accepting, it
// sends the query back once, and the correction replaces the first answer
// only when its own review accepts it; otherwise the first is returned
// below 50 with the review's reasoning; a reply that is not its record
// changes nothing.
TEST_F(AgentTest, TheReviewNeverReplacesAnAnswerWithOneItDoesNotAccept) {
  const std::string first = "```sql\nSELECT name FROM customers ORDER BY id\n```";
  const std::string other = "```sql\nSELECT name FROM customers WHERE id = 1\n```";
  const std::string accept =
      R"({"is_acceptable": true, "should_refine": false, "issues": [], "reasoning": "fits"})";
  const std::string reject =
      R"({"is_acceptable": false, "should_refine": true, "issues": ["only Ada was asked for"],)"
      R"( "reasoning": "the question names Ada"})";
  const std::string reject_again =
      R"({"is_acceptable": false, "should_refine": true, "issues": ["one row only"],)"
      R"( "reasoning": "still wrong"})";
  struct Case {
    const char* name;
    int review;
    std::vector<std::string> replies;
    int calls;        // model calls the run made
    const char* sql;  // the answer returned
    int answer_attempt;
    const char* outcome;  // agent_runs.review
    bool below_50;
    const char* reason_has;  // in confidence_reason ("" : nothing asked)
  } cases[] = {
      {"review off",
       0,
       {first},
       1,
       "SELECT name FROM customers ORDER BY id",
       1,
       "not reviewed",
       false,
       ""},
      {"accepted",
       1,
       {first, accept},
       2,
       "SELECT name FROM customers ORDER BY id",
       1,
       "accepted",
       false,
       "the model's review accepted it"},
      {"correction not accepted",
       1,
       {first, reject, other, reject_again},
       4,
       "SELECT name FROM customers ORDER BY id",
       1,
       "not accepted",
       true,
       "the model's review did not accept it (the question names Ada)"},
      {"correction accepted",
       1,
       {first, reject, other, accept},
       4,
       "SELECT name FROM customers WHERE id = 1",
       2,
       "accepted",
       false,
       "the model's review accepted it"},
      {"stood by",
       1,
       {first, reject, first},
       3,
       "SELECT name FROM customers ORDER BY id",
       1,
       "not accepted",
       true,
       "did not accept it"},
      {"unreadable",
       1,
       {first, "It looks right to me."},
       2,
       "SELECT name FROM customers ORDER BY id",
       1,
       "unreadable",
       false,
       ""},
      {"correction's review unreadable",
       1,
       {first, reject, other, "hmm"},
       4,
       "SELECT name FROM customers ORDER BY id",
       1,
       "not accepted",
       true,
       "did not accept it"},
  };
  config_.answer_cache = 0;
  llm_.reviews_in_script = true;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    config_.review = c.review;
    llm_.requests.clear();
    for (const std::string& reply : c.replies) llm_.Say(reply);
    RunResult r = Run("names?");
    ASSERT_EQ(r.status, RunStatus::kOk) << r.error.ToString();
    EXPECT_TRUE(llm_.replies.empty());
    EXPECT_EQ(static_cast<int>(llm_.requests.size()), c.calls);
    EXPECT_EQ(r.sql, c.sql);
    EXPECT_EQ(r.answer_attempt, c.answer_attempt);
    ASSERT_TRUE(r.query);
    const RunRecord run = history_.Runs().back();
    EXPECT_EQ(run.llm_calls, c.calls);
    EXPECT_EQ(run.prompt_tokens, 10 * c.calls);
    EXPECT_EQ(run.review, c.outcome);
    ASSERT_TRUE(run.confidence.has_value());
    EXPECT_EQ(*run.confidence < 50, c.below_50) << *run.confidence;
    EXPECT_NE(run.confidence_reason.find(c.reason_has), std::string::npos) << run.confidence_reason;
    if (c.review == 0) continue;
    // The review call: its own step, at temperature 0, shown the question,
    // the SQL, the schema part and the rows.
    const ChatRequest& review = llm_.requests[1];
    EXPECT_EQ(review.temperature, 0.0);
    ASSERT_EQ(review.messages.size(), 2u);
    EXPECT_NE(review.messages[0].content.find("is_acceptable"), std::string::npos);
    EXPECT_NE(review.messages[1].content.find("CREATE TABLE customers"), std::string::npos);
    EXPECT_NE(review.messages[1].content.find("{\"name\":\"Grace\"}"), std::string::npos);
    // Its record is in the attempt's reflection, beside the rule checks'.
    std::vector<AttemptRecord> attempts;
    for (const AttemptRecord& a : history_.Attempts()) {
      if (a.run_id == run.id) attempts.push_back(a);
    }
    ASSERT_FALSE(attempts.empty());
    // Standing by a query the review doubted is an answer, not an error.
    for (const AttemptRecord& a : attempts) EXPECT_EQ(a.error_type, "") << a.attempt;
    if (std::string(c.name) == "stood by") {
      EXPECT_EQ(run.stood_by, 1);
    }
    const nlohmann::json j = nlohmann::json::parse(attempts.front().reflection);
    EXPECT_EQ(j["is_acceptable"], true);  // the rule checks' verdict, as it was
    EXPECT_EQ(j["review"]["source"], "review");
    if (std::string(c.outcome) == "unreadable") {
      EXPECT_EQ(j["review"]["unreadable"], true);
    }
    if (c.calls > 2) {
      // Sent back once, with the review's issues, as a strategy of its own.
      EXPECT_EQ(attempts.front().strategy, "review");
      EXPECT_NE(llm_.requests[2].messages.back().content.find("only Ada was asked for"),
                std::string::npos);
    }
  }
}

// review_rows 0 sends the column names and the row count, no row.
TEST_F(AgentTest, ReviewRowsZeroSendsNoRow) {
  config_.answer_cache = 0;
  llm_.reviews_in_script = true;
  config_.review_rows = 0;
  llm_.Say("```sql\nSELECT name FROM customers ORDER BY id\n```");
  llm_.Say(R"({"is_acceptable": true, "should_refine": false, "issues": [], "reasoning": ""})");
  ASSERT_EQ(Run("names?").status, RunStatus::kOk);
  ASSERT_EQ(llm_.requests.size(), 2u);
  const std::string& shown = llm_.requests[1].messages[1].content;
  EXPECT_NE(shown.find("Its rows: 3"), std::string::npos);
  EXPECT_EQ(shown.find("Grace"), std::string::npos);
}

}  // namespace
}  // namespace querypilot
