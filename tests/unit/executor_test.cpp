// The executor's limits (value size, probe bytes) and the interrupt probe,
// on a real in-memory database.
#include "agent/executor.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include "agent/critic.h"
#include "agent/interrupt.h"

namespace querypilot {
namespace {

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK); }
  void TearDown() override { sqlite3_close(db_); }

  Result<std::unique_ptr<LiveQuery>> Run(const char* sql, ExecutionLimits limits = {}) {
    Result<Statement> stmt = CheckSql(db_, sql);
    if (!stmt.ok()) return stmt.status();
    return LiveQuery::Start(db_, std::move(stmt).value(), limits);
  }
  sqlite3* db_ = nullptr;
};

TEST_F(ExecutorTest, HugeValuesFailAtOnceAndTheHostLimitIsRestored) {
  const int host_limit = sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1);
  const char* cases[] = {
      "SELECT randomblob(900000000)",
      "SELECT zeroblob(900000000)",
      "SELECT length(randomblob(20000000))",
      "SELECT hex(zeroblob(10000000))",
      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 20000) "
      "SELECT group_concat(hex(zeroblob(1000))) FROM c",
  };
  for (const char* sql : cases) {
    auto q = Run(sql);
    ASSERT_FALSE(q.ok()) << sql;
    EXPECT_EQ(q.status().kind(), ErrorKind::kExecutionError) << sql;
    EXPECT_NE(q.status().message().find("the most one value of an answer may hold"), std::string::npos)
        << q.status().message();
    EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1), host_limit) << sql;
  }
  // Values under the cap are fine, and the cap never raises a lower host limit.
  EXPECT_TRUE(Run("SELECT randomblob(1000000)").ok());
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, 1000);
  EXPECT_FALSE(Run("SELECT randomblob(5000)").ok());
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1), 1000);
}

TEST_F(ExecutorTest, TheProbeStopsAtItsByteBudgetAndTheRestStreams) {
  ExecutionLimits limits;
  limits.probe_bytes = 1 << 20;
  auto q = Run("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100) "
               "SELECT i, randomblob(100000) AS b FROM c",
               limits);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_LT((*q)->probed_rows(), 12u);
  EXPECT_GE((*q)->probed_rows(), 10u);
  EXPECT_FALSE((*q)->complete_after_probe());
  Row row;
  int64_t n = 0;
  while (true) {
    Result<bool> got = (*q)->Next(&row);
    ASSERT_TRUE(got.ok());
    if (!*got) break;
    ++n;
  }
  EXPECT_EQ(n, 100);
}

TEST_F(ExecutorTest, InterruptProbeSeesSqliteInterruptWhileAStatementRuns) {
  InterruptProbe idle(db_);
  EXPECT_FALSE(idle.Interrupted());
  EXPECT_FALSE(idle.Interrupted());

  // ask() always runs inside the host's statement; stand one up.
  sqlite3_stmt* outer = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db_, "SELECT 1 UNION ALL SELECT 2", -1, &outer, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(outer), SQLITE_ROW);
  InterruptProbe probe(db_);
  EXPECT_FALSE(probe.Interrupted());
  sqlite3_interrupt(db_);
  EXPECT_TRUE(probe.Interrupted());
  EXPECT_TRUE(probe.Interrupted());  // stays answered
  // A probe created after the interrupt sees it too (the parser checks it).
  InterruptProbe late(db_);
  EXPECT_TRUE(late.Interrupted());
  EXPECT_EQ(sqlite3_step(outer), SQLITE_INTERRUPT);
  sqlite3_finalize(outer);
  // Once nothing runs, the flag is cleared and the connection works again.
  EXPECT_EQ(sqlite3_exec(db_, "SELECT 1", nullptr, nullptr, nullptr), SQLITE_OK);
}

}  // namespace
}  // namespace querypilot
