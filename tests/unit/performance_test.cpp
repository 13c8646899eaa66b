// Slow scans from a query plan: which full scans a query filters or joins on
// a column (pure), and, on a real database, which of those no index serves
// on a table big enough to matter.
#include "agent/quality/performance.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>

#include "agent/knowledge/schema.h"

namespace querypilot {
namespace {

Schema PerformanceShop() {
  Schema s;
  s.tables = {
      {"customers", false, {{"id", "INTEGER", true}, {"name", "TEXT"}, {"city", "TEXT"}}, {}, {}},
      {"orders",
       false,
       {{"id", "INTEGER", true},
        {"customer_id", "INTEGER"},
        {"status", "TEXT"},
        {"amount", "REAL"}},
       {{"customer_id", "customers", "id"}},
       {}},
  };
  return s;
}

std::string Show(const std::vector<ScanCandidate>& cs) {
  std::string out;
  for (const auto& c : cs) {
    out += (out.empty() ? "" : " | ") + c.table->name + ":";
    for (const auto& col : c.columns) out += " " + col;
  }
  return out;
}

TEST(Performance, ScanCandidatesFollowThePlanAndTheQuery) {
  const Schema schema = PerformanceShop();
  struct Case {
    std::vector<std::string> plan;
    const char* sql;
    const char* expected;
  } cases[] = {
      {{"SCAN o"}, "SELECT * FROM orders o WHERE o.status = 'paid'", "orders: status"},
      {{"SCAN orders"},
       "SELECT * FROM orders WHERE status IN ('paid', 'shipped')",
       "orders: status"},
      {{"SCAN TABLE orders AS o"},
       "SELECT * FROM orders AS o WHERE o.status = 'paid'",
       "orders: status"},
      {{"SCAN orders"}, "SELECT * FROM orders WHERE amount > 100", "orders: amount"},
      {{"SCAN o"}, "SELECT * FROM orders o WHERE 100 <= o.amount", "orders: amount"},
      {{"SCAN orders"}, "SELECT * FROM orders WHERE amount BETWEEN 1 AND 9", "orders: amount"},
      // A join: the scanned side's join column; the rowid is always indexed.
      {{"SCAN o", "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"},
       "SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id",
       "orders: customer_id"},
      {{"SCAN c", "SEARCH o USING INDEX idx (customer_id=?)"},
       "SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.city = 'Lyon'",
       "customers: city"},
      // Both sides of a join that no index serves: the scanned side's filter
      // column, and the column SQLite builds an automatic index on, at every
      // run, for the other side.
      {{"SCAN c", "SEARCH o USING AUTOMATIC COVERING INDEX (customer_id=?)"},
       "SELECT c.name, o.amount FROM orders o JOIN customers c ON c.id = o.customer_id WHERE "
       "c.city = 'Lyon'",
       "customers: city | orders: customer_id"},
      {{"SCAN o", "SEARCH c AS x USING AUTOMATIC PARTIAL COVERING INDEX (city=? AND name>?)"},
       "SELECT 1 FROM orders o, customers x WHERE x.city = o.status AND x.name > 'a'",
       "orders: status | customers: city name"},
      // Not a slow scan: an index is used, or the query needs every row.
      {{"SEARCH orders USING INTEGER PRIMARY KEY (rowid=?)"},
       "SELECT * FROM orders WHERE id = 3",
       ""},
      {{"SCAN orders USING COVERING INDEX idx_status"},
       "SELECT status FROM orders WHERE status = 'paid'",
       ""},
      {{"SCAN orders"}, "SELECT * FROM orders", ""},
      {{"SCAN orders"}, "SELECT * FROM orders WHERE status <> 'paid'", ""},
      {{"SCAN orders"}, "SELECT * FROM orders WHERE id > 5", ""},
      {{"SCAN CONSTANT ROW"}, "SELECT 1", ""},
      {{"SCAN (subquery-1)"}, "SELECT * FROM (SELECT * FROM orders) WHERE status = 'paid'", ""},
      {{"SCAN x"}, "WITH x AS (SELECT 1 AS a) SELECT * FROM x WHERE a = 1", ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Show(ScanCandidates(c.plan, c.sql, schema)), c.expected) << c.sql;
  }
}

TEST(Performance, CreateIndexStatementsAreQuotedAndNamed) {
  EXPECT_EQ(CreateIndexStatement("orders", "status"),
            "CREATE INDEX IF NOT EXISTS \"idx_orders_status\" ON \"orders\"(\"status\");");
  EXPECT_EQ(CreateIndexStatement("Order Items", "unit\"price"),
            "CREATE INDEX IF NOT EXISTS \"idx_order_items_unit_price\" ON \"Order "
            "Items\"(\"unit\"\"price\");");
}

class PerformanceDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(
                  db_,
                  "CREATE TABLE t (id INTEGER PRIMARY KEY, tag TEXT, kind TEXT, n INTEGER);"
                  "CREATE INDEX t_kind ON t(kind);"
                  "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000) "
                  "INSERT INTO t SELECT i, 'tag' || (i % 7), 'k' || (i % 3), i FROM c;",
                  nullptr, nullptr, nullptr),
              SQLITE_OK);
    auto s = IntrospectSchema(db_, 0);
    ASSERT_TRUE(s.ok());
    schema_ = std::move(s).value();
  }
  void TearDown() override { sqlite3_close(db_); }
  std::vector<SlowScan> Scans(const std::string& sql, int64_t min_rows) {
    PerformanceLimits limits;
    limits.min_rows = min_rows;
    return FindSlowScans(SqlTarget::Own(db_), ReadQueryPlan(SqlTarget::Own(db_), sql), sql, schema_,
                         limits);
  }
  sqlite3* db_ = nullptr;
  Schema schema_;
};

TEST_F(PerformanceDbTest, OnlyBigTablesAndColumnsNoIndexServes) {
  const std::string by_tag = "SELECT count(*) FROM t WHERE tag = 'tag3'";
  auto scans = Scans(by_tag, 1000);
  ASSERT_EQ(scans.size(), 1u);
  EXPECT_EQ(scans[0].table, "t");
  EXPECT_EQ(scans[0].column, "tag");
  EXPECT_EQ(scans[0].rows, 2000);
  EXPECT_EQ(scans[0].create_index, CreateIndexStatement("t", "tag"));
  EXPECT_TRUE(Scans(by_tag, 5000).empty());  // a small table: no warning
  // A column an index leads is served: SQLite searches, and nothing is said
  // even for a plan that scans.
  EXPECT_TRUE(Scans("SELECT count(*) FROM t WHERE kind = 'k1'", 1000).empty());
  // After the proposed index exists, the same query searches it.
  ASSERT_EQ(sqlite3_exec(db_, scans[0].create_index.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_TRUE(Scans(by_tag, 1000).empty());
}

// A join on columns no index leads, on both sides: the advice names an index
// for each side at once (one paste), and with both the plan uses them.
TEST(PerformanceJoin, BothSidesOfAnUnindexedJoinAreAdvisedAtOnce) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db,
                   "CREATE TABLE c (id INTEGER PRIMARY KEY, email TEXT, city TEXT);"
                   "CREATE TABLE o (id INTEGER PRIMARY KEY, email TEXT, amount REAL);"
                   "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3000) "
                   "INSERT INTO c SELECT i, 'u' || i, 'City' || (i % 50) FROM k;"
                   "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 4000) "
                   "INSERT INTO o SELECT i, 'u' || (i % 3000), i * 1.5 FROM k;",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  auto schema = IntrospectSchema(db, 0);
  ASSERT_TRUE(schema.ok());
  const std::string sql =
      "SELECT c.city, sum(o.amount) FROM o JOIN c ON c.email = o.email WHERE c.city = 'City7' "
      "GROUP BY c.city";
  PerformanceLimits limits;
  limits.min_rows = 1000;
  std::vector<SlowScan> scans = FindSlowScans(
      SqlTarget::Own(db), ReadQueryPlan(SqlTarget::Own(db), sql), sql, *schema, limits);
  std::set<std::string> advised;
  for (const SlowScan& s : scans) advised.insert(s.table + "." + s.column);
  // One side scans (filtered on city), the other gets an automatic index on
  // email; which side is which is the planner's choice.
  ASSERT_EQ(scans.size(), 2u);
  EXPECT_TRUE(advised.count("o.email")) << ::testing::PrintToString(advised);
  EXPECT_TRUE(advised.count("c.city") || advised.count("c.email"))
      << ::testing::PrintToString(advised);
  for (const SlowScan& s : scans)
    ASSERT_EQ(sqlite3_exec(db, s.create_index.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_TRUE(FindSlowScans(SqlTarget::Own(db), ReadQueryPlan(SqlTarget::Own(db), sql), sql,
                            *schema, limits)
                  .empty());
  sqlite3_close(db);
}

}  // namespace
}  // namespace querypilot
