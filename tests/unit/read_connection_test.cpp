// The read connection's reads before a model call: one read transaction,
// holding the file's SHARED lock from its first read until End().
#include "agent/sql/read_connection.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace querypilot {
namespace {

class PreModelReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("qp-reads-" + std::to_string(getpid()) + ".db"))
            .string();
    std::filesystem::remove(path_);
    ASSERT_EQ(sqlite3_open(path_.c_str(), &writer_), SQLITE_OK);
    ASSERT_EQ(Exec(writer_, "CREATE TABLE t(x); INSERT INTO t VALUES (1)"),
              SQLITE_OK);  // rollback-journal mode
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &reader_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(reader_);
    sqlite3_close(writer_);
    std::filesystem::remove(path_);
  }
  static int Exec(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  }
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
  reads.End();                    // idempotent
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

TEST(BesideUri, NamesTheFileWhateverItsCharactersAndNeverCreatesIt) {
  const struct {
    const char* file;
    bool writable;
    const char* uri;
  } cases[] = {
      {"/data/shop.db", false, "file:///data/shop.db?mode=ro"},
      {"/data/shop.db", true, "file:///data/shop.db?mode=rw"},
      {"/data/100%?#.db", true, "file:///data/100%25%3F%23.db?mode=rw"},
      {"//server/share.db", false, "file:////server/share.db?mode=ro"},
  };
  for (const auto& c : cases) EXPECT_EQ(BesideUri(c.file, c.writable), c.uri) << c.file;
}

// A file in WAL mode opened beside its host with OpenBeside: the -wal and
// -shm files go with the last close, whichever of the two it is, exactly
// when the host's own close would remove them.
class BesideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("qp-beside-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "odd 100%?#.db").string();
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(Exec(db, "PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1)"),
              SQLITE_OK);
    sqlite3_close(db);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static int Exec(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  }
  bool Companions() const {
    return std::filesystem::exists(path_ + "-wal") || std::filesystem::exists(path_ + "-shm");
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(BesideTest, TheLastCloseCheckpointsAsTheHostsWouldHave) {
  for (const bool readonly_host : {false, true}) {
    SCOPED_TRACE(readonly_host ? "read-only host" : "host that writes");
    sqlite3* writer = nullptr;  // commits a row the file alone lacks until a checkpoint
    ASSERT_EQ(sqlite3_open(path_.c_str(), &writer), SQLITE_OK);
    ASSERT_EQ(Exec(writer, "PRAGMA wal_autocheckpoint = 0; INSERT INTO t VALUES (2)"), SQLITE_OK);
    sqlite3* host = nullptr;
    ASSERT_EQ(
        sqlite3_open_v2(path_.c_str(), &host,
                        readonly_host ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, nullptr),
        SQLITE_OK);
    ASSERT_EQ(Exec(host, "SELECT count(*) FROM t"), SQLITE_OK);
    sqlite3_close(writer);
    const bool checkpoints = HostCheckpointsOnClose(host, "main");
    EXPECT_EQ(checkpoints, !readonly_host);
    Result<sqlite3*> beside = OpenBeside(path_, checkpoints);
    ASSERT_TRUE(beside.ok()) << beside.status().message();
    EXPECT_EQ(Exec(beside.value(), "SELECT count(*) FROM t"), SQLITE_OK);
    EXPECT_EQ(Exec(beside.value(), "INSERT INTO t VALUES (3)"), SQLITE_READONLY);  // query_only
    sqlite3_close(host);  // first: the connection beside it is still open
    EXPECT_TRUE(Companions());
    sqlite3_close(beside.value());
    // As the host's own last close: a read-only one leaves the log.
    EXPECT_EQ(Companions(), readonly_host);
  }
}

TEST_F(BesideTest, AHostThatKeepsItsLogIsMirrored) {
  sqlite3* host = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &host), SQLITE_OK);
  EXPECT_TRUE(HostCheckpointsOnClose(host, "main"));
  int persist = 1;
  ASSERT_EQ(sqlite3_file_control(host, "main", SQLITE_FCNTL_PERSIST_WAL, &persist), SQLITE_OK);
  EXPECT_FALSE(HostCheckpointsOnClose(host, "main"));
  persist = 0;
  ASSERT_EQ(sqlite3_file_control(host, "main", SQLITE_FCNTL_PERSIST_WAL, &persist), SQLITE_OK);
  ASSERT_EQ(sqlite3_db_config(host, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr), SQLITE_OK);
  EXPECT_FALSE(HostCheckpointsOnClose(host, "main"));
  sqlite3_close(host);
}

}  // namespace
}  // namespace querypilot
