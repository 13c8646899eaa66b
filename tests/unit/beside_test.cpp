// Readings beside the host's connection: the program SQLite would run, when
// a reading may run beside, and a step that never ends stopped there without
// touching the host's connection.
#include "agent/sql/beside.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "agent/quality/readings.h"

namespace querypilot {
namespace {

class ReadingsBesideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("qp-beside-" + std::to_string(getpid()) + ".db"))
            .string();
    std::filesystem::remove(path_);
    ASSERT_EQ(sqlite3_open(path_.c_str(), &host_), SQLITE_OK);
    ASSERT_EQ(Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, price REAL);"
                   "INSERT INTO t VALUES (1, 'a', 2.5), (2, 'b', 4.0), (3, 'c', 7.25)"),
              SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(host_);
    std::filesystem::remove(path_);
  }
  int Exec(const char* sql) { return sqlite3_exec(host_, sql, nullptr, nullptr, nullptr); }
  std::string Program(const std::string& sql) {
    Result<std::string> p = ProgramOf(host_, sql);
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? *p : "";
  }

  std::string path_;
  sqlite3* host_ = nullptr;
};

TEST_F(ReadingsBesideTest, TheSameQueryWrittenAnotherWayHasTheSameProgram) {
  struct Case {
    const char* a;
    const char* b;
    bool same;
  } cases[] = {
      {"SELECT count(*) AS n FROM t", "select COUNT(*) from t AS x -- again", true},
      {"SELECT name FROM t WHERE price > 3", "SELECT x.name AS nm FROM t x WHERE x.price>3;", true},
      {"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT COUNT(*) FROM c AS c",
       true},
      {"SELECT name FROM t WHERE price > 3", "SELECT name FROM t WHERE price > 4", false},
      {"SELECT sum(price) FROM t", "SELECT total(price) FROM t", false},
      {"SELECT name FROM t ORDER BY name", "SELECT name FROM t", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Program(c.a) == Program(c.b), c.same) << c.a << " / " << c.b;
  }
  EXPECT_FALSE(ProgramOf(host_, "SELECT nope FROM t").ok());
}

TEST_F(ReadingsBesideTest, ARunningQueryIsStoppedBesideAndTheHostIsUntouched) {
  const std::string endless =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
  FilesBeside files = FindFilesBeside(host_);
  ASSERT_EQ(files.why, NotBeside::kNone);
  NotBeside why = NotBeside::kNone;
  auto reading = ReadingBeside::Open(files, endless, Program(endless), &why);
  ASSERT_TRUE(reading) << NotBesideText(why);
  ExecutionLimits limits;
  limits.timeout_ms = 60000;
  reading->Start(limits, std::make_shared<BesideTurns>(1));
  EXPECT_FALSE(
      reading->WaitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  reading->Stop();
  EXPECT_TRUE(reading->stopped());
  ASSERT_FALSE(reading->result().ok());
  EXPECT_EQ(reading->result().status().kind(), ErrorKind::kInterrupted);
  // The host's connection runs on as before.
  EXPECT_EQ(Exec("SELECT count(*) FROM t"), SQLITE_OK);

  // Its share of the time budget stops it by itself, the one step included.
  auto timed = ReadingBeside::Open(files, endless, Program(endless), &why);
  ASSERT_TRUE(timed);
  limits.timeout_ms = 100;
  timed->Start(limits, std::make_shared<BesideTurns>(1));
  ASSERT_TRUE(timed->WaitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  ASSERT_FALSE(timed->result().ok());
  EXPECT_EQ(timed->result().status().kind(), ErrorKind::kTimeout);
  EXPECT_FALSE(timed->stopped());

  // A query that ends gives its rows.
  const std::string names = "SELECT name FROM t ORDER BY id";
  auto done = ReadingBeside::Open(files, names, Program(names), &why);
  ASSERT_TRUE(done);
  done->Start(limits, std::make_shared<BesideTurns>(1));
  ASSERT_TRUE(done->WaitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  ASSERT_TRUE(done->result().ok()) << done->result().status().message();
  EXPECT_EQ((*done->result())->buffered_rows().size(), 3u);
}

TEST_F(ReadingsBesideTest, WhatOnlyTheHostSeesStaysOnTheHost) {
  const std::string read = "SELECT name FROM t ORDER BY id";
  NotBeside why = NotBeside::kNone;
  // A temp table that hides main's: another program beside.
  ASSERT_EQ(Exec("CREATE TEMP TABLE t(id INTEGER PRIMARY KEY, name TEXT, price REAL)"), SQLITE_OK);
  EXPECT_FALSE(ReadingBeside::Open(FindFilesBeside(host_), read, Program(read), &why));
  EXPECT_EQ(why, NotBeside::kOtherProgram);
  ASSERT_EQ(Exec("DROP TABLE temp.t"), SQLITE_OK);
  EXPECT_TRUE(ReadingBeside::Open(FindFilesBeside(host_), read, Program(read), &why));
  // A function of the host's application, or one under a built-in's name:
  // beside, it would not be the host's code that runs.
  auto identity = [](sqlite3_context* ctx, int, sqlite3_value** argv) {
    sqlite3_result_value(ctx, argv[0]);
  };
  EXPECT_FALSE(CallsHostFunction(host_, Program("SELECT upper(name) FROM t")));
  ASSERT_EQ(
      sqlite3_create_function(host_, "upper", 1, SQLITE_UTF8, nullptr, identity, nullptr, nullptr),
      SQLITE_OK);
  ASSERT_EQ(
      sqlite3_create_function(host_, "twice", 1, SQLITE_UTF8, nullptr, identity, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_TRUE(CallsHostFunction(host_, Program("SELECT upper(name) FROM t")));
  EXPECT_TRUE(CallsHostFunction(host_, Program("SELECT twice(name) FROM t")));
  EXPECT_FALSE(CallsHostFunction(host_, Program("SELECT lower(name), count(*) FROM t")));
  ExecutionLimits limits;
  // A host's connection whose user allows the function (agent/sql/program.h).
  std::shared_ptr<HostCheck> check = HostCheck::Adopt(host_, OwnSurface());
  check->AllowFunctions({"twice"});
  std::vector<OtherReading> others =
      LaunchOtherReadings(SqlTarget::Host(check), read, {"SELECT twice(name) FROM t"}, limits);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_FALSE(others[0].beside);
  EXPECT_EQ(others[0].not_beside, NotBeside::kHostCode);
  // Uncommitted writes only the host sees.
  ASSERT_EQ(Exec("BEGIN; INSERT INTO t VALUES (4, 'd', 1.0)"), SQLITE_OK);
  EXPECT_EQ(FindFilesBeside(host_).why, NotBeside::kHostTransaction);
  ASSERT_EQ(Exec("ROLLBACK"), SQLITE_OK);
  // A memory database.
  sqlite3* memory = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &memory), SQLITE_OK);
  EXPECT_EQ(FindFilesBeside(memory).why, NotBeside::kNotFiles);
  sqlite3_close(memory);
}

TEST_F(ReadingsBesideTest, AReadingWrittenTwiceIsLaunchedOnce) {
  ExecutionLimits limits;
  limits.timeout_ms = 5000;
  std::vector<OtherReading> others =
      LaunchOtherReadings(SqlTarget::Own(host_), "SELECT count(*) AS n FROM t",
                          {"SELECT name FROM t WHERE price > 3", "SELECT COUNT(*) FROM t AS x",
                           "SELECT x.name FROM t x WHERE x.price>3", "DELETE FROM t"},
                          limits);
  ASSERT_EQ(others.size(), 4u);
  EXPECT_FALSE(others[0].same_as);
  EXPECT_TRUE(others[0].beside);
  EXPECT_EQ(others[1].same_as, std::optional<size_t>(0));
  EXPECT_FALSE(others[1].beside);
  EXPECT_EQ(others[2].same_as, std::optional<size_t>(1));
  EXPECT_FALSE(others[2].beside);
  EXPECT_EQ(others[3].checked.kind(), ErrorKind::kRefused);
  EXPECT_FALSE(others[3].beside);
}

}  // namespace
}  // namespace querypilot
