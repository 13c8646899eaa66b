#include "agent/memory/history.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "agent/memory/history_file.h"
#include "agent/sql/own_file.h"

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
  int64_t next = 1;
  Status SaveRun(const RunRecord&, const std::vector<AttemptRecord>*, bool) override {
    return Status::Ok();
  }
  Result<int64_t> NewRunId(int64_t at_least) override {
    next = std::max(next, at_least);
    return next++;
  }
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
  std::vector<int64_t> claimed;                   // ids the history claimed as it wrote
  Status SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts,
                 bool claim_id) override {
    if (fail) return Status(ErrorKind::kDatabaseBusy, "it is locked");
    saved.push_back({run.id, attempts ? attempts->size() : 0});
    if (claim_id) claimed.push_back(run.id);
    return Status::Ok();
  }
  Result<int64_t> NewRunId(int64_t at_least) override {
    if (fail) return Status(ErrorKind::kDatabaseBusy, "it is locked");
    return at_least;
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
            "history_file did not keep this run (it is locked); it lasts only as long as this "
            "connection");
  h.SetRows(r.id, 3, false);  // still failing: still the whole run
  EXPECT_EQ(h.Runs()[0].rows, 3);
  EXPECT_NE(h.Runs()[0].not_kept.find("did not keep this run ("), std::string::npos);
  // A verdict or a forgetting the sink could not write changes nothing.
  Status fb = h.SetFeedback(r.id, "good");
  EXPECT_EQ(fb.kind(), ErrorKind::kDatabaseBusy);
  EXPECT_NE(fb.message().find("the verdict on run 1 is not recorded"), std::string::npos)
      << fb.message();
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
  // Its id was never given by the sink: the write claimed it, once.
  EXPECT_EQ(sink->claimed, (std::vector<int64_t>{1}));
  h.SetRows(r.id, 5, false);
  EXPECT_EQ(sink->claimed, (std::vector<int64_t>{1}));
  sink->fail = true;
  h.SetExplanation(r.id, "text", -1, -1);  // a kept run: only its change is named
  EXPECT_EQ(h.Runs()[0].not_kept,
            "history_file did not keep this run's explanation (it is locked); it lasts only as "
            "long as this "
            "connection");
}

// A sink that keeps the JSON of every run and attempt written to it.
struct JsonSink : HistorySink {
  std::string written;
  int64_t next = 1;
  Result<int64_t> NewRunId(int64_t at_least) override {
    next = std::max(next, at_least);
    return next++;
  }
  Status SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts, bool) override {
    written += RunToJson(run);
    if (attempts) {
      for (const AttemptRecord& a : *attempts) written += AttemptToJson(a);
    }
    return Status::Ok();
  }
  Status ForgetRun(int64_t) override { return Status::Ok(); }
};

TEST(History, EveryTextItKeepsIsScrubbedOfTheSecretsItKnows) {
  History h;
  auto sink = std::make_shared<JsonSink>();
  ASSERT_TRUE(h.Attach(sink, {}, {}));
  h.KnowSecrets(Secrets({"SECRET", "pass"}));
  h.KnowSecrets(Secrets({"sk-key-0123456789"}));  // known as well, not instead
  const std::string echo = "GET /v1?key=SECRET pass sk-key-0123456789 password";
  const std::string scrubbed = "GET /v1?key=[redacted] [redacted] [redacted] password";
  RunRecord r;
  r.id = h.NextRunId();
  r.question = echo;
  r.error = echo;
  r.sql = "SELECT 'SECRET'";
  r.clarifications = {echo};
  r.advice = {echo};
  AttemptRecord a;
  a.run_id = r.id;
  a.attempt = 1;
  a.reply = echo;
  a.error = echo;
  h.Add(r, {a});
  const RunRecord kept = h.Runs().at(0);
  EXPECT_EQ(kept.question, scrubbed);
  EXPECT_EQ(kept.error, scrubbed);
  EXPECT_EQ(kept.sql, "SELECT '[redacted]'");
  EXPECT_EQ(kept.clarifications, std::vector<std::string>{scrubbed});
  EXPECT_EQ(kept.advice, std::vector<std::string>{scrubbed});
  EXPECT_EQ(h.Attempts().at(0).reply, scrubbed);
  EXPECT_EQ(h.Attempts().at(0).error, scrubbed);
  h.SetExplanation(r.id, "It used SECRET.", -1, -1);
  EXPECT_EQ(h.Runs().at(0).explanation, "It used [redacted].");
  h.SetStopped(r.id, 2, Status(ErrorKind::kInterrupted, "stopped at pass"));
  EXPECT_EQ(h.Runs().at(0).error, "the answer's rows stopped after 2 rows: stopped at [redacted]");
  EXPECT_EQ(h.Scrub("an error naming SECRET"), "an error naming [redacted]");
  // Nor does the file get one.
  EXPECT_NE(sink->written.find("[redacted]"), std::string::npos);
  EXPECT_EQ(sink->written.find("SECRET"), std::string::npos);
  EXPECT_EQ(sink->written.find("sk-key"), std::string::npos);
  EXPECT_EQ(sink->written.find(" pass "), std::string::npos);
}

// One history file, as two processes' connections use it: each a history
// of its own on a HistoryFile of its own.
class SharedHistoryFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("qp-shared-history-" + std::to_string(getpid()) + ".qphistory"))
                .string();
    RemoveOwnFile(path_);
    for (sqlite3** host : {&host1_, &host2_}) ASSERT_EQ(sqlite3_open(":memory:", host), SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(host1_);
    sqlite3_close(host2_);
    RemoveOwnFile(path_);
  }
  // A history attached to the file, seeing what it holds now.
  std::shared_ptr<HistoryFile> Attach(sqlite3* host, History& h) {
    std::vector<RunRecord> runs;
    std::vector<AttemptRecord> attempts;
    Result<std::shared_ptr<HistoryFile>> file = HistoryFile::Open(host, path_, &runs, &attempts);
    EXPECT_TRUE(file.ok()) << file.status().message();
    if (!file.ok()) return nullptr;
    EXPECT_TRUE(h.Attach(*file, std::move(runs), std::move(attempts)));
    return *file;
  }
  // A run of `h`, with one attempt, ended and kept.
  static int64_t Ask(History& h) {
    RunRecord r;
    r.id = h.NextRunId();
    r.status = RunStatus::kOk;
    AttemptRecord a;
    a.run_id = r.id;
    a.attempt = 1;
    h.Add(r, {a});
    return r.id;
  }
  // The ids of the runs the file holds, as a new connection reads them.
  std::vector<int64_t> InFile() {
    History fresh;
    Attach(host1_, fresh);
    std::vector<int64_t> ids;
    for (const RunRecord& r : fresh.Runs()) ids.push_back(r.id);
    return ids;
  }
  std::string path_;
  sqlite3* host1_ = nullptr;
  sqlite3* host2_ = nullptr;
};

TEST_F(SharedHistoryFile, RunsAreNumberedApartForgottenOneByOneAndBounded) {
  History one, two;
  std::shared_ptr<HistoryFile> file_one = Attach(host1_, one);
  Attach(host2_, two);
  // Both read the file before either asked: the ids still differ.
  EXPECT_EQ(Ask(one), 1);
  EXPECT_EQ(Ask(two), 2);
  EXPECT_EQ(Ask(one), 3);
  for (const History* h : {&one, &two}) {
    for (const RunRecord& r : h->Runs()) EXPECT_EQ(r.not_kept, "") << r.id;
  }
  EXPECT_EQ(InFile(), (std::vector<int64_t>{1, 2, 3}));
  // Forgetting names one run: the other process's stay.
  ASSERT_TRUE(two.Forget(2).ok());
  EXPECT_EQ(InFile(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Ask(two), 4);  // a forgotten id is never given again
  // Past max_history_runs, the oldest go, with their attempts.
  file_one->SetMaxRuns(2);
  EXPECT_EQ(Ask(one), 5);
  EXPECT_EQ(InFile(), (std::vector<int64_t>{4, 5}));
}

// A file an earlier QueryPilot made, without the runs' id index, gets it when
// opened; a full history counts its runs by it, and keeps the newest
// max_history_runs with their attempts, the ids given while it filled having
// gaps (a forgotten run).
TEST_F(SharedHistoryFile, AFullHistoryIsCountedByItsIdIndexAndKeepsTheNewest) {
  {
    History first;
    Attach(host1_, first);
    for (int i = 0; i < 30; ++i) Ask(first);
    ASSERT_TRUE(first.Forget(28).ok());
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  auto count = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(raw, sql, -1, &st, nullptr), SQLITE_OK) << sql;
    const int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
  };
  const char* has_index =
      "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'querypilot_runs_ids'";
  EXPECT_EQ(count(has_index), 1);
  ASSERT_EQ(sqlite3_exec(raw, "DROP INDEX querypilot_runs_ids", nullptr, nullptr, nullptr),
            SQLITE_OK);
  History next;
  std::shared_ptr<HistoryFile> file = Attach(host2_, next);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(count(has_index), 1);
  file->SetMaxRuns(10);
  EXPECT_EQ(Ask(next), 31);
  EXPECT_EQ(InFile(), (std::vector<int64_t>{21, 22, 23, 24, 25, 26, 27, 29, 30, 31}));
  EXPECT_EQ(count("SELECT count(*) FROM querypilot_attempts"), 10);
  EXPECT_EQ(count("SELECT min(run_id) FROM querypilot_attempts"), 21);
  // At the bound, one run kept drops one.
  EXPECT_EQ(Ask(next), 32);
  EXPECT_EQ(InFile(), (std::vector<int64_t>{22, 23, 24, 25, 26, 27, 29, 30, 31, 32}));
  sqlite3_close(raw);
}

TEST_F(SharedHistoryFile, ARefreshReadsWhatOthersWroteAndKeepsWhatOnlyThisHistoryHas) {
  History one, two;
  Attach(host1_, one);
  Attach(host2_, two);
  EXPECT_FALSE(two.Refresh());  // no one else wrote: nothing is read
  EXPECT_EQ(Ask(one), 1);
  ASSERT_TRUE(two.Refresh());
  ASSERT_EQ(two.Runs().size(), 1u);
  EXPECT_EQ(two.Attempts().size(), 1u);
  ASSERT_TRUE(two.SetFeedback(1, "good").ok());
  EXPECT_FALSE(two.Refresh());  // its own write
  ASSERT_TRUE(one.Refresh());
  EXPECT_EQ(one.Runs()[0].feedback, "good");
  // A run one could not write stays in one, as it is, through a refresh.
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(Ask(one), 2);
  sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  ASSERT_TRUE(two.Forget(1).ok());
  ASSERT_TRUE(one.Refresh());
  ASSERT_EQ(one.Runs().size(), 1u);
  EXPECT_EQ(one.Runs()[0].id, 2);
  EXPECT_NE(one.Runs()[0].not_kept, "");
  EXPECT_EQ(one.Attempts().size(), 1u);
}

TEST_F(SharedHistoryFile, AnIdGivenWhileTheFileWasLockedIsKeptOnlyIfStillFree) {
  History one, two;
  Attach(host1_, one);
  Attach(host2_, two);
  EXPECT_EQ(Ask(one), 1);
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  // The file gives no id: the next one this history knows, not kept yet.
  EXPECT_EQ(Ask(one), 2);
  EXPECT_NE(one.Runs().back().not_kept.find("did not keep this run"), std::string::npos);
  sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr);
  // Once the lock is gone a run of one's is written under the id it had;
  // here the other process was given it first, so it stays unkept, and says
  // why, and the other's run is untouched.
  EXPECT_EQ(Ask(two), 2);
  one.SetRows(2, 1, false);
  EXPECT_NE(one.Runs().back().not_kept.find("another connection's run has since been given 2"),
            std::string::npos)
      << one.Runs().back().not_kept;
  EXPECT_EQ(InFile(), (std::vector<int64_t>{1, 2}));
  // An id still free when the lock goes is claimed, and kept.
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(Ask(one), 3);
  sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  one.SetRows(3, 1, false);
  EXPECT_EQ(one.Runs().back().not_kept, "");
  EXPECT_EQ(Ask(two), 4);
  EXPECT_EQ(InFile(), (std::vector<int64_t>{1, 2, 3, 4}));
}

// The columns users' SQL reads, by name and in order: a change here breaks
// their queries.
TEST(History, AgentRunsAndAgentAttemptsKeepTheirColumns) {
  const std::vector<std::string> runs = {"id INTEGER",
                                         "question TEXT",
                                         "status TEXT",
                                         "sql TEXT",
                                         "attempts INTEGER",
                                         "error TEXT",
                                         "error_type TEXT",
                                         "reflection TEXT",
                                         "answer_attempt INTEGER",
                                         "rows INTEGER",
                                         "truncated INTEGER",
                                         "provider TEXT",
                                         "model TEXT",
                                         "llm_calls INTEGER",
                                         "duration_ms REAL",
                                         "llm_ms REAL",
                                         "prompt_tokens INTEGER",
                                         "completion_tokens INTEGER",
                                         "created_at TEXT",
                                         "clarifications TEXT",
                                         "examples TEXT",
                                         "feedback TEXT",
                                         "explanation TEXT",
                                         "session TEXT",
                                         "standalone_question TEXT",
                                         "cached_from INTEGER",
                                         "node_times TEXT",
                                         "advice TEXT",
                                         "stood_by INTEGER",
                                         "confidence INTEGER",
                                         "alternatives TEXT",
                                         "not_kept TEXT",
                                         "stopped_reads TEXT",
                                         "confidence_reason TEXT",
                                         "samples TEXT",
                                         "review TEXT"};
  const std::vector<std::string> attempts = {"run_id INTEGER",
                                             "attempt INTEGER",
                                             "sql TEXT",
                                             "error_type TEXT",
                                             "error TEXT",
                                             "hint TEXT",
                                             "strategy TEXT",
                                             "diff TEXT",
                                             "reply TEXT",
                                             "reflection TEXT",
                                             "prompt_tokens INTEGER",
                                             "completion_tokens INTEGER",
                                             "llm_ms REAL",
                                             "exec_ms REAL",
                                             "model TEXT",
                                             "stood_by INTEGER"};
  std::vector<std::string> got;
  for (const auto& f : kRunFields)
    got.push_back(std::string(f.column) + " " + std::string(DeclaredType(f)));
  EXPECT_EQ(got, runs);
  got.clear();
  for (const auto& f : kAttemptFields)
    got.push_back(std::string(f.column) + " " + std::string(DeclaredType(f)));
  EXPECT_EQ(got, attempts);
}

// A value of each member type that no field holds by default, different per
// field (`n`).
template <typename Record>
void SetDistinct(const RecordField<Record>& f, Record& r, int n) {
  std::visit(
      [&](auto member) {
        auto& v = r.*member;
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          v = true;
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          v = 100 + n;
        } else if constexpr (std::is_same_v<T, double>) {
          v = n + 0.25;
        } else if constexpr (std::is_same_v<T, std::string>) {
          v = "caf\xC3\xA9 " + std::to_string(n);
        } else if constexpr (std::is_same_v<T, RunStatus>) {
          v = RunStatus::kNeedsClarification;
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          v = 200 + n;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          v = {"a" + std::to_string(n), "b"};
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          v = {n, n + 1};
        } else {
          static_assert(std::is_same_v<T, NodeTimes>);
          v = {{"cache", 0.5 + n}, {"load_schema/value_index", 1.125}};
        }
      },
      f.member);
}

template <typename Record>
bool SameField(const RecordField<Record>& f, const Record& a, const Record& b) {
  return std::visit([&](auto member) { return a.*member == b.*member; }, f.member);
}

TEST(History, EveryFieldTheFileKeepsComesBackAsItWasWritten) {
  RunRecord run;
  int n = 0;
  for (const auto& f : kRunFields) SetDistinct(f, run, ++n);
  std::optional<RunRecord> back = RunFromJson(RunToJson(run));
  ASSERT_TRUE(back);
  for (const auto& f : kRunFields) {
    if (f.in_file) {
      EXPECT_TRUE(SameField(f, run, *back)) << f.column;
    } else {
      EXPECT_FALSE(SameField(f, run, *back)) << f.column << " is kept in memory only";
    }
  }
  EXPECT_EQ(back->not_kept, "");  // the one field the file never holds

  AttemptRecord attempt;
  for (const auto& f : kAttemptFields) SetDistinct(f, attempt, ++n);
  std::optional<AttemptRecord> again = AttemptFromJson(AttemptToJson(attempt));
  ASSERT_TRUE(again);
  for (const auto& f : kAttemptFields) EXPECT_TRUE(SameField(f, attempt, *again)) << f.column;
}

// Every key of `older` is in `newer` with the same value: a version that
// wrote `older` reads `newer` as it would its own (keys it does not know are
// ignored).
void ExpectKeysKept(const std::string& older, const std::string& newer) {
  const nlohmann::json before = nlohmann::json::parse(older);
  const nlohmann::json after = nlohmann::json::parse(newer);
  for (const auto& [key, value] : before.items()) {
    EXPECT_TRUE(after.contains(key) && after[key] == value) << key;
  }
}

// Records as QueryPilot wrote them before the field tables: they load whole,
// and are written again with every key and value they had, so older versions
// read newer files.
TEST(History, RecordsWrittenBeforeLoadWholeAndAreWrittenTheSame) {
  const std::string run_json =
      R"x({"advice":["CREATE INDEX a ON t(b)"],"answer_attempt":1,"attempts":2,"cached_from":3,)x"
      R"x("clarifications":["Which year?"],"completion_tokens":40,"created_at":"2025-01-02T03:04:05Z",)x"
      R"x("duration_ms":12.5,"error":"e","error_type":"column_not_found","examples":[4,5],"explanation":"x",)x"
      R"x("feedback":"good","id":12,"llm_calls":2,"llm_ms":10.25,"model":"gpt",)x"
      R"x("node_times":[["cache",0.5],["generate",10.0]],"prompt_tokens":300,"provider":"openai",)x"
      R"x("question":"How many orders came from France?","reflection":"{\"is_acceptable\":true}","rows":1,)x"
      R"x("session":"alice","sql":"SELECT COUNT(*) FROM orders","standalone":"And from France?",)x"
      R"x("status":"ok","stood_by":1,"truncated":true})x";
  std::optional<RunRecord> run = RunFromJson(run_json);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->id, 12);
  EXPECT_EQ(run->status, RunStatus::kOk);
  EXPECT_EQ(run->standalone, "And from France?");
  EXPECT_EQ(run->node_times, (NodeTimes{{"cache", 0.5}, {"generate", 10.0}}));
  EXPECT_EQ(run->rows, 1);
  EXPECT_TRUE(run->truncated);
  EXPECT_EQ(run->advice, (std::vector<std::string>{"CREATE INDEX a ON t(b)"}));
  EXPECT_EQ(run->stood_by, 1);
  ExpectKeysKept(run_json, RunToJson(*run));

  const std::string attempt_json =
      R"x({"attempt":2,"completion_tokens":8,"diff":"d","error":"e","error_type":"t","exec_ms":2.5,"hint":"h",)x"
      R"x("llm_ms":1.5,"model":"m","prompt_tokens":7,"reflection":"{}","reply":"r","run_id":12,"sql":"SELECT 1",)x"
      R"x("stood_by":1,"strategy":"s"})x";
  std::optional<AttemptRecord> attempt = AttemptFromJson(attempt_json);
  ASSERT_TRUE(attempt);
  EXPECT_EQ(attempt->run_id, 12);
  EXPECT_EQ(attempt->exec_ms, 2.5);
  ExpectKeysKept(attempt_json, AttemptToJson(*attempt));

  // A run written before some fields existed keeps their defaults.
  std::optional<RunRecord> old =
      RunFromJson(R"({"id":3,"question":"q","status":"failed","rows":"x"})");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, RunStatus::kFailed);
  EXPECT_FALSE(old->rows);
  EXPECT_EQ(old->prompt_tokens, -1);
  EXPECT_TRUE(old->node_times.empty());
}

// A value as "NULL", "5", "2.5" or 'text', for comparing.
std::string AsText(const ShownValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v.value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v.value)) return std::to_string(*d);
  if (const auto* t = std::get_if<std::string>(&v.value))
    return "'" + *t + "'" + (v.json ? " json" : "");
  return std::holds_alternative<std::monostate>(v.value) ? "NULL" : "blob";
}

// What agent_runs shows of a field, by the way its row says.
TEST(History, ColumnsShowNoneAsNull) {
  RunRecord r;
  r.prompt_tokens = -1;
  r.completion_tokens = 0;
  r.advice = {"CREATE INDEX a ON t(x)", "CREATE INDEX b ON u(y)"};
  r.examples = {2, 5};
  r.node_times = {{"cache", 0.0004}, {"generate", 1.23456}};
  auto shown = [&](std::string_view column) {
    for (const auto& f : kRunFields) {
      if (f.column == column) return AsText(ShowField(f, r));
    }
    return std::string("no such column");
  };
  EXPECT_EQ(shown("prompt_tokens"), "NULL");
  EXPECT_EQ(shown("completion_tokens"), "0");
  EXPECT_EQ(shown("answer_attempt"), "NULL");
  EXPECT_EQ(shown("rows"), "NULL");
  EXPECT_EQ(shown("question"), "''");
  EXPECT_EQ(shown("sql"), "NULL");
  EXPECT_EQ(shown("status"), "'failed'");
  EXPECT_EQ(shown("truncated"), "0");
  EXPECT_EQ(shown("advice"), "'CREATE INDEX a ON t(x)\nCREATE INDEX b ON u(y)'");
  EXPECT_EQ(shown("examples"), "'[2,5]' json");
  EXPECT_EQ(shown("clarifications"), "NULL");
  EXPECT_EQ(shown("node_times"), R"('{"cache":0.0,"generate":1.235}' json)");
  EXPECT_EQ(shown("duration_ms"), std::to_string(0.0));
}

}  // namespace
}  // namespace querypilot
