// Value grounding against a real in-memory database.
#include "agent/quality/grounding.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace querypilot {
namespace {

class GroundingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db_,
                     "CREATE TABLE colour(id INTEGER PRIMARY KEY, colour TEXT);"
                     "INSERT INTO colour VALUES (1, 'No Colour'), (2, 'Blue'), (3, 'Green');"
                     "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, country TEXT, "
                     "  nickname TEXT, eye_colour_id INTEGER REFERENCES colour(id));"
                     "INSERT INTO customers VALUES (1, 'Ada Lovelace', 'USA', 'ada', 2),"
                     "  (2, 'Grace Hopper', 'United States', 'amazing grace', 1),"
                     "  (3, 'Linus', ' Canada ', 'penguin', 3), (4, 'Bob', 'Canada', 'bobby', 1);",
                     nullptr, nullptr, nullptr),
        SQLITE_OK);
    auto schema = IntrospectSchema(db_, 0);
    ASSERT_TRUE(schema.ok());
    schema_ = std::move(schema).value();
  }
  void TearDown() override { sqlite3_close(db_); }

  std::vector<ReflectionIssue> Ground(const char* sql, GroundingLimits limits = {}) {
    return GroundLiterals(SqlTarget::Own(db_), schema_, sql, limits);
  }

  sqlite3* db_ = nullptr;
  Schema schema_;
};

TEST_F(GroundingTest, PresentLiteralsAreNotReported) {
  EXPECT_TRUE(Ground("SELECT * FROM customers WHERE country = 'USA'").empty());
  EXPECT_TRUE(Ground("SELECT * FROM customers WHERE name LIKE 'Ada%'").empty());
  EXPECT_TRUE(Ground("SELECT * FROM customers WHERE id = 3").empty());  // not a text literal
}

TEST_F(GroundingTest, NearValues) {
  struct Case {
    const char* sql;
    const char* literal;
    std::vector<std::string> values;
  } cases[] = {
      {"SELECT * FROM customers WHERE country = 'usa'", "usa", {"USA"}},  // case
      {"SELECT * FROM customers c WHERE c.country = 'canada'",
       "canada",
       {" Canada ", "Canada"}},  // trim
      {"SELECT * FROM customers WHERE country = 'United'",
       "United",
       {"United States"}},                                                        // contains
      {"SELECT * FROM customers WHERE country = 'Canda'", "Canda", {"Canada"}},   // one edit
      {"SELECT * FROM customers WHERE name LIKE 'Linux%'", "Linux%", {"Linus"}},  // a pattern
  };
  for (const auto& c : cases) {
    auto issues = Ground(c.sql);
    ASSERT_EQ(issues.size(), 1u) << c.sql;
    EXPECT_EQ(issues[0].kind(), "value_not_found") << c.sql;
    EXPECT_EQ(issues[0].severity(), "critical");
    EXPECT_EQ(issues[0].literal, c.literal);
    std::vector<std::string> got = issues[0].values;
    std::sort(got.begin(), got.end());
    std::vector<std::string> want = c.values;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << c.sql;
    EXPECT_NE(issues[0].message.find("does not occur in customers."), std::string::npos);
  }
}

TEST_F(GroundingTest, ValueInAnotherColumn) {
  auto issues = Ground("SELECT * FROM customers WHERE name = 'penguin'");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind(), "value_elsewhere");
  EXPECT_EQ(issues[0].values, (std::vector<std::string>{"customers.nickname"}));
  issues = Ground("SELECT * FROM customers WHERE nickname = 'blue'");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind(), "value_elsewhere");  // another table of the schema
  EXPECT_EQ(issues[0].values, (std::vector<std::string>{"colour.colour"}));
}

TEST_F(GroundingTest, ValueNowhere) {
  auto issues = Ground("SELECT * FROM customers WHERE country = 'Atlantis'");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind(), "value_missing");
  // Nothing near it anywhere: the empty answer may be right. A note only.
  EXPECT_EQ(issues[0].severity(), "note");
}

TEST_F(GroundingTest, IsNullOnAColumnWithoutNulls) {
  auto issues = Ground("SELECT name FROM customers WHERE eye_colour_id IS NULL");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind(), "null_absent");
  EXPECT_EQ(issues[0].values, (std::vector<std::string>{"colour.colour = 'No Colour'"}));
  EXPECT_NE(issues[0].message.find("never NULL"), std::string::npos);
  ASSERT_EQ(sqlite3_exec(db_, "INSERT INTO customers VALUES (5, 'Eve', NULL, NULL, NULL)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  EXPECT_TRUE(Ground("SELECT name FROM customers WHERE eye_colour_id IS NULL").empty());
}

TEST_F(GroundingTest, SpentBudgetReportsNothing) {
  GroundingLimits limits;
  limits.budget_ms = 0;
  EXPECT_TRUE(Ground("SELECT * FROM customers WHERE country = 'usa'", limits).empty());
}

TEST_F(GroundingTest, TheDatabaseIsNotChanged) {
  sqlite3_int64 before = sqlite3_total_changes64(db_);
  Ground("SELECT * FROM customers WHERE country = 'usa' OR name = 'Bobby' OR nickname IS NULL");
  EXPECT_EQ(sqlite3_total_changes64(db_), before);
}

}  // namespace
}  // namespace querypilot
