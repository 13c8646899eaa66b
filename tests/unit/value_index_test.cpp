// The value index and schema linking over real in-memory databases.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include "agent/knowledge/linking.h"
#include "agent/knowledge/value_index.h"

namespace querypilot {
namespace {

class ValueIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_,
                           "CREATE TABLE colour(id INTEGER PRIMARY KEY, colour TEXT);"
                           "INSERT INTO colour VALUES (1, 'No Colour'), (2, 'Blue'), (3, 'Gold');"
                           "CREATE TABLE race(id INTEGER PRIMARY KEY, race TEXT);"
                           "INSERT INTO race VALUES (1, 'Alien'), (2, 'Human');"
                           "CREATE TABLE hero(id INTEGER PRIMARY KEY, name TEXT, note TEXT, "
                           "  race_id INTEGER REFERENCES race(id), eye_colour_id INTEGER REFERENCES colour(id));"
                           "INSERT INTO hero VALUES (1, '3-D Man', 'x', 2, 2), (2, 'Mr. Incredible', "
                           "  'a long note that is far too long to be the name of anything at all, surely', 2, 3),"
                           "  (3, 'Copycat', '1234', 1, 1);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    schema_ = IntrospectSchema(db_, 0).value();
  }
  void TearDown() override { sqlite3_close(db_); }

  std::vector<std::string> Hints(const ValueIndex& index, const char* question) {
    std::vector<std::string> out;
    for (const ValueHint& h : index.Lookup(question)) out.push_back(h.table + "." + h.column + "=" + h.value);
    return out;
  }

  sqlite3* db_ = nullptr;
  Schema schema_;
};

TEST_F(ValueIndexTest, MatchesTheQuestionsPhrases) {
  ValueIndex index = ValueIndex::Build(db_, schema_);
  EXPECT_TRUE(index.complete());
  struct Case {
    const char* question;
    std::vector<std::string> hints;
  } cases[] = {
      {"How many heroes have blue eyes?", {"colour.colour=Blue"}},
      {"What powers does 3-D Man have?", {"hero.name=3-D Man"}},
      {"Is mr. incredible human?", {"hero.name=Mr. Incredible", "race.race=Human"}},
      {"What is Copycat's race?", {"hero.name=Copycat"}},
      {"How many aliens are gold-eyed?", {"race.race=Alien", "colour.colour=Gold"}},
      {"Which heroes have no colour?", {"colour.colour=No Colour"}},   // the phrase, not 'no' alone
      {"What is the name of hero 1234?", {}},                          // numbers and stop words
      {"", {}},
  };
  for (const auto& c : cases) EXPECT_EQ(Hints(index, c.question), c.hints) << c.question;
}

TEST_F(ValueIndexTest, LimitsStopTheBuild) {
  ValueIndexLimits limits;
  limits.max_values = 3;
  ValueIndex small = ValueIndex::Build(db_, schema_, limits);
  EXPECT_FALSE(small.complete());
  EXPECT_LE(small.size(), 3u);
  limits = ValueIndexLimits();
  limits.budget_ms = 0;
  EXPECT_EQ(ValueIndex::Build(db_, schema_, limits).size(), 0u);
}

TEST_F(ValueIndexTest, CacheRebuildsWhenTheDataChanges) {
  ValueIndexCache cache;
  auto first = cache.Get(db_, schema_);
  EXPECT_EQ(cache.Get(db_, schema_), first);
  EXPECT_EQ(cache.builds(), 1);
  ASSERT_EQ(sqlite3_exec(db_, "INSERT INTO race VALUES (3, 'Mutant')", nullptr, nullptr, nullptr), SQLITE_OK);
  auto second = cache.Get(db_, schema_);
  EXPECT_EQ(cache.builds(), 2);
  EXPECT_EQ(Hints(*second, "Is he a mutant?"), (std::vector<std::string>{"race.race=Mutant"}));
}

TEST_F(ValueIndexTest, LinkingKeepsSmallSchemasWhole) {
  std::string full = RenderSchema(schema_);
  LinkedSchema whole = LinkSchema(schema_, full, "blue eyes?", {}, 100000);
  EXPECT_FALSE(whole.pruned);
  EXPECT_EQ(whole.rendered, full);
  EXPECT_EQ(whole.kept.size(), schema_.tables.size());
  EXPECT_FALSE(LinkSchema(schema_, full, "q", {}, 0).pruned);  // 0 = no budget
}

TEST_F(ValueIndexTest, LinkingPrunesToTheQuestionsTablesAndTheirPaths) {
  // Many unrelated tables around the three that matter.
  std::string ddl;
  for (int i = 0; i < 40; ++i) {
    ddl += "CREATE TABLE invoice_line_" + std::to_string(i) +
           "(id INTEGER PRIMARY KEY, amount REAL, booked_at TEXT, account_code TEXT);";
  }
  ASSERT_EQ(sqlite3_exec(db_, ddl.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  Schema schema = IntrospectSchema(db_, 0).value();
  ValueIndex index = ValueIndex::Build(db_, schema);
  const char* question = "Which race has the most heroes with blue eyes?";
  std::vector<ValueHint> hints = index.Lookup(question);
  std::string full = RenderSchema(schema);
  LinkedSchema linked = LinkSchema(schema, full, question, hints, EstimateTokens(full) / 4);
  EXPECT_TRUE(linked.pruned);
  std::vector<std::string> kept;
  for (const TableInfo* t : linked.kept) kept.push_back(t->name);
  EXPECT_EQ(kept, (std::vector<std::string>{"colour", "hero", "race"}));  // schema order
  EXPECT_LT(linked.tokens, linked.full_tokens / 4);
  EXPECT_NE(linked.rendered.find("40 more tables are not shown"), std::string::npos);
  // A retry after "no such column: amount" may widen to the tables that have it.
  auto widen = TablesToWiden(schema, linked.kept, "amount", 2);
  ASSERT_EQ(widen.size(), 2u);
  EXPECT_EQ(widen[0]->name.rfind("invoice_line_", 0), 0u);
  EXPECT_TRUE(TablesToWiden(schema, linked.kept, "", 2).empty());
}

}  // namespace
}  // namespace querypilot
