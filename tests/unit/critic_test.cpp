#include "agent/sql/critic.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <string_view>
#include <type_traits>

#include "agent/sql/check_connection.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

class CriticTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE t(a INTEGER, b TEXT); CREATE INDEX t_a ON t(a); INSERT "
                           "INTO t VALUES (1, 'x');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    // A stand-in for the shell's writefile(), so that the authorizer, not a
    // missing function, is what refuses it.
    ASSERT_EQ(sqlite3_create_function(
                  db_, "writefile", 2, SQLITE_UTF8, nullptr,
                  [](sqlite3_context* c, int, sqlite3_value**) { sqlite3_result_int(c, 1); },
                  nullptr, nullptr),
              SQLITE_OK);
    sql_ = SqlTarget::Own(db_);
  }
  void TearDown() override {
    sql_ = SqlTarget();
    sqlite3_close(db_);
  }
  sqlite3* db_ = nullptr;
  // How SQL is checked for db_: as a connection of QueryPilot's own here, as
  // a host's in HostCriticTest.
  SqlTarget sql_;
};

struct VerdictCase {
  const char* sql;
  ErrorKind want;
};
const VerdictCase kVerdictCases[] = {
    {"SELECT a, b FROM t", ErrorKind::kNone},
    {"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 5) SELECT n FROM c",
     ErrorKind::kNone},
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
    // Table-valued pragmas: those that read the schema, never one that
    // writes (optimize writes sqlite_stat1) or sets a value.
    {"SELECT count(*) AS n FROM pragma_optimize WHERE (SELECT count(*) FROM t WHERE a = 5) >= 0",
     ErrorKind::kRefused},
    {"SELECT * FROM pragma_journal_mode", ErrorKind::kRefused},
    {"SELECT * FROM pragma_query_only", ErrorKind::kRefused},
    {"SELECT name FROM pragma_index_list('t')", ErrorKind::kNone},
    {"SELECT count(*) FROM pragma_table_xinfo('t')", ErrorKind::kNone},
    {"EXPLAIN SELECT 1", ErrorKind::kRefused},
    {"EXPLAIN QUERY PLAN SELECT a FROM t", ErrorKind::kRefused},
    {"WITH c(x) AS (SELECT 1) SELECT x FROM c", ErrorKind::kNone},
    {"VALUES (1), (2)", ErrorKind::kNone},
    {"SELECT 1;;  -- done", ErrorKind::kNone},
    {"SELECT 1; ; SELECT 2", ErrorKind::kMultipleStatements},
    {"SELECT 1; PRAGMA query_only = 0", ErrorKind::kRefused},
};

// Checks every case for `target` and that nothing ran.
void ExpectVerdicts(const SqlTarget& target) {
  sqlite3* db = target.db();
  for (const auto& c : kVerdictCases) {
    Result<Statement> r = CheckSql(target, c.sql);
    if (c.want == ErrorKind::kNone) {
      EXPECT_TRUE(r.ok()) << c.sql << ": " << r.status().ToString();
    } else {
      ASSERT_FALSE(r.ok()) << c.sql;
      EXPECT_EQ(r.status().kind(), c.want) << c.sql << ": " << r.status().ToString();
    }
  }
  // Nothing ran: the table is as it was.
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), sum(a) FROM t", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 1);
  EXPECT_EQ(sqlite3_column_int(s, 1), 1);
  sqlite3_finalize(s);
}

// A statement that changes the schema is refused naming itself and its
// object, though SQLite first asks to write sqlite_master, and saying why.
void ExpectSchemaChangesNamed(const SqlTarget& target) {
  const struct {
    const char* sql;
    const char* says;
  } cases[] = {
      {"DROP TABLE t", "dropping the table t is not allowed: the model's SQL may only read"},
      {"CREATE TABLE u(x)", "creating the table u is not allowed: the model's SQL may only read"},
      {"CREATE INDEX i ON t(a)",
       "creating the index i is not allowed: the model's SQL may only read"},
      {"CREATE VIEW v AS SELECT a FROM t",
       "creating the view v is not allowed: the model's SQL may only read"},
      {"ALTER TABLE t ADD COLUMN c", "altering the table t is not allowed"},
      // SQLite refuses this one itself, before it asks the authorizer.
      {"DELETE FROM sqlite_master", "table sqlite_master may not be modified"},
      {"DELETE FROM t", "deleting from t is not allowed"},
  };
  for (const auto& c : cases) {
    Result<Statement> r = CheckSql(target, c.sql);
    ASSERT_FALSE(r.ok()) << c.sql;
    EXPECT_EQ(r.status().kind(), ErrorKind::kRefused) << c.sql;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.sql << ": " << r.status().message();
  }
}

TEST_F(CriticTest, Verdicts) {
  ExpectVerdicts(sql_);
}

TEST_F(CriticTest, SchemaChangesAreNamed) {
  ExpectSchemaChangesNamed(sql_);
}

// Which kind of connection SQL is checked for is always said: a bare
// connection is not a SqlTarget, so a call that forgets the host's check
// does not compile, and a target never set refuses every SQL (it neither
// checks directly nor prepares anything).
static_assert(!std::is_convertible_v<sqlite3*, SqlTarget>);
static_assert(!std::is_constructible_v<SqlTarget, sqlite3*>);
static_assert(!std::is_invocable_v<decltype(&CheckSql), sqlite3*, std::string_view>);

TEST_F(CriticTest, AnUnsetTargetRefusesEverySql) {
  for (const char* sql : {"SELECT a FROM t", "DELETE FROM t"}) {
    Result<Statement> r = CheckSql(SqlTarget(), sql);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_EQ(r.status().kind(), ErrorKind::kRefused) << sql;
  }
  EXPECT_EQ(CheckSql(SqlTarget::Host(nullptr), "SELECT a FROM t").status().kind(),
            ErrorKind::kRefused);
}

TEST_F(CriticTest, AuthorizerIsRemovedAfterChecking) {
  ASSERT_FALSE(CheckSql(sql_, "DELETE FROM t").ok());
  EXPECT_EQ(sqlite3_exec(db_, "INSERT INTO t VALUES (5, 'z')", nullptr, nullptr, nullptr),
            SQLITE_OK);
}

// The one recipe: what the critic refuses never runs; what passes runs
// under the limits, with its parameters bound.
TEST_F(CriticTest, RunVerifiedChecksThenRuns) {
  ExecutionLimits limits;
  VerifiedStage stage = VerifiedStage::kRun;
  auto refused = RunVerified(sql_, "DELETE FROM t", limits, {}, &stage);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().kind(), ErrorKind::kRefused);
  EXPECT_EQ(stage, VerifiedStage::kCheck);
  auto two = RunVerified(sql_, "SELECT 1; DELETE FROM t", limits, {}, &stage);
  EXPECT_EQ(two.status().kind(), ErrorKind::kRefused);
  auto bound = RunVerified(sql_, "SELECT a FROM t WHERE b = ?1", limits, {"x"}, &stage);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ((*bound)->buffered_rows().size(), 1u);
  auto failed = RunVerified(sql_, "SELECT zeroblob(2000000000)", limits, {}, &stage);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().kind(), ErrorKind::kValueTooBig);
  EXPECT_EQ(stage, VerifiedStage::kRun);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db_, "SELECT count(*) FROM t", -1, &s, nullptr);
  sqlite3_step(s);
  EXPECT_EQ(sqlite3_column_int(s, 0), 1);  // the DELETE never ran
  sqlite3_finalize(s);
}

// A host's connection: QueryPilot checks on its mirror and never sets an
// authorizer on the connection itself.
class HostCriticTest : public CriticTest {
 protected:
  void SetUp() override {
    CriticTest::SetUp();
    // QueryPilot's own functions, as ext/ registers them (stand-ins here).
    for (const char* name : {"agent_forget", "agent_describe"}) {
      ASSERT_EQ(sqlite3_create_function(
                    db_, name, -1, SQLITE_UTF8, nullptr,
                    [](sqlite3_context* c, int, sqlite3_value**) { sqlite3_result_int(c, 1); },
                    nullptr, nullptr),
                SQLITE_OK);
    }
    check_ = HostCheck::Adopt(db_, OwnSurface{{"agent_forget", "agent_describe"}, {"agent_runs"}});
    sql_ = SqlTarget::Host(check_);
  }
  void TearDown() override {
    sql_ = SqlTarget();
    check_.reset();
    CriticTest::TearDown();
  }
  std::shared_ptr<HostCheck> check_;
  int64_t Count(const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return n;
  }
};

TEST_F(HostCriticTest, Verdicts) {
  ExpectVerdicts(sql_);
}

TEST_F(HostCriticTest, SchemaChangesAreNamed) {
  ExpectSchemaChangesNamed(sql_);
}

TEST_F(HostCriticTest, QueryPilotsOwnFunctionsAreOutOfReach) {
  for (const char* sql :
       {"SELECT agent_forget(1)", "SELECT agent_describe('t', 'Always answer with x')",
        "SELECT a FROM t WHERE agent_forget(a) > 0"}) {
    Result<Statement> r = CheckSql(sql_, sql);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_EQ(r.status().kind(), ErrorKind::kRefused) << sql;
    EXPECT_NE(r.status().message().find("QueryPilot's own"), std::string::npos)
        << r.status().message();
  }
}

// The host's authorizer, set before QueryPilot checks anything, decides on
// the host's connection and is still in place afterwards.
struct HostRules {
  int calls = 0;
};
int DenyColumnB(void* user, int action, const char* a, const char* b, const char*, const char*) {
  static_cast<HostRules*>(user)->calls++;
  if (action == SQLITE_READ && a && b && std::string(a) == "t" && std::string(b) == "b")
    return SQLITE_DENY;
  return SQLITE_OK;
}

TEST_F(HostCriticTest, TheHostsAuthorizerStaysAndDecides) {
  HostRules rules;
  sqlite3_set_authorizer(db_, DenyColumnB, &rules);
  EXPECT_TRUE(CheckSql(sql_, "SELECT a FROM t").ok());
  EXPECT_GT(rules.calls, 0);  // the host's authorizer saw the query
  Result<Statement> denied = CheckSql(sql_, "SELECT b FROM t");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().kind(), ErrorKind::kRefused) << denied.status().message();
  // QueryPilot's rules apply too, beside the host's.
  EXPECT_EQ(CheckSql(sql_, "DELETE FROM t").status().kind(), ErrorKind::kRefused);
  // Still the host's after every check: the column stays denied, and a write
  // (which only QueryPilot's rules refuse) is the host's to make.
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db_, "SELECT b FROM t", -1, &s, nullptr), SQLITE_AUTH);
  sqlite3_finalize(s);
  EXPECT_EQ(sqlite3_exec(db_, "INSERT INTO t VALUES (5, 'z')", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_set_authorizer(db_, nullptr, nullptr);
}

// Full-text and R*Tree tables are askable: the modules' own statements are
// the modules' business, not QueryPilot's rules.
TEST_F(HostCriticTest, VirtualTablesOfTheSchemaAreAskable) {
  ASSERT_EQ(sqlite3_exec(db_,
                         "CREATE VIRTUAL TABLE docs USING fts5(title, body);"
                         "INSERT INTO docs VALUES ('SQLite notes', 'full text search');"
                         "CREATE VIRTUAL TABLE old_docs USING fts4(title, body);"
                         "INSERT INTO old_docs VALUES ('Old notes', 'matching words');"
                         "CREATE VIRTUAL TABLE rt USING rtree(id, x0, x1);"
                         "INSERT INTO rt VALUES (1, 0, 10);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db_);
  ExecutionLimits limits;
  for (const char* sql :
       {"SELECT title FROM docs WHERE docs MATCH 'search' ORDER BY rank",
        "SELECT title FROM old_docs WHERE old_docs MATCH 'words'",
        "SELECT id FROM rt WHERE x0 <= 5 AND x1 >= 5", "SELECT count(*) FROM docs_data"}) {
    auto q = RunVerified(sql_, sql, limits);
    ASSERT_TRUE(q.ok()) << sql << ": " << q.status().message();
    EXPECT_EQ((*q)->buffered_rows().size(), 1u) << sql;
  }
  // Their shadow tables stay read-only like any other.
  EXPECT_EQ(CheckSql(sql_, "DELETE FROM docs_data").status().kind(), ErrorKind::kRefused);
  EXPECT_EQ(CheckSql(sql_, "INSERT INTO docs(docs) VALUES ('optimize')").status().kind(),
            ErrorKind::kRefused);
}

// Every query QueryPilot runs steps under PRAGMA query_only: a host function
// that writes on the connection cannot while the query runs, whatever its
// name (one registered over a built-in's too).
TEST_F(HostCriticTest, AHostFunctionCannotWriteWhileAQueryRuns) {
  for (const char* name : {"sneaky_write", "upper"}) {
    ASSERT_EQ(sqlite3_create_function(
                  db_, name, -1, SQLITE_UTF8, db_,
                  [](sqlite3_context* c, int, sqlite3_value**) {
                    auto* db = static_cast<sqlite3*>(sqlite3_user_data(c));
                    sqlite3_result_int(c, sqlite3_exec(db, "INSERT INTO t VALUES (9, 'w')", nullptr,
                                                       nullptr, nullptr));
                  },
                  nullptr, nullptr),
              SQLITE_OK);
  }
  // Refused unless the user allows them (agent/sql/program.h); allowed,
  // they still cannot write.
  EXPECT_EQ(CheckSql(sql_, "SELECT a, upper(b) AS rc FROM t").status().kind(), ErrorKind::kRefused);
  sql_.check()->AllowFunctions({"sneaky_write", "upper"});
  for (const char* sql :
       {"SELECT a, upper(b) AS rc FROM t", "SELECT a, upper(b, 1) AS rc FROM t"}) {
    auto q = RunVerified(sql_, sql, ExecutionLimits());
    ASSERT_TRUE(q.ok()) << sql << ": " << q.status().message();
    ASSERT_FALSE((*q)->buffered_rows().empty());
    EXPECT_EQ(std::get<int64_t>((*q)->buffered_rows()[0][1]), SQLITE_READONLY) << sql;
  }
  ExecutionLimits limits;
  auto q = RunVerified(sql_, "SELECT sneaky_write() AS rc", limits);
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_EQ((*q)->buffered_rows().size(), 1u);
  EXPECT_EQ(std::get<int64_t>((*q)->buffered_rows()[0][0]), SQLITE_READONLY);
  q = Status::Ok();
  EXPECT_EQ(Count("SELECT count(*) FROM t WHERE a = 9"), 0);
  // The flag is QueryPilot's only while a step runs: the host writes after.
  EXPECT_EQ(Count("PRAGMA query_only"), 0);
  EXPECT_EQ(sqlite3_exec(db_, "INSERT INTO t VALUES (7, 'h')", nullptr, nullptr, nullptr),
            SQLITE_OK);
  // A host that holds query_only itself keeps it.
  ASSERT_EQ(sqlite3_exec(db_, "PRAGMA query_only = 1", nullptr, nullptr, nullptr), SQLITE_OK);
  q = RunVerified(sql_, "SELECT sneaky_write() AS rc", limits);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(Count("PRAGMA query_only"), 1);
  sqlite3_exec(db_, "PRAGMA query_only = 0", nullptr, nullptr, nullptr);
}

// The mirror makes only the host's tables a statement can read, looked up by
// name: a bare name finds the table SQLite reads (temp, then main, then the
// attached databases), a view's tables are found as its SQL names them, and
// names in any case or quoting, or written as a string, find their table.
TEST_F(HostCriticTest, TheMirrorFindsEachNameAsTheHostReadsIt) {
  ASSERT_EQ(sqlite3_exec(db_,
                         "ATTACH ':memory:' AS aux;"
                         "CREATE TABLE aux.dup(x); CREATE TABLE dup(y); CREATE TEMP TABLE dup(z);"
                         "CREATE TABLE aux.only_far(w);"
                         "CREATE TABLE source_of_v(s); CREATE VIEW v AS SELECT s FROM source_of_v;"
                         "CREATE VIEW vv AS SELECT * FROM v;"
                         "CREATE TABLE \"Mixed Case\"(q);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db_);
  const struct {
    const char* sql;
    ErrorKind want;
  } cases[] = {
      {"SELECT z FROM dup", ErrorKind::kNone},  // temp's
      {"SELECT y FROM main.dup", ErrorKind::kNone},
      {"SELECT x FROM aux.dup", ErrorKind::kNone},
      {"SELECT count(*) FROM DUP", ErrorKind::kNone},
      {"SELECT y FROM dup", ErrorKind::kColumnNotFound},  // temp.dup has no y
      {"SELECT w FROM only_far", ErrorKind::kNone},
      {"SELECT s FROM vv", ErrorKind::kNone},  // vv reads v, v reads source_of_v
      {"SELECT q FROM \"mixed case\"", ErrorKind::kNone},
      {"SELECT q FROM [MIXED CASE]", ErrorKind::kNone},
      {"SELECT q FROM 'Mixed Case'", ErrorKind::kNone},
      {"SELECT 1 FROM nowhere", ErrorKind::kTableNotFound},
      {"DELETE FROM source_of_v", ErrorKind::kRefused},
      {"SELECT s FROM v; DELETE FROM vv", ErrorKind::kMultipleStatements},
  };
  for (const auto& c : cases) {
    Result<Statement> r = CheckSql(sql_, c.sql);
    if (c.want == ErrorKind::kNone) {
      EXPECT_TRUE(r.ok()) << c.sql << ": " << r.status().ToString();
    } else {
      ASSERT_FALSE(r.ok()) << c.sql;
      EXPECT_EQ(r.status().kind(), c.want) << c.sql << ": " << r.status().ToString();
    }
  }
}

// The mirror follows the host: a table created after the first check is
// found, a function registered since is checked by name.
TEST_F(HostCriticTest, TheMirrorFollowsTheHost) {
  EXPECT_TRUE(CheckSql(sql_, "SELECT a FROM t").ok());
  EXPECT_EQ(CheckSql(sql_, "SELECT x FROM later").status().kind(), ErrorKind::kTableNotFound);
  ASSERT_EQ(
      sqlite3_exec(db_, "CREATE TABLE later(x); ATTACH ':memory:' AS aux; CREATE TABLE aux.far(y)",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_TRUE(CheckSql(sql_, "SELECT x FROM later").ok());
  EXPECT_TRUE(CheckSql(sql_, "SELECT y FROM aux.far").ok());
  ASSERT_EQ(sqlite3_create_function(
                db_, "double_it", 1, SQLITE_UTF8, nullptr,
                [](sqlite3_context* c, int, sqlite3_value** v) {
                  sqlite3_result_int64(c, 2 * sqlite3_value_int64(v[0]));
                },
                nullptr, nullptr),
            SQLITE_OK);
  // Found by the mirror, and refused as the application's until the user
  // allows it (agent/sql/program.h).
  EXPECT_EQ(CheckSql(sql_, "SELECT double_it(a) FROM t").status().kind(), ErrorKind::kRefused);
  sql_.check()->AllowFunctions({"double_it"});
  EXPECT_TRUE(CheckSql(sql_, "SELECT double_it(a) FROM t").ok());
  EXPECT_EQ(CheckSql(sql_, "SELECT nope(a) FROM t").status().kind(), ErrorKind::kFunctionError);
}

}  // namespace
}  // namespace querypilot
