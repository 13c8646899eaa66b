// The executor's limits (value size, probe bytes) and the interrupt probe,
// on a real in-memory database.
#include "agent/sql/executor.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>

#include "agent/sql/critic.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/query_only.h"

namespace querypilot {
namespace {

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK); }
  void TearDown() override { sqlite3_close(db_); }

  Result<std::unique_ptr<LiveQuery>> Run(const char* sql, ExecutionLimits limits = {}) {
    Result<Statement> stmt = CheckSql(SqlTarget::Own(db_), sql);
    if (!stmt.ok()) return stmt.status();
    return LiveQuery::Start(SqlTarget::Own(db_), std::move(stmt).value(), limits);
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
      // 40 MB in 200 KB pieces. (Past half the cap SQLite grows the string
      // by each piece, and under AddressSanitizer every realloc copies it: a
      // 2 KB piece made that 4,000 copies of 12 MB, seconds of copying.)
      ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 200) "
       "SELECT group_concat(hex(zeroblob(100000))) FROM c"),
  };
  for (const char* sql : cases) {
    auto q = Run(sql);
    ASSERT_FALSE(q.ok()) << sql;
    EXPECT_EQ(q.status().kind(), ErrorKind::kValueTooBig) << sql;
    EXPECT_NE(q.status().message().find("the most one value of an answer may hold"),
              std::string::npos)
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
  auto q =
      Run("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100) "
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

// An endless query, one long step (count) and one that streams rows.
constexpr const char* kEndlessCount =
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c";
constexpr const char* kEndlessRows =
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT i FROM c";

int CountCalls(void* n) noexcept {
  ++*static_cast<int*>(n);
  return 0;
}

TEST_F(ExecutorTest, EveryStopMethodEndsAQueryPastItsBudgetAsATimeout) {
  enum Interrupted { kNo, kYes, kEither };
  struct Case {
    const char* sql;
    StopMethod stop;
    Interrupted leaves_connection_interrupted;
  };
  const Case cases[] = {
      {kEndlessCount, StopMethod::kWatchdog, kYes},
      // Mostly stopped between rows; a row step that straddles the deadline
      // may be interrupted instead.
      {kEndlessRows, StopMethod::kWatchdog, kEither},
      {kEndlessCount, StopMethod::kProgressHandler, kNo},
      {kEndlessRows, StopMethod::kProgressHandler, kNo},
      {kEndlessRows, StopMethod::kBetweenSteps, kNo},
  };
  for (const Case& c : cases) {
    // As inside ask(): the host's statement is running.
    sqlite3_stmt* outer = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, "SELECT 1 UNION ALL SELECT 2", -1, &outer, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(outer), SQLITE_ROW);
    ExecutionLimits limits;
    limits.timeout_ms = 50;
    limits.probe_rows = 1000000000;
    limits.probe_bytes = size_t{1} << 40;
    limits.max_rows = 0;
    limits.stop = c.stop;
    const auto started = std::chrono::steady_clock::now();
    auto q = Run(c.sql, limits);
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_FALSE(q.ok()) << c.sql;
    EXPECT_EQ(q.status().kind(), ErrorKind::kTimeout) << c.sql << ": " << q.status().ToString();
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    // Cheap steps count against the budget too: a streaming query once ran
    // 13 s past this 50 ms budget under the progress handler. Each case ends
    // within 0.4 s on an idle 2-core machine; the bound leaves room for load.
    // (Sanitizer builds assert the behaviour, not the time.)
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), 5000) << c.sql;
#endif
    const bool interrupted = ConnectionInterrupted(db_);
    if (c.leaves_connection_interrupted != kEither) {
      EXPECT_EQ(interrupted, c.leaves_connection_interrupted == kYes) << c.sql;
    }
    EXPECT_EQ(sqlite3_step(outer), interrupted ? SQLITE_INTERRUPT : SQLITE_ROW);
    sqlite3_finalize(outer);
    EXPECT_EQ(sqlite3_exec(db_, "SELECT 1", nullptr, nullptr, nullptr), SQLITE_OK);
  }
}

TEST_F(ExecutorTest, TheWatchdogLeavesTheHostsProgressHandlerInPlace) {
  int calls = 0;
  sqlite3_progress_handler(db_, 100, CountCalls, &calls);
  auto q =
      Run("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100000) "
          "SELECT count(*) FROM c");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_GT(calls, 0);  // the host's handler saw QueryPilot's query run
  const int before = calls;
  ASSERT_EQ(
      sqlite3_exec(db_,
                   "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100000) "
                   "SELECT count(*) FROM c",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_GT(calls, before);  // and is still installed afterwards
  sqlite3_progress_handler(db_, 0, nullptr, nullptr);
}

TEST_F(ExecutorTest, AQuickQueryIsNeverStoppedByTheWatchdog) {
  // Many short queries, each under a budget far above what it needs: the
  // watchdog never interrupts one that ended in time.
  for (int i = 0; i < 200; ++i) {
    auto q = Run("SELECT 1");
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_FALSE(ConnectionInterrupted(db_));
  }
}

// The flag is cleared as the hold ends even where the connection was
// interrupted while it held it (the watchdog's or the host's interrupt): the
// statement that asked still runs, so SQLite prepares nothing there, but it
// applies a pragma with no white space before it looks (query_only.h).
TEST_F(ExecutorTest, QueryOnlyIsClearedEvenOnAnInterruptedConnection) {
  ASSERT_EQ(sqlite3_exec(db_, "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  Result<Statement> asking = Statement::Prepare(db_, "SELECT x FROM t");
  ASSERT_TRUE(asking.ok());
  ASSERT_EQ(asking->Step(), SQLITE_ROW);  // the host's statement, running
  {
    QueryOnlyHold hold;
    ASSERT_TRUE(hold.Take(db_, nullptr).ok());
    EXPECT_TRUE(RunningGeneratedSql(db_));
    EXPECT_EQ(sqlite3_exec(db_, "INSERT INTO t VALUES (3)", nullptr, nullptr, nullptr),
              SQLITE_READONLY);
    sqlite3_interrupt(db_);
    EXPECT_TRUE(ConnectionInterrupted(db_));
  }
  EXPECT_FALSE(RunningGeneratedSql(db_));
  asking = Status::Ok();  // the host's statement ends: the interrupt is over
  Result<Statement> read = Statement::Prepare(db_, "PRAGMA query_only");
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->Step(), SQLITE_ROW);
  EXPECT_EQ(read->ColumnInt(0), 0);
  EXPECT_EQ(sqlite3_exec(db_, "INSERT INTO t VALUES (4)", nullptr, nullptr, nullptr), SQLITE_OK);
  // A hold on an interrupted connection is refused as an interrupt, and
  // leaves the flag as it was.
  ASSERT_TRUE((asking = Statement::Prepare(db_, "SELECT x FROM t")).ok());
  ASSERT_EQ(asking->Step(), SQLITE_ROW);
  sqlite3_interrupt(db_);
  QueryOnlyHold refused;
  EXPECT_EQ(refused.Take(db_, nullptr).kind(), ErrorKind::kInterrupted);
  EXPECT_FALSE(RunningGeneratedSql(db_));
}

// A flag a hold set and could not clear (here the host's authorizer came to
// deny the pragma) is owed to the owner the hold was given, not to a
// process-wide list, and is cleared by the next settling with that owner's
// debt only.
TEST_F(ExecutorTest, AQueryOnlyFlagLeftSetIsOwedToItsOwner) {
  struct Gate {
    bool deny = false;
  } gate;
  sqlite3_set_authorizer(
      db_,
      [](void* g, int action, const char*, const char*, const char*, const char*) {
        return action == SQLITE_PRAGMA && static_cast<Gate*>(g)->deny ? SQLITE_DENY : SQLITE_OK;
      },
      &gate);
  auto query_only = [&] {
    Result<Statement> read = Statement::Prepare(db_, "PRAGMA query_only");
    return read.ok() && read->Step() == SQLITE_ROW ? read->ColumnInt(0) : -1;
  };
  QueryOnlyDebt debt;
  {
    QueryOnlyHold hold;
    ASSERT_TRUE(hold.Take(db_, &debt).ok());
    gate.deny = true;
  }
  EXPECT_TRUE(debt.owed());
  gate.deny = false;
  EXPECT_EQ(query_only(), 1);
  QueryOnlyDebt other;
  SettleQueryOnly(db_, &other);
  SettleQueryOnly(db_, nullptr);
  EXPECT_EQ(query_only(), 1);
  SettleQueryOnly(db_, &debt);
  EXPECT_FALSE(debt.owed());
  EXPECT_EQ(query_only(), 0);
  sqlite3_set_authorizer(db_, nullptr, nullptr);
}

// Rows past the probe are read ahead in batches; a runtime error after some
// rows of a batch comes after those rows.
TEST_F(ExecutorTest, ReadAheadHandsOnTheRowsBeforeAnError) {
  ExecutionLimits limits;
  limits.probe_rows = 2;
  limits.read_ahead_rows = 4;
  auto q =
      Run("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10) "
          "SELECT CASE WHEN i < 9 THEN i ELSE abs(-9223372036854775807 - 1) END FROM c",
          limits);
  ASSERT_TRUE(q.ok()) << q.status().message();
  Row row;
  for (int i = 1; i <= 2; ++i) ASSERT_TRUE((*q)->Next(&row).value());
  std::vector<size_t> batches;
  for (;;) {
    Result<size_t> got = (*q)->ReadAhead([](sqlite3_stmt*) { return size_t{0}; });
    if (!got.ok()) {
      EXPECT_NE(got.status().message().find("integer overflow"), std::string::npos)
          << got.status().message();
      break;
    }
    ASSERT_GT(got.value(), 0u);
    batches.push_back(got.value());
  }
  EXPECT_EQ(batches, (std::vector<size_t>{4, 2}));  // rows 3 to 8, then the error
  EXPECT_EQ((*q)->rows_returned(), 8);
}

}  // namespace
}  // namespace querypilot
