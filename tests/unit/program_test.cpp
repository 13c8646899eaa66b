// The functions a program calls, and which of them SQL QueryPilot runs for a
// model may call: SQLite's own, or those the user names.
#include "agent/sql/program.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "agent/config.h"
#include "agent/sql/critic.h"

namespace querypilot {
namespace {

void Identity(sqlite3_context* ctx, int, sqlite3_value** argv) {
  sqlite3_result_value(ctx, argv[0]);
}

class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, price REAL)"), SQLITE_OK);
  }
  void TearDown() override { sqlite3_close(db_); }
  int Exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  void Register(const char* name, int args) {
    ASSERT_EQ(
        sqlite3_create_function(db_, name, args, SQLITE_UTF8, nullptr, Identity, nullptr, nullptr),
        SQLITE_OK);
  }
  Status Judge(const char* sql, const std::set<std::string>& allowed = {}) {
    return JudgeFunctionsOf(db_, sql, allowed);
  }

  sqlite3* db_ = nullptr;
};

TEST_F(ProgramTest, TheFunctionsAProgramCallsAreListedWithTheirArguments) {
  struct Case {
    const char* sql;
    std::set<CalledFunction> called;
  } cases[] = {
      {"SELECT upper(name), count(*) FROM t", {{"upper", 1}, {"count", 0}}},
      {"SELECT max(price), max(id, 3) FROM t", {{"max", 1}, {"max", -1}}},
      {"SELECT row_number() OVER (ORDER BY id) FROM t", {{"row_number", 0}}},
      // Computed inline: nothing is called.
      {"SELECT coalesce(name, 'x'), iif(id > 1, 1, 0) FROM t", {}},
      {"SELECT id FROM t", {}},
  };
  for (const Case& c : cases) {
    Result<std::string> program = ProgramOf(db_, c.sql);
    ASSERT_TRUE(program.ok()) << program.status().message();
    EXPECT_EQ(FunctionsCalled(*program), c.called) << c.sql;
  }
}

TEST_F(ProgramTest, SqlitesOwnFunctionsMayBeCalled) {
  for (const char* sql : {
           "SELECT upper(name), lower(name), length(name), substr(name, 1, 2) FROM t",
           "SELECT avg(price), sum(price), total(price), group_concat(name) FROM t",
           "SELECT date('now'), strftime('%Y', 'now'), julianday('2024-01-01')",
           "SELECT json_object('a', id), json_extract('{\"a\":1}', '$.a') FROM t",
           "SELECT rank() OVER (ORDER BY price), lag(price) OVER (ORDER BY id) FROM t",
           "SELECT abs(-1), round(2.5), printf('%d', 3), typeof(1), random() IS NULL",
       }) {
    EXPECT_TRUE(Judge(sql).ok()) << sql << ": " << Judge(sql).message();
  }
}

TEST_F(ProgramTest, AnyOtherFunctionIsRefusedWithItsName) {
  Register("leak", 1);
  Status s = Judge("SELECT leak(name) FROM t");
  EXPECT_EQ(s.kind(), ErrorKind::kRefused);
  EXPECT_NE(s.message().find("the function leak() is not allowed"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("allow_functions"), std::string::npos);
  // Through a view, TEMP or not, a CTE or a subquery alike.
  ASSERT_EQ(Exec("CREATE TEMP VIEW tv AS SELECT leak(name) AS x FROM t"), SQLITE_OK);
  ASSERT_EQ(Exec("CREATE VIEW mv AS SELECT leak(id) AS x FROM t"), SQLITE_OK);
  for (const char* sql : {"SELECT x FROM tv", "SELECT count(x) FROM mv",
                          "WITH c AS (SELECT leak(price) AS p FROM t) SELECT p FROM c",
                          "SELECT (SELECT max(leak(id)) FROM t)"}) {
    EXPECT_EQ(Judge(sql).kind(), ErrorKind::kRefused) << sql;
  }
  // Named by the user, it may be called.
  EXPECT_TRUE(Judge("SELECT x FROM tv", {"leak"}).ok());
  // load_extension is SQLite's, and reaches outside.
  EXPECT_EQ(Judge("SELECT load_extension('x')").kind(), ErrorKind::kRefused);
}

TEST_F(ProgramTest, AnApplicationsFunctionUnderABuiltInsNameIsTheApplications) {
  EXPECT_TRUE(Judge("SELECT upper(name) FROM t").ok());
  Register("upper", 1);
  EXPECT_EQ(Judge("SELECT upper(name) FROM t").kind(), ErrorKind::kRefused);
  // Another number of arguments leaves the built-in in place.
  Register("lower", 2);
  EXPECT_TRUE(Judge("SELECT lower(name) FROM t").ok());
  EXPECT_TRUE(Judge("SELECT upper(name) FROM t", {"upper"}).ok());
}

TEST_F(ProgramTest, CheckSqlRefusesAFunctionOnAConnectionOfItsOwnToo) {
  Register("leak", 1);
  Result<Statement> checked = CheckSql(SqlTarget::Own(db_), "SELECT leak(name) FROM t");
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.status().kind(), ErrorKind::kRefused);
  EXPECT_TRUE(CheckSql(SqlTarget::Own(db_), "SELECT upper(name) FROM t").ok());
}

TEST(FunctionNamesTest, AllowFunctionsIsAListOfNames) {
  struct Case {
    const char* value;
    bool ok;
    std::set<std::string> names;
  } cases[] = {
      {"", true, {}},
      {"regexp", true, {"regexp"}},
      {"Regexp, my_score  other", true, {"regexp", "my_score", "other"}},
      {",,", true, {}},
      {"a(b)", false, {}},
      {"x; DROP", false, {}},
  };
  for (const Case& c : cases) {
    Result<std::set<std::string>> names = ParseFunctionNames(c.value);
    EXPECT_EQ(names.ok(), c.ok) << c.value;
    if (names.ok()) {
      EXPECT_EQ(*names, c.names) << c.value;
    }
  }
}

}  // namespace
}  // namespace querypilot
