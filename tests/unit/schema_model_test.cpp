// How a table is shown to the model.
#include "agent/base/schema_model.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "agent/prompt/prompts.h"

namespace querypilot {
namespace {

TEST(SchemaModel, AKeyOfSeveralColumnsIsOneTableConstraint) {
  TableInfo t{"countrylanguage",
              false,
              {{"CountryCode", "char(3)", true, true},
               {"Language", "char(30)", true, true},
               {"IsOfficial", "TEXT"}},
              {{"CountryCode", "country", "Code"}},
              {}};
  EXPECT_EQ(RenderTable(t),
            "CREATE TABLE countrylanguage (\n"
            "  CountryCode char(3),\n"
            "  Language char(30),\n"
            "  IsOfficial TEXT,\n"
            "  PRIMARY KEY (CountryCode, Language),\n"
            "  FOREIGN KEY (CountryCode) REFERENCES country(Code)\n"
            ");\n");
  TableInfo single{
      "country", false, {{"Code", "char(3)", true, true}, {"Name", "TEXT", false, true}}, {}, {}};
  EXPECT_EQ(RenderTable(single),
            "CREATE TABLE country (\n  Code char(3) PRIMARY KEY,\n  Name TEXT NOT NULL\n);\n");
  TableInfo no_fk{"pair", false, {{"a", "INTEGER", true}, {"b", "INTEGER", true}}, {}, {}};
  EXPECT_EQ(RenderTable(no_fk),
            "CREATE TABLE pair (\n  a INTEGER,\n  b INTEGER,\n  PRIMARY KEY (a, b)\n);\n");
}

// A CSV imported by the shell's plain .import leaves every column TEXT: the
// prompt says which hold numbers as text, from the sample values.
TEST(SchemaModel, NumbersStoredAsTextAreNoted) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE books(title TEXT, pages TEXT, price, year INTEGER, code "
                         "TEXT, blank TEXT);"
                         "INSERT INTO books VALUES ('Emma', '370', '12.50', 1815, '0x1A', NULL),"
                         " ('Dune', '412', ' 9', 1965, '17', NULL);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  Result<Schema> schema = IntrospectSchema(db, 3, nullptr);
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  const std::string rendered = RenderSchema(*schema);
  EXPECT_NE(rendered.find("pages TEXT, -- numbers stored as text ('370'): CAST(pages AS INTEGER) "
                          "to compare or sort"),
            std::string::npos)
      << rendered;
  // No type is TEXT affinity's too; a decimal is a REAL.
  EXPECT_NE(rendered.find("price, -- numbers stored as text ('12.50'): CAST(price AS REAL)"),
            std::string::npos)
      << rendered;
  // Not for text that is not all numbers, a column of numbers, or NULLs only.
  EXPECT_EQ(rendered.find("title TEXT, --"), std::string::npos) << rendered;
  EXPECT_EQ(rendered.find("code TEXT, --"), std::string::npos) << rendered;
  EXPECT_EQ(rendered.find("year INTEGER, --"), std::string::npos) << rendered;
  EXPECT_EQ(rendered.find("blank TEXT --"), std::string::npos) << rendered;
  // Without sample rows, nothing is said.
  schema = IntrospectSchema(db, 0, nullptr);
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(RenderSchema(*schema).find("numbers stored as text"), std::string::npos);
  sqlite3_close(db);
}

TEST(SchemaModel, KeywordsAndSpacedNamesAreQuotedAsSqliteWouldWriteThem) {
  const struct {
    const char* name;
    const char* shown;
  } cases[] = {
      {"id", "id"},
      {"order", "\"order\""},
      {"ORDER", "\"ORDER\""},
      {"group", "\"group\""},
      {"where", "\"where\""},
      {"Key", "\"Key\""},
      {"first name", "\"first name\""},
      {"2nd", "\"2nd\""},
      {"a\"b", "\"a\"\"b\""},
      {"café", "\"café\""},
      {"orders", "orders"},
      {"name_2", "name_2"},
      {"", "\"\""},
  };
  for (const auto& c : cases) EXPECT_EQ(PromptIdentifier(c.name), c.shown) << c.name;
}

// The SQL a model would copy from the prompt runs: the CREATE TABLE text
// itself, and a query written with the names exactly as shown.
// FTS5, FTS4 and R*Tree tables are shown as what they are, so that the model
// knows MATCH and the module's columns work; the text shown creates them.
TEST(SchemaModel, AVirtualTableIsShownWithItsModule) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize = 'porter');"
                         "CREATE VIRTUAL TABLE notes USING FTS4(text);"
                         "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1);"
                         "INSERT INTO docs VALUES ('Ship', 'ships sail');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  Result<Schema> schema = IntrospectSchema(db, 1);
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  const std::string rendered = RenderSchema(schema.value());
  EXPECT_NE(rendered.find("CREATE VIRTUAL TABLE docs USING fts5(\n  title,\n  body\n);\n"),
            std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("CREATE VIRTUAL TABLE notes USING FTS4(\n  text\n);"), std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("CREATE VIRTUAL TABLE boxes USING rtree(\n  id,\n  x0,\n  x1\n);"),
            std::string::npos)
      << rendered;
  EXPECT_EQ(rendered.find("CREATE TABLE"), std::string::npos) << rendered;  // no shadow table
  sqlite3_close(db);
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, rendered.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "") << "\n"
      << rendered;
  sqlite3_free(err);
  sqlite3_close(db);
  EXPECT_EQ(VirtualTableModule("create virtual table t using  fts5 (a)"), "fts5");
  EXPECT_EQ(VirtualTableModule("CREATE TABLE t(a)"), "");
}

// A module's name is shown as SQLite reads it: bare where it may be, quoted
// where it must be (a space, a keyword, a quote, a digit first), so that the
// CREATE VIRTUAL TABLE shown names the module the table uses. SQLite's own
// "no such module" error says which name it read.
TEST(SchemaModel, AVirtualTablesModuleIsQuotedWhereItMustBe) {
  struct Case {
    std::string create_sql;  // as sqlite_schema keeps it
    std::string module;      // as SQLite reads it
    std::string shown;       // after USING in the prompt
  } cases[] = {
      {"CREATE VIRTUAL TABLE t USING fts5(a)", "fts5", "fts5"},
      {"create virtual table t using  fts5 (a)", "fts5", "fts5"},
      {"CREATE VIRTUAL TABLE t\n  USING\tFTS4(a)", "FTS4", "FTS4"},
      {"CREATE VIRTUAL TABLE \"my using\" /* c */ USING rtree(a, b, c)", "rtree", "rtree"},
      {"CREATE VIRTUAL TABLE t USING \"my mod\"(a)", "my mod", "\"my mod\""},
      {"CREATE VIRTUAL TABLE t USING [my-mod](a)", "my-mod", "\"my-mod\""},
      {"CREATE VIRTUAL TABLE t USING `select`(a)", "select", "\"select\""},
      {"CREATE VIRTUAL TABLE t USING 'say \"\"hi\"\"'(a)", "say \"\"hi\"\"",
       "\"say \"\"\"\"hi\"\"\"\"\""},
      {"CREATE VIRTUAL TABLE t USING \"a\"\"b\"(a)", "a\"b", "\"a\"\"b\""},
      {"CREATE VIRTUAL TABLE t USING \"3d\"(a)", "3d", "\"3d\""},
      {"CREATE VIRTUAL TABLE t USING mod$1(a)", "mod$1", "\"mod$1\""},
  };
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  for (const Case& c : cases) {
    EXPECT_EQ(VirtualTableModule(c.create_sql), c.module) << c.create_sql;
    TableInfo t{"t", false, {{"a", ""}}, {}, {}};
    t.is_virtual = true;
    t.module = c.module;
    const std::string rendered = RenderTable(t);
    EXPECT_EQ(rendered, "CREATE VIRTUAL TABLE t USING " + c.shown + "(\n  a\n);\n") << c.module;
    EXPECT_EQ(VirtualTableModule(rendered), c.module) << rendered;
    if (c.module == "fts5" || c.module == "FTS4" || c.module == "rtree") continue;
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, rendered.c_str(), -1, &st, nullptr), SQLITE_OK) << rendered;
    EXPECT_EQ(sqlite3_step(st), SQLITE_ERROR);
    EXPECT_EQ(std::string(sqlite3_errmsg(db)), "no such module: " + c.module) << rendered;
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  for (const char* other :
       {"CREATE TABLE t(a)", "CREATE VIRTUAL TABLE t", "CREATE VIRTUAL TABLE t USING",
        "CREATE VIRTUAL TABLE t \"USING\" fts5(a)", "CREATE VIRTUAL TABLE t USING \"open(a)"}) {
    EXPECT_EQ(VirtualTableModule(other), "") << other;
  }
  EXPECT_TRUE(IsAnswerTable("CREATE VIRTUAL TABLE x USING ask('q')"));
  EXPECT_TRUE(IsAnswerTable("CREATE VIRTUAL TABLE \"x y\" USING \"ASK\"('q')"));
  EXPECT_FALSE(IsAnswerTable("CREATE VIRTUAL TABLE \"using ask\" USING fts5(a)"));
  EXPECT_FALSE(IsAnswerTable("CREATE VIRTUAL TABLE x USING asking('q')"));
}

TEST(SchemaModel, TheRenderedSchemaOfKeywordNamesRuns) {
  TableInfo select{"select", false, {{"key", "INTEGER", true}, {"values", "TEXT"}}, {}, {}};
  TableInfo order{"order",
                  false,
                  {{"id", "INTEGER", true},
                   {"group", "TEXT"},
                   {"where", "INT"},
                   {"first name", "TEXT"},
                   {"select_key", "INTEGER"}},
                  {{"select_key", "select", "key"}},
                  {{"1", "'a'", "2", "'Ann'", "1"}}};
  Schema schema;
  schema.tables = {select, order};
  const std::string rendered = RenderSchema(schema);
  EXPECT_NE(rendered.find("CREATE TABLE \"order\" (\n  id INTEGER PRIMARY KEY,\n  \"group\" "
                          "TEXT,\n  \"where\" INT,\n"
                          "  \"first name\" TEXT,\n  select_key INTEGER,\n"
                          "  FOREIGN KEY (select_key) REFERENCES \"select\"(\"key\")\n);"),
            std::string::npos)
      << rendered;
  EXPECT_NE(
      rendered.find("1 sample rows: id | \"group\" | \"where\" | \"first name\" | select_key"),
      std::string::npos)
      << rendered;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, rendered.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "") << "\n"
      << rendered;
  sqlite3_free(err);
  const std::string copied = "INSERT INTO " + PromptIdentifier("order") +
                             " VALUES (1, 'a', 2, 'Ann', 1);"
                             "SELECT " +
                             PromptIdentifier("group") + ", " + PromptIdentifier("first name") +
                             " FROM " + PromptIdentifier("order") + " WHERE " +
                             PromptIdentifier("where") + " = 2";
  EXPECT_EQ(sqlite3_exec(db, copied.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "") << copied;
  sqlite3_free(err);
  sqlite3_close(db);
  // A value hint names the column the same way.
  const std::string prompt =
      QuestionPrompt("Ann's group?", {{"order", "first name", "Ann", ""}}, {}, {}, {});
  EXPECT_NE(prompt.find("- \"order\".\"first name\" = 'Ann'"), std::string::npos) << prompt;
}

}  // namespace
}  // namespace querypilot
