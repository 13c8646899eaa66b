#include "agent/quality/analyse.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

Schema ShopSchema() {
  Schema s;
  s.tables.push_back({"customers",
                      false,
                      {{"id", "INTEGER", true}, {"name", "TEXT"}, {"country", "TEXT"}},
                      {},
                      {}});
  s.tables.push_back({"orders",
                      false,
                      {{"id", "INTEGER", true}, {"customer_id", "INTEGER"}, {"ordered_at", "DATE"}},
                      {{"customer_id", "customers", "id"}},
                      {}});
  s.tables.push_back(
      {"products",
       false,
       {{"id", "INTEGER", true}, {"name", "TEXT"}, {"category", "TEXT"}, {"price", "REAL"}},
       {},
       {}});
  return s;
}

TEST(ClassifySqliteError, Messages) {
  struct Case {
    const char* message;
    ErrorKind want;
  } cases[] = {
      {"no such table: customer", ErrorKind::kTableNotFound},
      {"no such table: main.customer", ErrorKind::kTableNotFound},
      {"no such column: nme", ErrorKind::kColumnNotFound},
      {"no such column: p.category_name", ErrorKind::kColumnNotFound},
      {"ambiguous column name: id", ErrorKind::kAmbiguousColumn},
      {"misuse of aggregate: COUNT()", ErrorKind::kAggregationError},
      {"misuse of aggregate function SUM()", ErrorKind::kAggregationError},
      {"aggregate functions are not allowed in the GROUP BY clause", ErrorKind::kAggregationError},
      {"a GROUP BY clause is required before HAVING", ErrorKind::kAggregationError},
      {"HAVING clause on a non-aggregate query", ErrorKind::kAggregationError},
      {"misuse of window function row_number()", ErrorKind::kAggregationError},
      {"near \"FROM\": syntax error", ErrorKind::kSyntaxError},
      {"incomplete input", ErrorKind::kSyntaxError},
      {"unrecognized token: \"'abc\"", ErrorKind::kSyntaxError},
      {"no such function: YEAR", ErrorKind::kFunctionError},
      {"wrong number of arguments to function substr()", ErrorKind::kFunctionError},
      {"datatype mismatch", ErrorKind::kTypeMismatch},
      {"integer overflow", ErrorKind::kTypeMismatch},
      {"interrupted", ErrorKind::kInterrupted},
      {"not authorized", ErrorKind::kRefused},
      {"ORDER BY term out of range - should be between 1 and 2", ErrorKind::kExecutionError},
  };
  for (const auto& c : cases) EXPECT_EQ(ClassifySqliteError(c.message), c.want) << c.message;
}

TEST(ComputeHint, GroundedInTheSchema) {
  Schema s = ShopSchema();
  struct Case {
    ErrorKind kind;
    const char* message;
    const char* sql;
    std::vector<const char*> must_contain;
  } cases[] = {
      {ErrorKind::kTableNotFound,
       "no such table: customer",
       "SELECT * FROM customer",
       {"did you mean customers?", "The tables are: customers, orders, products."}},
      {ErrorKind::kTableNotFound,
       "no such table: order",
       "SELECT * FROM order",
       {"did you mean orders?"}},
      {ErrorKind::kColumnNotFound,
       "no such column: p.category_name",
       "SELECT p.category_name FROM products AS p",
       {"p is products", "products has columns id, name, category, price",
        "did you mean category"}},
      {ErrorKind::kColumnNotFound,
       "no such column: nme",
       "SELECT nme FROM customers c",
       {"customers has columns id, name, country", "did you mean name"}},
      {ErrorKind::kColumnNotFound,
       "no such column: country",
       "SELECT country FROM orders",
       {"orders has columns", "'country' is a column of customers, which would need a join"}},
      {ErrorKind::kColumnNotFound,
       "no such column: x.id",
       "SELECT x.id FROM orders o",
       {"'x' is not a table or alias in the query"}},
      {ErrorKind::kAmbiguousColumn,
       "ambiguous column name: id",
       "SELECT id FROM customers c JOIN orders o ON o.customer_id = c.id",
       {"'id' is a column of customers and orders", "customers.id or orders.id"}},
      {ErrorKind::kFunctionError,
       "no such function: YEAR",
       "SELECT YEAR(ordered_at) FROM orders",
       {"SQLite has no year(); use strftime('%Y', column)"}},
      {ErrorKind::kSyntaxError,
       "near \"5\": syntax error",
       "SELECT TOP 5 * FROM orders",
       {"single quotes for strings"}},
      {ErrorKind::kAggregationError,
       "misuse of aggregate: COUNT()",
       "SELECT 1 WHERE COUNT(*) > 1",
       {"HAVING"}},
  };
  for (const auto& c : cases) {
    std::string hint = ComputeHint(c.kind, c.message, c.sql, s);
    for (const char* want : c.must_contain) {
      EXPECT_NE(hint.find(want), std::string::npos)
          << c.message << "\n  hint: " << hint << "\n  want: " << want;
    }
  }
}

TEST(ClosestNames, RanksByEditsAndSharedWords) {
  std::vector<std::string> names = {"customer_id", "product_id", "id", "quantity", "unit_price"};
  EXPECT_EQ(ClosestNames("prodct_id", names, 1), std::vector<std::string>{"product_id"});
  EXPECT_EQ(ClosestNames("price", names, 1), std::vector<std::string>{"unit_price"});
  EXPECT_TRUE(ClosestNames("zzzzzzzz", names, 3).empty());
  EXPECT_TRUE(ClosestNames("id", {"id"}, 3).empty());  // the name itself is no suggestion
}

}  // namespace
}  // namespace querypilot
