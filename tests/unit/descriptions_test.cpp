// Descriptions of tables and columns: naming them, showing them, and reading
// a dataset's own (BIRD's CSV files).
#include "agent/knowledge/descriptions.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "agent/knowledge/linking.h"
#include "agent/knowledge/schema.h"
#include "eval/descriptions.h"

namespace querypilot {
namespace {

class DescriptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "ATTACH ':memory:' AS archive;"
                           "CREATE TABLE orders(id INTEGER PRIMARY KEY, stat_cd TEXT, amt2 REAL);"
                           "CREATE TABLE archive.orders(id INTEGER PRIMARY KEY, stat_cd TEXT);"
                           "CREATE TABLE archive.notes(id INTEGER PRIMARY KEY, body TEXT);"
                           "CREATE TABLE invoices(id INTEGER PRIMARY KEY, \"order\" TEXT);"
                           "CREATE TABLE \"invoice lines\"(id INTEGER PRIMARY KEY, qty INTEGER, "
                           "\"unit.price\" REAL, \"say \"\"hi\"\"\" TEXT);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    schema_ = std::make_shared<const Schema>(IntrospectSchema(db_, 0).value());
  }
  void TearDown() override { sqlite3_close(db_); }

  sqlite3* db_ = nullptr;
  std::shared_ptr<const Schema> schema_;
};

TEST_F(DescriptionsTest, TargetsNameTablesAndColumnsOfEveryDatabase) {
  struct Case {
    const char* target;
    const char* resolved;  // Target() of the result, or the error
  } cases[] = {
      {"orders", "orders"},
      {"ORDERS.Stat_Cd", "orders.stat_cd"},
      {"archive.orders.stat_cd", "archive.orders.stat_cd"},
      {"archive.notes", "archive.notes"},
      {"notes.body", "archive.notes.body"},  // a name in one database only
      {"orders.status", "no such column: orders.status"},
      {"nothing", "no such table: nothing"},
      {"orders..id",
       "'orders..id' is not a table or column: name one as 'table' or 'table.column'"},
      {"a.b.c.d", "'a.b.c.d' is not a table or column: name one as 'table' or 'table.column'"},
      // Names quoted as SQL quotes them, as the unquoted forms.
      {"invoices.\"order\"", "invoices.order"},
      {"invoices.order", "invoices.order"},
      {"\"invoice lines\".qty", "invoice lines.qty"},
      {"invoice lines.qty", "invoice lines.qty"},
      {"[invoice lines].`QTY`", "invoice lines.qty"},
      {"main.\"invoice lines\".\"unit.price\"", "invoice lines.unit.price"},
      {" \"invoice lines\" . \"say \"\"hi\"\"\" ", "invoice lines.say \"hi\""},
      {"\"invoice lines",
       "'\"invoice lines' is not a table or column: a quoted name needs its closing quote "
       "and nothing after it"},
      {"\"invoice\" lines.qty",
       "'\"invoice\" lines.qty' is not a table or column: a quoted name needs its "
       "closing quote and nothing after it"},
      {"invoices.\"\"",
       "'invoices.\"\"' is not a table or column: name one as 'table' or 'table.column'"},
  };
  for (const auto& c : cases) {
    Result<Description> d = ResolveTarget(*schema_, c.target);
    EXPECT_EQ(d.ok() ? d->Target() : d.status().message(), c.resolved) << c.target;
  }
}

TEST_F(DescriptionsTest, TheyAreShownAsCommentsAndLinkingReadsThem) {
  std::vector<Description> ds = {
      {"main", "orders", "stat_cd", "order status: R = refunded, S = shipped"},
      {"main", "orders", "", "one row per order\nfrom the web shop"},
      {"main", "gone", "", "a table dropped since"},
  };
  auto described = WithDescriptions(schema_, ds);
  ASSERT_NE(described, schema_);
  const std::string text = RenderSchema(*described);
  // Two databases hold an orders table: both are shown qualified.
  EXPECT_NE(text.find("-- one row per order from the web shop\nCREATE TABLE main.orders (\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("CREATE TABLE archive.orders (\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  stat_cd TEXT, -- order status: R = refunded, S = shipped\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(described->rendered, text);
  EXPECT_EQ(WithDescriptions(schema_, {}), schema_);
  // "refunded" is nowhere in the names: only the description ranks orders first.
  auto ranked = RankTables(*described, "How many were refunded?", {});
  EXPECT_EQ(ranked[0].table->name, "orders");
  EXPECT_EQ(ranked[0].table->database, "main");
  EXPECT_GT(ranked[0].score, ranked[1].score);
}

TEST(ParseCsv, QuotedFieldsHoldCommasQuotesAndLineBreaks) {
  auto rows = eval::ParseCsv("a,b,c\r\nid,,\"the id\nMaps to x(id)\"\nname,\"a \"\"b\"\", c\",\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1], (std::vector<std::string>{"id", "", "the id\nMaps to x(id)"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"name", "a \"b\", c", ""}));
}

}  // namespace
}  // namespace querypilot
