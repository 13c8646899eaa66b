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
      {"SELECT a, b FROM t WHERE x = 1", "SELECT a, c FROM u WHERE x = 1",
       "'b' -> 'c'; 't' -> 'u'"},
      {"SELECT 'A'", "SELECT 'a'", "''A'' -> ''a''"},  // string literals keep their case
  };
  for (const auto& c : cases)
    EXPECT_EQ(DiffSql(c.before, c.after), c.want) << c.before << " | " << c.after;
}

// One change made at several places is one change: listed once, at its
// first place, with how many places it was made at; different changes stay
// apart, in order.
TEST(DiffSql, AChangeMadeAtSeveralPlacesIsListedOnce) {
  struct Case {
    const char* before;
    const char* after;
    const char* want;
  } cases[] = {
      {"SELECT p.category_name, SUM(x) AS r FROM p GROUP BY p.category_name ORDER BY r",
       "SELECT p.category, SUM(x) AS r FROM p GROUP BY p.category ORDER BY r",
       "'category_name' -> 'category' (2 places)"},
      {"SELECT a, a + 1 FROM t WHERE a > 0", "SELECT b, b + 1 FROM t WHERE b > 0",
       "'a' -> 'b' (3 places)"},
      // The same change in keyword case is the same change.
      {"SELECT count(a) FROM t GROUP BY x HAVING COUNT(a) > 1",
       "SELECT count(b) FROM t GROUP BY x HAVING COUNT(b) > 1", "'a' -> 'b' (2 places)"},
      {"SELECT a, b, a FROM t", "SELECT c, b, c FROM t2", "'a' -> 'c' (2 places); 't' -> 't2'"},
      {"SELECT a FROM t WHERE x = 1 AND y = 2", "SELECT a FROM t WHERE x = 1 AND y = 2 LIMIT 5",
       "+ 'LIMIT 5'"},
      // A string literal keeps its case: 'A' -> 'b' and 'a' -> 'b' are two changes.
      {"SELECT 'A', 'a'", "SELECT 'b', 'b'", "''A'' -> ''b''; ''a'' -> ''b''"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(DiffSql(c.before, c.after), c.want) << c.before << " | " << c.after;
}

TEST(NormaliseSql, IgnoresCaseSpaceCommentsAndSemicolon) {
  EXPECT_EQ(NormaliseSql("SELECT  Name\nFROM \"Customers\" -- hi\n;"),
            NormaliseSql("select name from customers"));
  EXPECT_NE(NormaliseSql("SELECT 'A'"), NormaliseSql("SELECT 'a'"));
  EXPECT_EQ(NormaliseSql("/* x */ SELECT 1;;"), "select 1");
  EXPECT_EQ(NormaliseSql("SELECT [A] FROM `t`"), "select \"a\" from \"t\"");
}

// Two attempts are "unchanged" only when SQLite would read the same tokens.
TEST(NormaliseSql, SameWhatSqliteReads) {
  struct Case {
    const char* a;
    const char* b;
    bool same;
  } cases[] = {
      // The loop this guards against: ORDER is a keyword bare, a name quoted.
      {"SELECT i.order FROM items i", "SELECT i.\"order\" FROM items i", false},
      {"SELECT i.order FROM items i", "SELECT i.[order] FROM items i", false},
      {"SELECT i.order FROM items i", "SELECT i.`order` FROM items i", false},
      {"SELECT \"select\" FROM t", "SELECT select FROM t", false},
      // One identifier, however quoted, in any ASCII case.
      {"SELECT name FROM t", "SELECT \"name\" FROM t", true},
      {"SELECT name FROM t", "SELECT [Name] FROM t", true},
      {"SELECT name FROM t", "SELECT `NAME` FROM T", true},
      {"SELECT i.\"order\" FROM t i", "select I.[ORDER] from \"T\" \"i\"", true},
      {"SELECT \"a\"\"b\" FROM t", "SELECT [a\"b] FROM t", true},
      {"SELECT \"a b\" FROM t", "SELECT [a b] FROM t", true},
      // Keywords case-folded; white space and comments ignored.
      {"SELECT a FROM t ORDER BY a DESC", "select a\n  from t /* x */ order by a desc -- y", true},
      {"SELECT a FROM t;", "SELECT a FROM t", true},
      // Names differ; non-ASCII letters are not folded (nor by SQLite).
      {"SELECT a FROM t", "SELECT b FROM t", false},
      {"SELECT \"\xC3\x89t\xC3\xA9\" FROM t", "SELECT \"\xC3\xA9t\xC3\xA9\" FROM t", false},
      // String literals compared exactly, never taken for names.
      {"SELECT 'A'", "SELECT 'a'", false},
      {"SELECT 'a b'", "SELECT 'a  b'", false},
      {"SELECT 'x' FROM t", "SELECT \"x\" FROM t", false},
      {"SELECT 'it''s'", "SELECT 'it''s'", true},
      // Numbers as written (case aside).
      {"SELECT 1E3", "SELECT 1e3", true},
      {"SELECT 1", "SELECT 1.0", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(NormaliseSql(c.a) == NormaliseSql(c.b), c.same)
        << c.a << " | " << c.b << " -> " << NormaliseSql(c.a) << " | " << NormaliseSql(c.b);
  }
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
