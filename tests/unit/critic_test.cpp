#include "agent/sql/critic.h"
#include "agent/sql/verified.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

namespace querypilot {
namespace {

class CriticTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_, "CREATE TABLE t(a INTEGER, b TEXT); CREATE INDEX t_a ON t(a); INSERT INTO t VALUES (1, 'x');", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    // A stand-in for the shell's writefile(), so that the authorizer, not a
    // missing function, is what refuses it.
    ASSERT_EQ(sqlite3_create_function(db_, "writefile", 2, SQLITE_UTF8, nullptr,
                                      [](sqlite3_context* c, int, sqlite3_value**) { sqlite3_result_int(c, 1); },
                                      nullptr, nullptr),
              SQLITE_OK);
  }
  void TearDown() override { sqlite3_close(db_); }
  sqlite3* db_ = nullptr;
};

TEST_F(CriticTest, Verdicts) {
  struct Case {
    const char* sql;
    ErrorKind want;
  } cases[] = {
      {"SELECT a, b FROM t", ErrorKind::kNone},
      {"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 5) SELECT n FROM c", ErrorKind::kNone},
      {"SELECT * FROM pragma_table_info('t')", ErrorKind::kNone},
      {"SELECT json_extract('{\"a\":1}', '$.a')", ErrorKind::kNone},
      {"SELECT a FROM t; ", ErrorKind::kNone},
      {"SELECT a FROM t; -- trailing comment", ErrorKind::kNone},
      {"SELECT nope FROM t", ErrorKind::kColumnNotFound},
      {"SELECT a FROM nope", ErrorKind::kTableNotFound},
      {"SELEC a FROM t", ErrorKind::kSyntaxError},
      {"-- only a comment", ErrorKind::kNoSql},
      {"SELECT 1; SELECT 2", ErrorKind::kMultipleStatements},
      {"SELECT 1; DELETE FROM t", ErrorKind::kRefused},
      {"DELETE FROM t", ErrorKind::kRefused},
      {"UPDATE t SET a = 2", ErrorKind::kRefused},
      {"INSERT INTO t VALUES (2, 'y')", ErrorKind::kRefused},
      {"DROP TABLE t", ErrorKind::kRefused},
      {"CREATE TABLE u(x)", ErrorKind::kRefused},
      {"ATTACH ':memory:' AS other", ErrorKind::kRefused},
      {"PRAGMA user_version = 3", ErrorKind::kRefused},
      {"PRAGMA table_info(t)", ErrorKind::kRefused},
      {"VACUUM", ErrorKind::kRefused},
      {"BEGIN", ErrorKind::kRefused},
      {"SELECT load_extension('x')", ErrorKind::kRefused},
      {"SELECT writefile('x', 'y')", ErrorKind::kRefused},
      {"EXPLAIN DELETE FROM t", ErrorKind::kRefused},
      {"ANALYZE", ErrorKind::kRefused},
      {"REINDEX", ErrorKind::kRefused},
      {"SAVEPOINT s", ErrorKind::kRefused},
      {"SELECT 'DROP TABLE t; DELETE FROM t' AS s", ErrorKind::kNone},
      {"SELECT \"delete\" FROM (SELECT 1 AS \"delete\")", ErrorKind::kNone},
  };
  for (const auto& c : cases) {
    Result<Statement> r = CheckSql(db_, c.sql);
    if (c.want == ErrorKind::kNone) {
      EXPECT_TRUE(r.ok()) << c.sql << ": " << r.status().ToString();
    } else {
      ASSERT_FALSE(r.ok()) << c.sql;
      EXPECT_EQ(r.status().kind(), c.want) << c.sql << ": " << r.status().ToString();
    }
  }
  // Nothing ran: the table is as it was.
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db_, "SELECT count(*), sum(a) FROM t", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 1);
  EXPECT_EQ(sqlite3_column_int(s, 1), 1);
  sqlite3_finalize(s);
}

TEST_F(CriticTest, AuthorizerIsRemovedAfterChecking) {
  ASSERT_FALSE(CheckSql(db_, "DELETE FROM t").ok());
  EXPECT_EQ(sqlite3_exec(db_, "INSERT INTO t VALUES (5, 'z')", nullptr, nullptr, nullptr), SQLITE_OK);
}

// The one recipe: what the critic refuses never runs; what passes runs
// under the limits, with its parameters bound.
TEST_F(CriticTest, RunVerifiedChecksThenRuns) {
  ExecutionLimits limits;
  VerifiedStage stage = VerifiedStage::kRun;
  auto refused = RunVerified(db_, "DELETE FROM t", limits, {}, &stage);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().kind(), ErrorKind::kRefused);
  EXPECT_EQ(stage, VerifiedStage::kCheck);
  auto two = RunVerified(db_, "SELECT 1; DELETE FROM t", limits, {}, &stage);
  EXPECT_EQ(two.status().kind(), ErrorKind::kRefused);
  auto bound = RunVerified(db_, "SELECT a FROM t WHERE b = ?1", limits, {"x"}, &stage);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ((*bound)->buffered_rows().size(), 1u);
  auto failed = RunVerified(db_, "SELECT zeroblob(2000000000)", limits, {}, &stage);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().kind(), ErrorKind::kValueTooBig);
  EXPECT_EQ(stage, VerifiedStage::kRun);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db_, "SELECT count(*) FROM t", -1, &s, nullptr);
  sqlite3_step(s);
  EXPECT_EQ(sqlite3_column_int(s, 0), 1);  // the DELETE never ran
  sqlite3_finalize(s);
}

}  // namespace
}  // namespace querypilot
