// QueryPilot's own files: names resolved as SQLite resolves them, and
// compared with the connection's files by identity.
#include "agent/sql/own_file.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

TEST(ParseSqliteFilename, AsSqliteOpensWithUri) {
  struct Case {
    const char* name;
    const char* path;
    const char* vfs;
    const char* mode;
    bool memory;
  } cases[] = {
      {"/a/b.db", "/a/b.db", "", "", false},
      {"b.db", "b.db", "", "", false},
      {"", "", "", "", false},
      {":memory:", "", "", "", true},
      {"file:b.db", "b.db", "", "", false},
      {"file:/a/b.db?mode=ro&cache=shared", "/a/b.db", "", "ro", false},
      {"file:///a/b.db?vfs=unix-excl", "/a/b.db", "unix-excl", "", false},
      {"file://localhost/a/b.db#frag", "/a/b.db", "", "", false},
      {"file:/a/b%20c.db?mode=rw", "/a/b c.db", "", "rw", false},
      {"file:/a/%zz.db", "/a/%zz.db", "", "", false},  // not an escape: kept as it is
      {"file:x.db?mode=memory", "x.db", "", "memory", true},
      {"file::memory:", ":memory:", "", "", true},
      {"File:/a/b.db", "File:/a/b.db", "", "", false},  // "file:" is case-sensitive
  };
  for (const auto& c : cases) {
    Result<SqliteFilename> f = ParseSqliteFilename(c.name);
    ASSERT_TRUE(f.ok()) << c.name << ": " << f.status().message();
    EXPECT_EQ(f->path, c.path) << c.name;
    EXPECT_EQ(f->vfs, c.vfs) << c.name;
    EXPECT_EQ(f->mode, c.mode) << c.name;
    EXPECT_EQ(f->memory, c.memory) << c.name;
  }
  EXPECT_FALSE(ParseSqliteFilename("file://host/a/b.db").ok());
  EXPECT_FALSE(ParseSqliteFilename("file:/a/b%00.db").ok());
}

class OwnFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("qp-own-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    db_path_ = (dir_ / "user.db").string();
    ASSERT_EQ(sqlite3_open(db_path_.c_str(), &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_, "CREATE TABLE t(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(db_);
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::string db_path_;
  sqlite3* db_ = nullptr;
};

TEST_F(OwnFileTest, TheDatabaseIsRefusedUnderEveryNameAndAnotherFileIsNot) {
  std::filesystem::create_hard_link(db_path_, dir_ / "hard.db");
  std::filesystem::create_symlink(db_path_, dir_ / "soft.db");
  const std::string refused[] = {
      db_path_,
      (dir_ / "." / "user.db").string(),
      (dir_ / ".." / dir_.filename() / "user.db").string(),
      (dir_ / "hard.db").string(),
      (dir_ / "soft.db").string(),
      "file:" + db_path_ + "?mode=rwc",
      "file://" + db_path_,
      "file://localhost" + db_path_,
      db_path_ + "-journal",
      db_path_ + "-wal",
      db_path_ + "-shm",
  };
  for (const std::string& name : refused) {
    Status st = CheckOwnFile(db_, name, "history_file");
    EXPECT_FALSE(st.ok()) << name;
    EXPECT_NE(st.message().find("history_file must be a file of its own"), std::string::npos)
        << st.message();
  }
  EXPECT_TRUE(CheckOwnFile(db_, (dir_ / "history.db").string(), "history_file").ok());
  EXPECT_TRUE(
      CheckOwnFile(db_, "file:" + (dir_ / "history.db").string() + "?mode=rwc", "history_file")
          .ok());
  // A database whose name would make QueryPilot's journal the user's file.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "h.db-journal").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE t(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  Status st = CheckOwnFile(other, (dir_ / "h.db").string(), "value_index_file");
  EXPECT_NE(st.message().find("its journal file would be the file of the database \"main\""),
            std::string::npos)
      << st.message();
  sqlite3_close(other);
}

TEST_F(OwnFileTest, AnAttachedFileAndAnOpenedConnectionAreComparedToo) {
  const std::string mine = (dir_ / "mine.db").string();
  sqlite3* own = nullptr;
  ASSERT_EQ(sqlite3_open_v2(("file:" + mine).c_str(), &own, OwnFileOpenFlags(), nullptr),
            SQLITE_OK);
  EXPECT_TRUE(CheckOwnConnection(db_, own, "history_file").ok());
  const std::string attach = "ATTACH '" + mine + "' AS later";
  ASSERT_EQ(sqlite3_exec(db_, attach.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  Status st = CheckOwnConnection(db_, own, "history_file");
  EXPECT_NE(st.message().find("it is the database \"later\""), std::string::npos) << st.message();
  EXPECT_FALSE(CheckOwnFile(db_, mine, "history_file").ok());
  sqlite3_close(own);
}

TEST(ClassifySqliteFailure, CodesBeforeMessages) {
  struct Case {
    int code;
    const char* message;
    ErrorKind want;
    const char* says;
  } cases[] = {
      {SQLITE_CORRUPT, "database disk image is malformed", ErrorKind::kDatabaseCorrupt, "damaged"},
      {SQLITE_CORRUPT_INDEX, "database disk image is malformed", ErrorKind::kDatabaseCorrupt,
       "damaged"},
      {SQLITE_NOTADB, "file is not a database", ErrorKind::kNotADatabase, "not a SQLite database"},
      {SQLITE_IOERR_READ, "disk I/O error", ErrorKind::kDatabaseIo, "could not be read"},
      {SQLITE_FULL, "database or disk is full", ErrorKind::kDiskFull, "full"},
      {SQLITE_NOMEM, "out of memory", ErrorKind::kOutOfMemory, "ran out of memory"},
      {SQLITE_BUSY, "database is locked", ErrorKind::kDatabaseBusy, "holds a lock"},
      {SQLITE_TOOBIG, "string or blob too big", ErrorKind::kValueTooBig, "length limit"},
      {SQLITE_ERROR, "parser stack overflow", ErrorKind::kTooComplex, "nests too deeply"},
      {SQLITE_ERROR, "Expression tree is too large (maximum depth 1000)", ErrorKind::kTooComplex,
       "nests"},
      {SQLITE_ERROR, "too many terms in compound SELECT", ErrorKind::kTooComplex, "limits"},
      {SQLITE_ERROR, "no such column: x", ErrorKind::kColumnNotFound, "no such column: x"},
      {SQLITE_ERROR, "no such function: f", ErrorKind::kFunctionError, "no such function: f"},
  };
  for (const auto& c : cases) {
    Status st = SqliteFailure(c.code, c.message);
    EXPECT_EQ(st.kind(), c.want) << c.message;
    EXPECT_EQ(st.message().rfind(c.message, 0), 0u)
        << "SQLite's words come first: " << st.message();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_EQ(IsDatabaseFault(st.kind()), !IsRetryableSqlError(st.kind())) << c.message;
    EXPECT_EQ(ErrorKindFromName(ErrorKindName(st.kind())), st.kind());
  }
}

}  // namespace
}  // namespace querypilot
