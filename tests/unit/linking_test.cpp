// Linking ranks: tables and value hints ordered by what ties them to the
// question, never by name; what a budget leaves out is the least related.
#include "agent/knowledge/linking.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "agent/knowledge/value_index.h"

namespace querypilot {
namespace {

// A business schema of `count` tables that share their column names (name,
// status, amount, ...) and the status 'paid'; invoices is one of them, far
// down the alphabet.
std::string SharedColumnsSchema(int count) {
  static const char* kNames[] = {
      "accounts",  "agents",        "assets",    "audits",    "budgets",    "campaigns",
      "claims",    "clients",       "contracts", "couriers",  "deliveries", "deposits",
      "expenses",  "fines",         "grants",    "invoices",  "leases",     "loans",
      "orders",    "payments",      "permits",   "policies",  "refunds",    "rentals",
      "shipments", "subscriptions", "tickets",   "transfers", "vouchers",   "warranties"};
  std::string sql =
      "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, status TEXT);"
      "INSERT INTO customers VALUES (1, 'Ann', 'paid'), (2, 'Bo', 'open');";
  for (int i = 0; i < count; ++i) {
    const std::string name = i < 30 ? kNames[i] : fmt::format("ledger_{:02}", i);
    sql += fmt::format(
        "CREATE TABLE {0}(id INTEGER PRIMARY KEY, name TEXT, status TEXT, amount REAL, "
        "created_at TEXT, notes TEXT, customer_id INTEGER REFERENCES customers(id));"
        "INSERT INTO {0} VALUES (1, '{0} one', 'paid', 10.5, '2024-01-01', NULL, 1), "
        "(2, '{0} two', 'open', 20.5, '2024-02-01', NULL, 2);",
        name);
  }
  return sql;
}

class LinkingTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK); }
  void TearDown() override { sqlite3_close(db_); }
  void Exec(const std::string& sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  }
  Schema Read() {
    Schema schema = IntrospectSchema(db_, 3).value();
    RenderInto(&schema);
    return schema;
  }
  static std::vector<std::string> Names(const std::vector<const TableInfo*>& tables) {
    std::vector<std::string> out;
    for (const TableInfo* t : tables) {
      out.push_back(t->database == "main" ? t->name : t->database + "." + t->name);
    }
    return out;
  }
  static bool Has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  }
  // The whole value index of the fifty-one tables: an ask reads a memory
  // database for slice_ms (500 ms by default), which a busy machine may spend
  // before the last table; these tests are about the ranking, not the slice.
  static ValueIndexOptions Whole() {
    ValueIndexOptions options;
    options.slice_ms = 600000;
    return options;
  }
  sqlite3* db_ = nullptr;
};

// A value stored in fifty columns is hinted for the table the question names
// first; the cap of three columns per value cuts the others.
TEST_F(LinkingTest, AValueInManyColumnsIsHintedForTheQuestionsTableFirst) {
  Exec(SharedColumnsSchema(50));
  const Schema schema = Read();
  ValueIndexCache cache;
  auto lookup = cache.Get(db_, Whole());
  struct Case {
    const char* question;
    const char* first;  // table.column of the first hint for 'paid'
  } cases[] = {
      {"What is the total amount of paid invoices?", "invoices.status"},
      {"How many invoice is paid?", "invoices.status"},  // the singular
      {"List the paid warranties.", "warranties.status"},
      {"Which customers have paid?", "customers.status"},
  };
  for (const auto& c : cases) {
    std::vector<ValueHint> hints = lookup->Lookup(c.question, 12, RankHintsFor(schema, c.question));
    ASSERT_FALSE(hints.empty()) << c.question;
    EXPECT_EQ(hints[0].table + "." + hints[0].column, c.first) << c.question;
    EXPECT_EQ(hints.size(), 3u) << c.question;  // the cap per phrase
  }
  // Without a ranking the store's order decides, and the question's table is
  // not among the three.
  std::vector<ValueHint> unranked = lookup->Lookup("What is the total amount of paid invoices?");
  EXPECT_TRUE(std::none_of(unranked.begin(), unranked.end(),
                           [](const ValueHint& h) { return h.table == "invoices"; }));
}

// A schema over the budget keeps the question's tables and what they join,
// most related first; the tables nothing ties to the question are left out,
// whatever their names.
TEST_F(LinkingTest, AWideSchemaIsCutByRelevanceNotByName) {
  Exec(SharedColumnsSchema(50));
  const Schema schema = Read();
  ValueIndexCache cache;
  const std::string question = "What is the total amount of paid invoices?";
  std::vector<ValueHint> hints =
      cache.Get(db_, Whole())->Lookup(question, 12, RankHintsFor(schema, question));
  const size_t full = EstimateTokens(schema.rendered);
  LinkedSchema linked = LinkSchema(schema, schema.rendered, question, hints, 2000);
  ASSERT_TRUE(linked.pruned);
  const std::vector<std::string> kept = Names(linked.kept);
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept[0], "invoices");
  EXPECT_TRUE(Has(kept, "customers"));  // what invoices refers to
  EXPECT_FALSE(Has(kept, "accounts"));  // first by name, tied by nothing
  EXPECT_LE(linked.tokens * 2, full);
  EXPECT_EQ(linked.rendered.rfind("CREATE TABLE invoices", 0), 0u) << linked.rendered;
  EXPECT_NE(linked.rendered.find("more tables are not shown"), std::string::npos);
}

// Word forms, spellings and the last word of a name: the table the question
// means ranks first.
TEST(Linking, TablesRankByTheFormsOfTheQuestionsWords) {
  auto table = [](const std::string& name, std::vector<std::string> columns) {
    TableInfo t;
    t.name = name;
    t.columns.push_back({"id", "INTEGER", true});
    for (const std::string& c : columns) t.columns.push_back({c, "TEXT"});
    return t;
  };
  Schema schema;
  schema.tables = {
      table("hotel_guests", {"name", "hotel_id"}),
      table("travel_hotels", {"name", "city"}),
      table("manufacturer", {"name", "founded"}),
      table("product_category", {"label"}),
      table("teacher", {"name", "subject"}),
      table("paint", {"colour", "brand"}),
      table("witness", {"name", "statement"}),
      table("customs_declarations", {"reference", "port"}),
      table("customers", {"name", "email"}),
  };
  struct Case {
    const char* question;
    const char* best;
  } cases[] = {
      {"How many hotels are there in each city?", "travel_hotels"},  // what the name lists
      {"Which manufacturers were founded before 1950?", "manufacturer"},
      {"List all product categories.", "product_category"},
      {"Who is teaching the most subjects?", "teacher"},  // one stem
      {"Which paints have the color red?", "paint"},      // one spelling
      {"How many witnesses gave a statement?", "witness"},
      {"What is the email of each customer?", "customers"},
  };
  for (const auto& c : cases) {
    auto ranked = RankTables(schema, c.question, {});
    EXPECT_EQ(ranked[0].table->name, c.best) << c.question;
    EXPECT_GT(ranked[0].score, ranked[1].score) << c.question;
  }
}

// A schema a shared_ptr holds is linked by what linking kept of it, found by
// its identity; another schema made later in its place (the first one gone,
// its memory used again) is read afresh, and links as a copy of it links.
TEST(Linking, ASchemaHeldSharedIsKnownByItselfAndNotByItsPlace) {
  const std::vector<std::string> words = {"orchard", "glacier", "lantern", "meadow", "harbour"};
  for (int round = 0; round < 40; ++round) {
    Schema made;
    for (size_t i = 0; i < words.size(); ++i) {
      TableInfo t;
      // Each round gives each word to another table.
      t.name = words[(i + static_cast<size_t>(round)) % words.size()] + "_" + std::to_string(i);
      t.columns.push_back({"id", "INTEGER", true});
      t.columns.push_back({"label", "TEXT"});
      made.tables.push_back(std::move(t));
    }
    RenderInto(&made);
    const Schema copy = made;
    auto shared = std::make_shared<const Schema>(std::move(made));
    for (int ask = 0; ask < 2; ++ask) {  // the second ask finds it by itself
      const LinkedSchema linked =
          LinkSchema(*shared, shared->rendered, "Show every glacier", {}, 30);
      const LinkedSchema want = LinkSchema(copy, copy.rendered, "Show every glacier", {}, 30);
      ASSERT_FALSE(linked.kept.empty());
      EXPECT_EQ(linked.rendered, want.rendered) << round;
      EXPECT_EQ(linked.kept[0]->name.substr(0, 7), "glacier") << round;
    }
  }
}

// With other databases attached, the database the question points at is
// shown whole, its tables that the question names by other words ("seats"
// for a stadium's capacity, "vehicle manufacturers" for car_makers) with it;
// the other databases' tables are left out.
TEST_F(LinkingTest, TheDatabaseTheQuestionPointsAtIsShownWhole) {
  Exec(
      "CREATE TABLE stadium(stadium_id INTEGER PRIMARY KEY, location TEXT, name TEXT, capacity "
      "INTEGER);"
      "CREATE TABLE concert(concert_id INTEGER PRIMARY KEY, concert_name TEXT, theme TEXT, "
      "stadium_id INTEGER, year TEXT);"
      "CREATE TABLE singer(singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);"
      "CREATE TABLE singer_in_concert(concert_id INTEGER, singer_id INTEGER);"
      "ATTACH ':memory:' AS cars;"
      "CREATE TABLE cars.car_makers(id INTEGER PRIMARY KEY, maker TEXT, fullname TEXT, country "
      "TEXT);"
      "CREATE TABLE cars.model_list(model_id INTEGER PRIMARY KEY, maker INTEGER, model TEXT);"
      "CREATE TABLE cars.cars_data(id INTEGER PRIMARY KEY, mpg TEXT, horsepower TEXT, year "
      "INTEGER);"
      "ATTACH ':memory:' AS school;"
      "CREATE TABLE school.courses(course_id INTEGER PRIMARY KEY, course_name TEXT, credits "
      "INTEGER);"
      "CREATE TABLE school.student_course(student_id INTEGER, course_id INTEGER, grade TEXT);"
      "CREATE TABLE school.students(student_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);");
  const Schema schema = Read();
  const size_t full = EstimateTokens(schema.rendered);
  struct Case {
    const char* question;
    std::vector<std::string> kept, left_out;
  } cases[] = {
      {"How many seats does the venue of each concert have?",
       {"stadium", "concert", "singer", "singer_in_concert"},
       {"cars.car_makers", "school.courses"}},
      {"Which vehicle manufacturers make more than three models?",
       {"cars.car_makers", "cars.model_list"},
       {"stadium", "school.students"}},
      {"Which students take the most courses?",
       {"school.students", "school.student_course", "school.courses"},
       {"singer", "cars.cars_data"}},
  };
  for (const auto& c : cases) {
    LinkedSchema linked = LinkSchema(schema, schema.rendered, c.question, {}, full * 3 / 5);
    ASSERT_TRUE(linked.pruned) << c.question;
    const std::vector<std::string> kept = Names(linked.kept);
    for (const std::string& t : c.kept) EXPECT_TRUE(Has(kept, t)) << c.question << ": " << t;
    for (const std::string& t : c.left_out) EXPECT_FALSE(Has(kept, t)) << c.question << ": " << t;
  }
}

}  // namespace
}  // namespace querypilot
