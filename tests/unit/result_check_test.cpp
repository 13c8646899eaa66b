// Result checks on canned results: each finding, its severity, and the
// results that must not be flagged.
#include "agent/quality/result_check.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

TEST(QuestionShape, ReadsTheWording) {
  struct Case {
    const char* question;
    bool superlative, per_group;
    int top_n;
    bool single, how_many, percentage;
  } cases[] = {
      {"Who is the oldest customer?", true, false, 0, true, false, false},
      {"Who is the dumbest superhero?", true, false, 0, true, false, false},
      {"Which product sold the most?", true, false, 0, true, false, false},
      {"Which customers bought at most 3 items?", false, false, 0, false, false, false},
      {"List the top 5 products by revenue", false, false, 5, false, false, false},
      {"Which five customers spent the most last year?", true, false, 5, false, false, false},
      {"What is the highest price in each category?", true, true, 0, false, false, false},
      {"How many orders came from each country?", false, true, 0, false, true, false},
      {"What percentage of heroes are female?", false, false, 0, false, false, true},
      {"Which heroes showed interest in the forest?", false, false, 0, false, false, false},
      {"Name the tallest hero.\nHint: the oldest refers to MAX(age)", true, false, 0, true, false,
       false},
      {"Show orders.\nHint: the oldest refers to MAX(age)", false, false, 0, false, false, false},
      // An ordering of every row is not one top item.
      {"Names of conductors from youngest to oldest", true, false, 0, false, false, false},
      {"List the countries sorted from the most populous to the least populous", true, false, 0,
       false, false, false},
      {"List the orchestras in order of the year they were founded, oldest first", true, false, 0,
       false, false, false},
      {"Show the heroes ranked by height, tallest first", true, false, 0, false, false, false},
      {"Which customer placed the largest order?", true, false, 0, true, false, false},
      {"Who is the highest ranked player?", true, false, 0, true, false, false},
      {"List products by price in descending order", false, false, 0, false, false, false},
  };
  for (const auto& c : cases) {
    QuestionShape s = ReadQuestionShape(c.question);
    EXPECT_EQ(s.superlative, c.superlative) << c.question;
    EXPECT_EQ(s.per_group, c.per_group) << c.question;
    EXPECT_EQ(s.top_n, c.top_n) << c.question;
    EXPECT_EQ(s.single(), c.single) << c.question;
    EXPECT_EQ(s.how_many, c.how_many) << c.question;
    EXPECT_EQ(s.percentage, c.percentage) << c.question;
  }
}

Schema HeroSchema() {
  Schema s;
  TableInfo hero{"superhero",
                 false,
                 {{"id", "INTEGER", true, true}, {"name", "TEXT"}, {"race_id", "INTEGER"}},
                 {{"race_id", "race", "id"}},
                 {}};
  TableInfo race{"race", false, {{"id", "INTEGER", true, true}, {"race", "TEXT"}}, {}, {}};
  TableInfo power{
      "superpower", false, {{"id", "INTEGER", true, true}, {"power_name", "TEXT"}}, {}, {}};
  TableInfo hero_power{"hero_power",
                       false,
                       {{"hero_id", "INTEGER"}, {"power_id", "INTEGER"}},
                       {{"hero_id", "superhero", "id"}, {"power_id", "superpower", "id"}},
                       {}};
  // A key of two columns, and a table that shares its parent's key (1:1).
  TableInfo visit{"visit",
                  false,
                  {{"hero_id", "INTEGER", true, true}, {"day", "TEXT", true, true}},
                  {{"hero_id", "superhero", "id"}},
                  {}};
  TableInfo profile{"profile",
                    false,
                    {{"hero_id", "INTEGER", true, true}, {"bio", "TEXT"}},
                    {{"hero_id", "superhero", "id"}},
                    {}};
  TableInfo stats{"stats",
                  false,
                  {{"hero_id", "INTEGER", true, true}, {"score", "INTEGER"}},
                  {{"hero_id", "superhero", "id"}},
                  {}};
  s.tables = {hero, race, power, hero_power, visit, profile, stats};
  return s;
}

struct Canned {
  std::vector<std::string> columns;
  std::deque<Row> rows;
  bool complete = true;
  std::vector<std::pair<std::string, std::string>> origins;
};

std::vector<std::string> Check(const char* question, const char* sql, const Canned& c,
                               std::vector<std::string>* severities = nullptr) {
  static const Schema schema = HeroSchema();
  ResultView v;
  v.columns = &c.columns;
  v.rows = &c.rows;
  v.complete = c.complete;
  if (!c.origins.empty()) v.origins = &c.origins;
  v.schema = &schema;
  std::vector<std::string> kinds;
  for (const auto& i : CheckResult(question, sql, v)) {
    kinds.push_back(std::string(i.kind()));
    if (severities) severities->push_back(std::string(i.severity()));
    EXPECT_FALSE(i.message.empty());
  }
  return kinds;
}

using Kinds = std::vector<std::string>;

TEST(CheckResult, Findings) {
  const Value i0 = int64_t{0}, i1 = int64_t{1}, i2 = int64_t{2}, null = std::monostate{};
  struct Case {
    const char* name;
    const char* question;
    const char* sql;
    Canned result;
    Kinds kinds;
    Kinds severities;
  } cases[] = {
      {"clean",
       "How many heroes?",
       "SELECT COUNT(*) FROM superhero",
       {{"n"}, {{int64_t{750}}}},
       {},
       {}},
      {"empty",
       "List heroes named Bob",
       "SELECT name FROM superhero WHERE name = 'Bob'",
       {{"name"}, {}},
       {"empty_result"},
       {"note"}},
      // An empty or zero result is an answer when its filters are sound:
      // grounding decides (a compared value that does not occur is critical).
      {"empty top item",
       "Who is the tallest hero?",
       "SELECT name FROM superhero WHERE 0",
       {{"name"}, {}},
       {"empty_result"},
       {"note"}},
      {"zero count",
       "How many heroes are elves?",
       "SELECT COUNT(*) FROM superhero WHERE race_id = 99",
       {{"n"}, {{i0}}},
       {"zero_count"},
       {"note"}},
      {"an ordering of all rows",
       "Names of heroes from youngest to oldest",
       "SELECT name FROM superhero ORDER BY id",
       {{"name"}, {{std::string("a")}, {std::string("b")}, {std::string("c")}}},
       {},
       {}},
      {"oldest first",
       "List the heroes, oldest first",
       "SELECT name FROM superhero ORDER BY id",
       {{"name"}, {{std::string("a")}, {std::string("b")}}},
       {},
       {}},
      {"a column the question names",
       "What are the race ids of heroes named Bob?",
       "SELECT race_id FROM superhero WHERE name = 'Bob'",
       {{"race_id"}, {{i2}}, true, {{"superhero", "race_id"}}},
       {},
       {}},
      {"zero without count",
       "What is the lowest score?",
       "SELECT MIN(id) - MIN(id) FROM superhero",
       {{"x"}, {{i0}}},
       {},
       {}},
      // Findings that read the question's words, or that the data may
      // explain, are notes: no model call (grounding decides on NULLs).
      {"all null aggregate",
       "Average height of elves?",
       "SELECT AVG(id) FROM superhero WHERE 0",
       {{"avg"}, {{null}}},
       {"all_null"},
       {"note"}},
      {"a column the data leaves empty",
       "Show every hero's name",
       "SELECT name FROM superhero",
       {{"name"}, {{null}}},
       {"all_null"},
       {"note"}},
      {"too many for one",
       "Who is the oldest hero?",
       "SELECT name FROM superhero",
       {{"name"}, {{std::string("a")}, {std::string("b")}, {std::string("c")}}},
       {"too_many_rows"},
       {"note"}},
      {"cut result still counts",
       "Who is the oldest hero?",
       "SELECT name FROM superhero",
       {{"name"}, {{std::string("a")}, {std::string("b")}}, false},
       {"too_many_rows"},
       {"note"}},
      {"top n fits",
       "List the top 2 heroes",
       "SELECT name FROM superhero LIMIT 2",
       {{"name"}, {{std::string("a")}, {std::string("b")}}},
       {},
       {}},
      {"top n exceeded",
       "List the top 2 heroes",
       "SELECT name FROM superhero",
       {{"name"}, {{std::string("a")}, {std::string("b")}, {std::string("c")}}},
       {"too_many_rows"},
       {"note"}},
      {"a few ties",
       "Who is the tallest hero?",
       "SELECT name FROM superhero WHERE id = (SELECT MAX(id) FROM superhero)",
       {{"name"}, {{std::string("a")}, {std::string("b")}}},
       {"ties"},
       {"note"}},
      {"percentage of 100",
       "What percentage of heroes are elves?",
       "SELECT 100.0 * COUNT(*) / COUNT(*) FROM superhero",
       {{"p"}, {{100.0}}},
       {"percentage_bounds"},
       {"critical"}},
      {"percentage above 100",
       "What percent of heroes are elves?",
       "SELECT 250.0",
       {{"p"}, {{250.0}}},
       {"percentage_bounds"},
       {"critical"}},
      {"plain percentage",
       "What percentage of heroes are elves?",
       "SELECT 12.5",
       {{"p"}, {{12.5}}},
       {},
       {}},
      {"percentage beside a count",
       "What percentage of heroes are elves, and how many?",
       "SELECT 0.0, 118",
       {{"p", "n"}, {{0.0, int64_t{118}}}},
       {},
       {}},
      {"join on two primary keys",
       "Powers of Bob?",
       "SELECT p.power_name FROM superhero h JOIN superpower p ON h.id = p.id WHERE h.name = 'Bob'",
       {{"power_name"}, {{std::string("Flight")}}},
       {"join_on_keys"},
       {"critical"}},
      {"join on one column of a composite key",
       "Days Bob visited?",
       "SELECT v.day FROM visit v JOIN superhero h ON v.hero_id = h.id WHERE h.name = 'Bob'",
       {{"day"}, {{std::string("Monday")}}},
       {},
       {}},
      {"two keys that both hold their parent's ids",
       "Bob's bio and score?",
       "SELECT p.bio, s.score FROM profile p JOIN stats s ON p.hero_id = s.hero_id",
       {{"bio", "score"}, {{std::string("x"), i1}}},
       {},
       {}},
      {"join along a foreign key",
       "Race of Bob?",
       "SELECT r.race FROM superhero h JOIN race r ON h.race_id = r.id WHERE h.name = 'Bob'",
       {{"race"}, {{std::string("Human")}}},
       {},
       {}},
      {"foreign key ids",
       "What is Bob's race?",
       "SELECT race_id FROM superhero WHERE name = 'Bob'",
       {{"race_id"}, {{i2}}, true, {{"superhero", "race_id"}}},
       {"foreign_key_ids"},
       {"critical"}},
      {"ids when what they stand for is not named",
       "Tell me about Bob's kind",
       "SELECT race_id FROM superhero WHERE name = 'Bob'",
       {{"race_id"}, {{i2}}, true, {{"superhero", "race_id"}}},
       {"foreign_key_ids"},
       {"note"}},
      {"ids with their name read too",
       "What is Bob's race?",
       "SELECT r.race, h.race_id FROM superhero h JOIN race r ON h.race_id = r.id WHERE h.name = "
       "'Bob'",
       {{"race", "race_id"},
        {{std::string("Human"), i2}},
        true,
        {{"race", "race"}, {"superhero", "race_id"}}},
       {"foreign_key_ids"},
       {"note"}},
      {"every column asked for",
       "All the information about Bob's race",
       "SELECT * FROM superhero WHERE name = 'Bob'",
       {{"id", "name", "race_id"},
        {{i1, std::string("Bob"), i2}},
        true,
        {{"superhero", "id"}, {"superhero", "name"}, {"superhero", "race_id"}}},
       {},
       {}},
      {"ids asked for",
       "What is the race id of Bob?",
       "SELECT race_id FROM superhero WHERE name = 'Bob'",
       {{"race_id"}, {{i2}}, true, {{"superhero", "race_id"}}},
       {},
       {}},
      {"duplicates",
       "List hero names",
       "SELECT h.name FROM superhero h JOIN hero_power hp ON h.id = hp.hero_id",
       {{"name"}, {{std::string("a")}, {std::string("a")}, {std::string("b")}}},
       {"duplicate_rows"},
       {"note"}},
      {"distinct duplicates are fine",
       "List hero ids",
       "SELECT DISTINCT id FROM superhero",
       {{"id"}, {{i1}, {i2}}},
       {},
       {}},
      // A hint that says which column a phrase means is the user's reading.
      {"hinted column unread",
       "Name five heroes\nHint: name of heroes refers to superhero.name",
       "SELECT race_id FROM superhero LIMIT 5",
       {{"race_id"}, {{i1}}},
       {"hint_column_unused"},
       {"critical"}},
      {"hinted column read",
       "Name five heroes\nHint: name of heroes refers to superhero.name; five means LIMIT 5.",
       "SELECT \"name\" FROM superhero LIMIT 5",
       {{"name"}, {{std::string("a")}}},
       {},
       {}},
      {"hinted column among others",
       "Powers of heroes?\nHint: blue refers to race = 'Blue'\nHint: powers means the power_name",
       "SELECT h.name FROM superhero h",
       {{"name"}, {{std::string("a")}}},
       {"hint_column_unused"},
       {"critical"}},
      {"a hint with a comparison says more than a column",
       "Blue heroes?\nHint: blue refers to race = 'Blue'",
       "SELECT name FROM superhero WHERE race_id = 3",
       {{"name"}, {{std::string("a")}}},
       {},
       {}},
      {"a hinted word that is no column",
       "Heroes?\nHint: heroes refers to everybody",
       "SELECT name FROM superhero",
       {{"name"}, {{std::string("a")}}},
       {},
       {}},
      {"a star reads every column",
       "Heroes?\nHint: heroes refers to name",
       "SELECT * FROM superhero",
       {{"id"}, {{i1}}},
       {},
       {}},
      {"the question's own words are no hint",
       "Which name refers to race?",
       "SELECT id FROM superhero",
       {{"id"}, {{i1}}},
       {},
       {}},
  };
  for (const auto& c : cases) {
    Kinds severities;
    EXPECT_EQ(Check(c.question, c.sql, c.result, &severities), c.kinds) << c.name;
    EXPECT_EQ(severities, c.severities) << c.name;
  }
}

TEST(CheckResult, ACorrectionSaysWhatWasSeenNotAReading) {
  Canned twelve{{"name"}, {}};
  for (int i = 0; i < 12; ++i) twelve.rows.push_back({std::string(1, static_cast<char>('a' + i))});
  static const Schema schema = HeroSchema();
  ResultView v;
  v.columns = &twelve.columns;
  v.rows = &twelve.rows;
  v.complete = true;
  v.schema = &schema;
  auto issues = CheckResult("Who is the oldest hero?", "SELECT name FROM superhero", v);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "the result has 12 rows. If the question asks for one top item, return only it; if it "
            "asks for all of them in order, answer with the same query");
}

TEST(CheckResult, MissingValueSuspicion) {
  EXPECT_TRUE(ResultSuggestsMissingValue({{Finding::kEmptyResult, "m"}}));
  EXPECT_TRUE(ResultSuggestsMissingValue({{Finding::kZeroCount, "m"}}));
  EXPECT_TRUE(ResultSuggestsMissingValue({{Finding::kAllNull, "m"}}));
  EXPECT_FALSE(ResultSuggestsMissingValue({{Finding::kTooManyRows, "m"}}));
  EXPECT_FALSE(ResultSuggestsMissingValue({}));
}

}  // namespace
}  // namespace querypilot
