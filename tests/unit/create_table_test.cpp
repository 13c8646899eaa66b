// The columns and foreign keys read from CREATE TABLE text: what
// ReadCreateTable takes from the text, what it leaves to SQLite's pragmas,
// and ReadColumnsAndKeys giving the same from the text as from the pragmas.
#include "agent/knowledge/create_table.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "agent/knowledge/schema_columns.h"
#include "agent/sql/database_list.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

std::string Keys(const std::vector<ForeignKeyInfo>& keys) {
  std::string out;
  for (const ForeignKeyInfo& k : keys)
    out += k.from_column + ">" + k.to_table + "." + k.to_column + ";";
  return out;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += n + ",";
  return out;
}

TEST(CreateTableTest, ReadsNamesAndKeysAsSqliteListsThem) {
  struct Case {
    const char* sql;
    const char* columns;
    const char* keys;  // in PRAGMA foreign_key_list's order: the last declared first
  } cases[] = {
      {"CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT NOT NULL)", "a,b,", ""},
      {"CREATE TABLE \"x y\"(\"a\"\"b\" TEXT, [c d] INT, `e` REAL, f)", "a\"b,c d,e,f,", ""},
      {"CREATE TABLE t(a DECIMAL(10, 2) CHECK (a IN (1, 2)), b DEFAULT (1 + 2), c, "
       "PRIMARY KEY (a, c), UNIQUE (b))",
       "a,b,c,", ""},
      {"CREATE TABLE q(x REFERENCES p(a), y, z REFERENCES \"p\", w, "
       "FOREIGN KEY (Y, w) REFERENCES p(a, b) ON DELETE CASCADE, "
       "CONSTRAINT k FOREIGN KEY (z) REFERENCES p)",
       "x,y,z,w,", "z>p.;y>p.a;w>p.b;z>p.;x>p.a;"},
      {"CREATE TABLE c(id INTEGER PRIMARY KEY, pid REFERENCES c DEFERRABLE INITIALLY DEFERRED)",
       "id,pid,", "pid>c.;"},
      {"CREATE TABLE k(key TEXT, \"references\" TEXT, [as] INT) WITHOUT ROWID",
       "key,references,as,", ""},
      {"CREATE TABLE /* a ( comment */ t -- (\n(a, b)", "a,b,", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sql);
    std::optional<DeclaredTable> read = ReadCreateTable(c.sql);
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(Join(read->columns), c.columns);
    EXPECT_EQ(Keys(read->foreign_keys), c.keys);
  }
}

TEST(CreateTableTest, LeavesToSqliteWhatItDoesNotFollow) {
  const char* cases[] = {
      "CREATE TABLE g(a INT, b INT GENERATED ALWAYS AS (a * 2) VIRTUAL)",
      "CREATE TABLE g(a INT, c AS (a + 1) STORED)",
      "CREATE TABLE s('quoted as a string' TEXT)",
      "CREATE TABLE f(a, FOREIGN KEY (a COLLATE nocase) REFERENCES p(x))",
      "CREATE TABLE f(a REFERENCES p(x, y))",
      "CREATE TABLE f(a, b, FOREIGN KEY (a, b) REFERENCES p(x))",
      "CREATE TABLE f(a, FOREIGN KEY (nope) REFERENCES p(x))",
      "CREATE TABLE u(a, b",
      "CREATE TABLE u(a, , b)",
      "CREATE TABLE u(a, PRIMARY KEY (a), b)",
      "",
      "SELECT 1",
  };
  for (const char* sql : cases) {
    SCOPED_TRACE(sql);
    EXPECT_FALSE(ReadCreateTable(sql).has_value());
  }
}

// The same columns and keys from the text as from SQLite's pragmas, for
// tables of every form: every table ReadCreateTable follows is read from its
// text, the rest from the pragmas, and the two agree.
TEST(CreateTableTest, ReadColumnsAndKeysGivesWhatThePragmasGive) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(
          db,
          "CREATE TABLE p(a INTEGER, b TEXT NOT NULL, c, PRIMARY KEY(a, b));"
          "CREATE TABLE \"q x\"(x REFERENCES p(a), \"Y\" int, z REFERENCES \"p\" , w, "
          "  foreign key(y,W) references p(a,b), constraint k foreign key (z) references p);"
          "CREATE TABLE r(a INTEGER, b text not null, [c d] VARCHAR (10 ) , `e` unsigned   big "
          "  int default 3, f, primary key(a, f)) without rowid;"
          "CREATE TABLE g(a INT, b INT GENERATED ALWAYS AS (a*2) VIRTUAL);"
          "CREATE TABLE cm(/* c */ a INTEGER PRIMARY KEY AUTOINCREMENT -- x\n, b DECIMAL(10,2) "
          "  CHECK (b > 0), \"c\"\"q\" TEXT COLLATE NOCASE UNIQUE, d DEFAULT (1+2));"
          "CREATE TABLE s1('str name' TEXT, b);"
          "CREATE TABLE st(a INTEGER PRIMARY KEY, b TEXT) STRICT;"
          "CREATE TABLE up(ID int NOT NULL PRIMARY KEY DESC, Val TEXT NULL);"
          "ALTER TABLE up RENAME COLUMN Val TO \"new val\";"
          "CREATE TABLE notype(a, b, c);"
          "ALTER TABLE notype ADD COLUMN d TEXT REFERENCES p(a);"
          "CREATE TABLE dropped(a, b, c);"
          "ALTER TABLE dropped DROP COLUMN b;"
          "CREATE TABLE made AS SELECT a, b AS \"bee x\", 1.5 AS r FROM p;"
          "CREATE VIEW v AS SELECT a, b FROM p;",
          nullptr, nullptr, nullptr),
      SQLITE_OK);
  auto databases = ListDatabases(db);
  ASSERT_TRUE(databases.has_value());
  Schema from_pragmas;
  std::vector<DeclaredText> declared;
  auto list =
      Statement::Prepare(db,
                         "SELECT l.name, l.type, m.sql, l.ncol FROM pragma_table_list AS l "
                         "JOIN main.sqlite_master AS m ON m.name = l.name "
                         "WHERE l.schema = 'main' AND l.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                         "ORDER BY l.name");
  ASSERT_TRUE(list.ok());
  while (list->Step() == SQLITE_ROW) {
    TableInfo t;
    t.name = list->ColumnText(0);
    t.is_view = list->ColumnText(1) == "view";
    from_pragmas.tables.push_back(t);
    DeclaredText text;
    if (!t.is_view) {
      text.sql = list->ColumnText(2);
      text.columns = list->ColumnInt(3);
    }
    declared.push_back(text);
  }
  ASSERT_EQ(from_pragmas.tables.size(), 12u);
  const Schema unread = from_pragmas;
  Schema from_text = unread;
  std::vector<bool> generated_pragmas(from_pragmas.tables.size()),
      generated_text(from_pragmas.tables.size());
  ASSERT_TRUE(ReadColumnsAndKeys(db, *databases, {}, &from_pragmas, &generated_pragmas).ok());
  ASSERT_TRUE(ReadColumnsAndKeys(db, *databases, declared, &from_text, &generated_text).ok());
  EXPECT_EQ(generated_text, generated_pragmas);
  for (size_t n = 0; n < from_pragmas.tables.size(); ++n) {
    const TableInfo& want = from_pragmas.tables[n];
    const TableInfo& got = from_text.tables[n];
    SCOPED_TRACE(want.name);
    ASSERT_EQ(got.columns.size(), want.columns.size());
    EXPECT_FALSE(want.columns.empty());
    for (size_t i = 0; i < want.columns.size(); ++i) {
      EXPECT_EQ(got.columns[i].name, want.columns[i].name);
      EXPECT_EQ(got.columns[i].type, want.columns[i].type);
      EXPECT_EQ(got.columns[i].not_null, want.columns[i].not_null);
      EXPECT_EQ(got.columns[i].primary_key, want.columns[i].primary_key);
    }
    EXPECT_EQ(Keys(got.foreign_keys), Keys(want.foreign_keys));
  }
  // The tables it follows are read from their text indeed: a text that
  // names the same columns with another key is taken at its word.
  for (size_t n = 0; n < unread.tables.size(); ++n) {
    if (unread.tables[n].name != "p") continue;
    std::vector<DeclaredText> other = declared;
    other[n].sql = "CREATE TABLE p(a, b, c REFERENCES elsewhere)";
    Schema probe = unread;
    ASSERT_TRUE(ReadColumnsAndKeys(db, *databases, other, &probe, &generated_text).ok());
    EXPECT_EQ(Keys(probe.tables[n].foreign_keys), "c>elsewhere.;");
    EXPECT_EQ(probe.tables[n].columns.size(), 3u);
    EXPECT_TRUE(probe.tables[n].columns[1].not_null);  // from SQLite, not the text
  }
  // Closed once `list`, still open here, is finalized.
  sqlite3_close_v2(db);
}

}  // namespace
}  // namespace querypilot
