#include "agent/sql/sqldiff.h"

#include <gtest/gtest.h>

#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

TEST(DiffSql, Cases) {
  struct Case {
    const char* before;
    const char* after;
    const char* want;
  } cases[] = {
      {"SELECT id FROM t", "SELECT product_id FROM t", "'id' -> 'product_id'"},
      {"SELECT a FROM t", "SELECT a FROM t GROUP BY a", "+ 'GROUP BY a'"},
      {"SELECT DISTINCT a FROM t", "SELECT a FROM t", "- 'DISTINCT'"},
      {"SELECT a FROM t", "select  a\n from T -- same", ""},
      {"SELECT a, b FROM t WHERE x = 1", "SELECT a, c FROM u WHERE x = 1", "'b' -> 'c'; 't' -> 'u'"},
      {"SELECT 'A'", "SELECT 'a'", "''A'' -> ''a''"},  // string literals keep their case
  };
  for (const auto& c : cases) EXPECT_EQ(DiffSql(c.before, c.after), c.want) << c.before << " | " << c.after;
}

TEST(NormaliseSql, IgnoresCaseSpaceCommentsAndSemicolon) {
  EXPECT_EQ(NormaliseSql("SELECT  Name\nFROM \"Customers\" -- hi\n;"), NormaliseSql("select name from customers"));
  EXPECT_NE(NormaliseSql("SELECT 'A'"), NormaliseSql("SELECT 'a'"));
  EXPECT_EQ(NormaliseSql("/* x */ SELECT 1;;"), "select 1");
}

TEST(TokenizeSql, QuotedIdentifiersAndOperators) {
  auto t = TokenizeSql("SELECT \"a\"\"b\", [c d], x->>'$.y' FROM t WHERE n >= 1.5e3");
  ASSERT_GE(t.size(), 8u);
  EXPECT_EQ(t[1].kind, TokenKind::kQuotedIdentifier);
  EXPECT_EQ(t[1].name(), "a\"b");
  EXPECT_EQ(t[3].name(), "c d");
  EXPECT_EQ(t[6].text, "->>");
  EXPECT_EQ(t.back().text, "1.5e3");
}

}  // namespace
}  // namespace querypilot
