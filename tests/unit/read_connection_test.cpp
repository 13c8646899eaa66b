// The read connection's reads before a model call: one read transaction,
// holding the file's SHARED lock from its first read until End().
#include "agent/sql/read_connection.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace querypilot {
namespace {

class PreModelReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("qp-reads-" + std::to_string(getpid()) + ".db")).string();
    std::filesystem::remove(path_);
    ASSERT_EQ(sqlite3_open(path_.c_str(), &writer_), SQLITE_OK);
    ASSERT_EQ(Exec(writer_, "CREATE TABLE t(x); INSERT INTO t VALUES (1)"), SQLITE_OK);  // rollback-journal mode
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &reader_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(reader_);
    sqlite3_close(writer_);
    std::filesystem::remove(path_);
  }
  static int Exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }
  // A write committed with a busy timeout of 0: SQLITE_BUSY while any reader holds the file.
  int Write() {
    int rc = Exec(writer_, "BEGIN IMMEDIATE; INSERT INTO t VALUES (2); COMMIT");
    if (rc != SQLITE_OK) Exec(writer_, "ROLLBACK");
    return rc;
  }
  int64_t Read(const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(reader_, sql, -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }

  std::string path_;
  sqlite3* writer_ = nullptr;
  sqlite3* reader_ = nullptr;
};

TEST_F(PreModelReadsTest, ReadsShareOneTransactionUntilEnd) {
  PreModelReads reads(reader_);
  EXPECT_EQ(Write(), SQLITE_OK);  // BEGIN alone takes no lock
  const int64_t version = Read("PRAGMA data_version");
  const int64_t rows = Read("SELECT count(*) FROM t");
  EXPECT_EQ(Write(), SQLITE_BUSY);  // held between the reads: one window, not one each
  EXPECT_EQ(Read("PRAGMA data_version"), version);  // and one snapshot
  EXPECT_EQ(Read("SELECT count(*) FROM t"), rows);
  reads.End();
  EXPECT_TRUE(sqlite3_get_autocommit(reader_));
  EXPECT_EQ(Write(), SQLITE_OK);
  EXPECT_EQ(Read("SELECT count(*) FROM t"), rows + 1);
  reads.End();  // idempotent
  EXPECT_EQ(Write(), SQLITE_OK);  // reads after End() are short transactions of their own
}

TEST_F(PreModelReadsTest, EndsAtDestructionAndLeavesAnOpenTransactionAlone) {
  {
    PreModelReads reads(reader_);
    Read("SELECT count(*) FROM t");
  }
  EXPECT_TRUE(sqlite3_get_autocommit(reader_));
  EXPECT_EQ(Write(), SQLITE_OK);
  // A transaction someone else began is theirs: neither joined nor ended.
  ASSERT_EQ(Exec(reader_, "BEGIN"), SQLITE_OK);
  {
    PreModelReads reads(reader_);
    reads.End();
  }
  EXPECT_FALSE(sqlite3_get_autocommit(reader_));
  EXPECT_EQ(Exec(reader_, "COMMIT"), SQLITE_OK);
  PreModelReads none(nullptr);  // no read connection: nothing to do
  none.End();
}

}  // namespace
}  // namespace querypilot
