// The answers a connection keeps between SQLite's calls: per running
// statement (StatementAnswers), per answer table (AnswerTables), and the
// columns an answer table has (AnswerTableColumns, AnswerTableSpecFor), over
// real statements of an in-memory database.
#include "agent/answers/answers.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

TEST(AnswerTableColumnNames, UniqueAsSQLiteComparesNames) {
  struct Case {
    std::vector<std::string> names;
    std::vector<std::string> want;
  } cases[] = {
      {{}, {}},
      {{"name", "total"}, {"name", "total"}},
      {{"a", "A"}, {"a", "A:1"}},                    // one column to SQLite
      {{"t", "t", "T"}, {"t", "t:1", "T:2"}},        // each repeat its own suffix
      {{"", "x", ""}, {"column1", "x", "column3"}},  // by position
      {{"a:1", "a", "a"}, {"a:1", "a", "a:2"}},      // a suffix already taken is skipped
      {{"Ä", "ä"}, {"Ä", "ä"}},                      // only ASCII case is ignored
  };
  for (const auto& c : cases) {
    EXPECT_EQ(AnswerTableColumnNames(c.names), c.want) << ::testing::PrintToString(c.names);
  }
}

// "name TYPE [hidden]" for each column, to compare in one line.
std::vector<std::string> Shown(const std::vector<AnswerColumn>& columns) {
  std::vector<std::string> out;
  for (const AnswerColumn& c : columns) {
    out.push_back(c.name + (c.declared_type.empty() ? "" : " " + c.declared_type) +
                  (c.hidden ? " hidden" : ""));
  }
  return out;
}

TEST(AnswerTableColumns, TheAnswersColumnsThenHiddenRunIdAndSqlUnderFreeNames) {
  struct Case {
    std::vector<std::string> names;
    std::vector<std::string> types;
    std::vector<std::string> want;
  } cases[] = {
      {{"name", "n"},
       {"TEXT", "INTEGER"},
       {"name TEXT", "n INTEGER", "run_id INTEGER hidden", "sql TEXT hidden",
        "confidence INTEGER hidden", "confidence_reason TEXT hidden"}},
      {{},
       {},
       {"run_id INTEGER hidden", "sql TEXT hidden", "confidence INTEGER hidden",
        "confidence_reason TEXT hidden"}},
      // Types missing (the host's SQLite does not say): none declared.
      {{"a", "b"},
       {"REAL"},
       {"a REAL", "b", "run_id INTEGER hidden", "sql TEXT hidden", "confidence INTEGER hidden",
        "confidence_reason TEXT hidden"}},
      // The answer's own run_id and sql keep their names; the hidden ones move.
      {{"run_id", "SQL"},
       {},
       {"run_id", "SQL", "querypilot_run_id INTEGER hidden", "querypilot_sql TEXT hidden",
        "confidence INTEGER hidden", "confidence_reason TEXT hidden"}},
      {{"run_id", "querypilot_run_id", "sql", "querypilot_sql"},
       {},
       {"run_id", "querypilot_run_id", "sql", "querypilot_sql",
        "querypilot_run_id_2 INTEGER hidden", "querypilot_sql_2 TEXT hidden",
        "confidence INTEGER hidden", "confidence_reason TEXT hidden"}},
      // The declared type is handed on as SQLite gave it: ext/ judges it.
      {{"x"},
       {"TEXT HIDDEN"},
       {"x TEXT HIDDEN", "run_id INTEGER hidden", "sql TEXT hidden", "confidence INTEGER hidden",
        "confidence_reason TEXT hidden"}},
  };
  for (const auto& c : cases) {
    std::vector<AnswerColumn> got = AnswerTableColumns(c.names, c.types);
    EXPECT_EQ(Shown(got), c.want) << ::testing::PrintToString(c.names);
  }
}

class AnswersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE t(id INTEGER PRIMARY KEY, label VARCHAR(20), "
                           "amount NUMERIC(10, 2), note);"
                           "INSERT INTO t VALUES (1, 'a', 1.5, 'x'), (2, 'b', 2.5, 'y');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  void TearDown() override {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  // A statement of the connection stepped once: busy, as a statement that
  // called ask() is.
  sqlite3_stmt* Busy(const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    stmts_.push_back(s);
    return s;
  }
  std::shared_ptr<StatementAnswer> Answer(int64_t run_id) {
    auto a = std::make_shared<StatementAnswer>();
    a->run_id = run_id;
    a->sql = "SELECT 1";
    return a;
  }

  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

TEST_F(AnswersTest, TheContextIsTheBusyStatementsNotQueryPilotsOwn) {
  StatementAnswers answers(db_);
  EXPECT_TRUE(answers.Current().empty());
  sqlite3_stmt* outer = Busy("SELECT id FROM t");
  sqlite3_stmt* own = Busy("SELECT label FROM t");
  sqlite3_stmt* idle = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db_, "SELECT 1", -1, &idle, nullptr), SQLITE_OK);
  stmts_.push_back(idle);
  answers.RegisterOwn(own);
  StatementContext context = answers.Current();
  ASSERT_EQ(context.size(), 1u);
  EXPECT_EQ(context[0].stmt, outer);
  EXPECT_EQ(context[0].runs, 1);
  answers.UnregisterOwn(own);
  EXPECT_EQ(answers.Current().size(), 2u);
}

TEST_F(AnswersTest, AnAnswerIsFoundWhileItsStatementRunsAndACursorHoldsIt) {
  StatementAnswers answers(db_);
  sqlite3_stmt* outer = Busy("SELECT id FROM t");
  std::shared_ptr<StatementAnswer> held = Answer(7);  // the ask() cursor's
  answers.Keep("q", answers.Current(), held);
  EXPECT_EQ(answers.Find("q", answers.Current()), held);
  EXPECT_EQ(answers.Find("other question", answers.Current()), nullptr);

  // Inside another statement (a subquery's ask): not this statement's answer,
  // but still kept for it.
  Busy("SELECT note FROM t");
  EXPECT_EQ(answers.Find("q", answers.Current()), nullptr);
  sqlite3_reset(stmts_.back());
  EXPECT_EQ(answers.Find("q", answers.Current()), held);

  // The statement run again is another statement: the answer is forgotten.
  sqlite3_reset(outer);
  ASSERT_EQ(sqlite3_step(outer), SQLITE_ROW);
  EXPECT_EQ(answers.Find("q", answers.Current()), nullptr);
  answers.Keep("q", answers.Current(), held);
  EXPECT_EQ(answers.Find("q", answers.Current()), held);

  // No cursor holds it any more: the statement has closed them.
  held.reset();
  EXPECT_EQ(answers.Find("q", answers.Current()), nullptr);
}

TEST_F(AnswersTest, ForgetRunAndTheCapDropAnswers) {
  StatementAnswers answers(db_);
  Busy("SELECT id FROM t");
  std::vector<std::shared_ptr<StatementAnswer>> held;
  for (int i = 1; i <= 17; ++i) {
    held.push_back(Answer(i));
    answers.Keep("q" + std::to_string(i), answers.Current(), held.back());
  }
  EXPECT_EQ(answers.Find("q1", answers.Current()), nullptr);  // 16 at most: the oldest went
  EXPECT_EQ(answers.Find("q2", answers.Current()), held[1]);
  EXPECT_EQ(answers.Find("q17", answers.Current()), held[16]);
  answers.ForgetRun(17);
  EXPECT_EQ(answers.Find("q17", answers.Current()), nullptr);
  EXPECT_EQ(answers.Find("q16", answers.Current()), held[15]);
}

TEST_F(AnswersTest, AnswerTablesByNameInAnyCaseUntilDropped) {
  AnswerTables tables;
  auto spec = std::make_shared<AnswerTableSpec>();
  spec->question = "q";
  tables.Keep("temp", "Top5", spec);
  EXPECT_EQ(tables.Find("TEMP", "top5"), spec);
  EXPECT_EQ(tables.Find("main", "top5"), nullptr);
  EXPECT_EQ(tables.Find("temp", "top6"), nullptr);
  tables.Forget("temp", "TOP5");
  EXPECT_EQ(tables.Find("temp", "Top5"), nullptr);
}

TEST_F(AnswersTest, ASpecHasTheRunsColumnsWithTheirDeclaredTypes) {
  RunResult run;
  run.run_id = 4;
  run.sql = "SELECT id, label, amount, note, label AS LABEL, count(*) AS n FROM t";
  ExecutionLimits limits;
  auto query = RunVerified(SqlTarget::Own(db_), run.sql, limits);
  ASSERT_TRUE(query.ok()) << query.status().message();
  run.query = std::move(query).value();
  std::shared_ptr<AnswerTableSpec> spec = AnswerTableSpecFor("what is in t?", run);
  EXPECT_EQ(spec->question, "what is in t?");
  EXPECT_EQ(spec->run_id, 4);
  EXPECT_EQ(spec->sql, run.sql);
  EXPECT_EQ(spec->answer_columns, 6);
  EXPECT_EQ(Shown(spec->columns),
            (std::vector<std::string>{"id INTEGER", "label VARCHAR(20)", "amount NUMERIC(10, 2)",
                                      "note", "LABEL:1 VARCHAR(20)", "n", "run_id INTEGER hidden",
                                      "sql TEXT hidden", "confidence INTEGER hidden",
                                      "confidence_reason TEXT hidden"}));
}

}  // namespace
}  // namespace querypilot
