// What a query refers to: aliases, literal comparisons, join equalities.
#include "agent/sql/sqlrefs.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

Schema RefsShop() {
  Schema s;
  s.tables = {
      {"customers",
       false,
       {{"id", "INTEGER", true}, {"name", "TEXT"}, {"country", "TEXT"}},
       {},
       {}},
      {"orders",
       false,
       {{"id", "INTEGER", true}, {"customer_id", "INTEGER"}, {"status", "TEXT"}},
       {{"customer_id", "customers", "id"}},
       {}},
  };
  return s;
}

std::string Show(const std::vector<LiteralComparison>& cs) {
  std::string out;
  for (const auto& c : cs) {
    out += (out.empty() ? "" : " | ") + c.table->name + "." + c.column + " " + c.op + " [" +
           c.literal + "]";
  }
  return out;
}

TEST(SqlRefs, LiteralComparisons) {
  const Schema schema = RefsShop();
  struct Case {
    const char* sql;
    const char* expected;
  } cases[] = {
      {"SELECT * FROM customers WHERE country = 'usa'", "customers.country = [usa]"},
      {"SELECT * FROM customers c WHERE 'usa' = c.country", "customers.country = [usa]"},
      {"SELECT * FROM customers AS c WHERE c.country == 'it''s'", "customers.country = [it's]"},
      {"SELECT * FROM customers WHERE country IN ('usa', 'uk')",
       "customers.country in [usa] | customers.country in [uk]"},
      {"SELECT * FROM customers WHERE country NOT IN ('usa')", ""},
      {"SELECT * FROM customers WHERE country IN (SELECT 'x')", ""},
      {"SELECT * FROM customers WHERE name LIKE 'Jo%'", "customers.name like [Jo%]"},
      {"SELECT * FROM customers WHERE country = \"usa\"", "customers.country = [usa]"},
      {"SELECT * FROM customers WHERE \"country\" = 'usa'", "customers.country = [usa]"},
      {"SELECT * FROM customers WHERE lower(country) = 'usa'", ""},
      {"SELECT * FROM customers WHERE x.country = 'usa'", ""},
      {"SELECT * FROM customers WHERE country != 'usa'", ""},
      {"SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'open' "
       "AND "
       "c.country = 'UK'",
       "orders.status = [open] | customers.country = [UK]"},
      {"SELECT * FROM orders WHERE status IS NULL", "orders.status is null []"},
      {"SELECT * FROM orders WHERE status IS NOT NULL", ""},
      {"SELECT * FROM orders WHERE status = 'a' OR status = 'a'", "orders.status = [a]"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(Show(FindLiteralComparisons(c.sql, schema)), c.expected) << c.sql;
}

TEST(SqlRefs, ColumnEqualities) {
  const Schema schema = RefsShop();
  auto eq = FindColumnEqualities(
      "SELECT 1 FROM orders AS o JOIN customers c ON o.customer_id = c.id WHERE o.id = 3", schema);
  ASSERT_EQ(eq.size(), 1u);
  EXPECT_EQ(eq[0].left->name, "orders");
  EXPECT_EQ(eq[0].left_column, "customer_id");
  EXPECT_EQ(eq[0].right->name, "customers");
  EXPECT_EQ(eq[0].right_column, "id");
  EXPECT_TRUE(FindColumnEqualities("SELECT 1 FROM orders o WHERE o.nope = c.id", schema).empty());
}

TEST(SqlRefs, IdentifierWords) {
  EXPECT_EQ(IdentifierWords("customerName"), (std::set<std::string>{"customer", "name"}));
  EXPECT_EQ(IdentifierWords("order_items"), (std::set<std::string>{"order", "items", "item"}));
  EXPECT_EQ(IdentifierWords("countries"),
            (std::set<std::string>{"countries", "countrie", "countri", "country"}));
  EXPECT_EQ(IdentifierWords("superheroes"),
            (std::set<std::string>{"superheroes", "superheroe", "superhero"}));
  EXPECT_EQ(IdentifierWords("class"), (std::set<std::string>{"class"}));
}

}  // namespace
}  // namespace querypilot
