// The value index and schema linking over real in-memory databases.
#include "agent/knowledge/value_index.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <thread>

#include "agent/knowledge/descriptions.h"
#include "agent/knowledge/linking.h"
#include "agent/knowledge/value_scan.h"
#include "agent/knowledge/value_store.h"
#include "agent/quality/grounding.h"

namespace querypilot {
namespace {

class ValueIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(
            db_,
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

  template <typename Index>
  std::vector<std::string> Hints(const Index& index, const char* question) {
    std::vector<std::string> out;
    for (const ValueHint& h : index.Lookup(question))
      out.push_back(h.table + "." + h.column + "=" + h.value);
    return out;
  }

  sqlite3* db_ = nullptr;
  Schema schema_;
};

TEST_F(ValueIndexTest, MatchesTheQuestionsPhrases) {
  ValueIndexCache cache;
  const std::shared_ptr<const ValueLookup> lookup = cache.Get(db_);
  const ValueLookup& index = *lookup;
  struct Case {
    const char* question;
    std::vector<std::string> hints;
  } cases[] = {
      {"How many heroes have blue eyes?", {"colour.colour=Blue"}},
      {"What powers does 3-D Man have?", {"hero.name=3-D Man"}},
      {"Is mr. incredible human?", {"hero.name=Mr. Incredible", "race.race=Human"}},
      {"What is Copycat's race?", {"hero.name=Copycat"}},
      {"How many aliens are gold-eyed?", {"race.race=Alien", "colour.colour=Gold"}},
      {"Which heroes have no colour?", {"colour.colour=No Colour"}},  // the phrase, not 'no' alone
      {"What is the name of hero 1234?", {}},                         // numbers and stop words
      {"", {}},
  };
  for (const auto& c : cases) EXPECT_EQ(Hints(index, c.question), c.hints) << c.question;
}

TEST_F(ValueIndexTest, CacheCatchesUpWhenTheDataChanges) {
  // A memory database: read during the ask, then only when it changes.
  ValueIndexCache cache;
  EXPECT_EQ(Hints(*cache.Get(db_), "Is he human?"), (std::vector<std::string>{"race.race=Human"}));
  cache.Get(db_);
  EXPECT_EQ(cache.builds(), 1);
  ASSERT_EQ(sqlite3_exec(db_, "INSERT INTO race VALUES (3, 'Mutant')", nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto second = cache.Get(db_);
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
  ValueIndexCache cache;
  const char* question = "Which race has the most heroes with blue eyes?";
  std::vector<ValueHint> hints = cache.Get(db_)->Lookup(question);
  std::string full = RenderSchema(schema);
  LinkedSchema linked = LinkSchema(schema, full, question, hints, EstimateTokens(full) / 4);
  EXPECT_TRUE(linked.pruned);
  std::vector<std::string> kept;
  for (const TableInfo* t : linked.kept) kept.push_back(t->name);
  // Most related first: the two tables the question names, then the one its
  // value ('blue') lives in.
  EXPECT_EQ(kept, (std::vector<std::string>{"hero", "race", "colour"}));
  EXPECT_LT(linked.tokens, linked.full_tokens / 4);
  EXPECT_NE(linked.rendered.find("40 more tables are not shown"), std::string::npos);
  // A retry after "no such column: amount" may widen to the tables that have it.
  auto widen = TablesToWiden(schema, linked.kept, "amount", 2);
  ASSERT_EQ(widen.size(), 2u);
  EXPECT_EQ(widen[0]->name.rfind("invoice_line_", 0), 0u);
  EXPECT_TRUE(TablesToWiden(schema, linked.kept, "", 2).empty());
}

// A table of `columns` measurement columns around an id key, a foreign key
// and a revenue column, with one sample row.
TableInfo WideTable(const std::string& name, int columns) {
  TableInfo t;
  t.name = name;
  t.columns.push_back({"id", "INTEGER", true});
  t.columns.push_back({"store_id", "INTEGER"});
  t.foreign_keys.push_back({"store_id", "store", ""});
  std::vector<std::string> row = {"1", "7"};
  for (int i = 0; i < columns; ++i) {
    t.columns.push_back({fmt::format("measurement_{:04}", i), "REAL"});
    row.push_back(fmt::format("{}.5", i));
    if (i == columns / 2) {
      t.columns.push_back({"revenue", "REAL"});
      row.push_back("'REV'");
    }
  }
  t.sample_rows.push_back(row);
  return t;
}

// The prompt always carries the tables the question most likely needs: never
// none, and a table too big for the budget cut to its columns that fit.
TEST(Linking, NeverLeavesThePromptWithoutATable) {
  struct Case {
    const char* what;
    std::vector<TableInfo> tables;
    const char* question;
    size_t budget;
    std::vector<std::string> shown;     // tables, in schema order
    std::vector<std::string> contains;  // in the rendering
    std::vector<std::string> absent;    // not in the rendering
  } cases[] = {
      {"a lone table of 2,000 columns, a vague question",
       {WideTable("readings", 2000)},
       "What is in here?",
       6000,
       {"readings"},
       {"CREATE TABLE readings", "id INTEGER PRIMARY KEY", "store_id INTEGER",
        "FOREIGN KEY (store_id) REFERENCES store", "more columns of readings are not shown",
        "measurement_0000"},
       {"measurement_1999"}},
      {"the column the question names comes after the keys",
       {WideTable("readings", 2000)},
       "What is the total revenue?",
       600,
       {"readings"},
       {"id INTEGER PRIMARY KEY", "revenue REAL", "'REV'"},
       {"measurement_1999"}},
      {"a budget too small for any column keeps one",
       {WideTable("readings", 2000)},
       "What is in here?",
       1,
       {"readings"},
       {"CREATE TABLE readings", "id INTEGER PRIMARY KEY"},
       {"store_id", "measurement_0000"}},
      {"no table named by the question: the tables that fit, in schema order",
       {WideTable("alpha", 10), WideTable("beta", 10), WideTable("gamma", 2000)},
       "What is in here?",
       400,
       {"alpha", "beta"},
       {"CREATE TABLE alpha", "CREATE TABLE beta", "measurement_0009",
        "1 more tables are not shown"},
       {"CREATE TABLE gamma"}},
  };
  for (const auto& c : cases) {
    Schema schema;
    schema.tables = c.tables;
    const std::string full = RenderSchema(schema);
    LinkedSchema linked = LinkSchema(schema, full, c.question, {}, c.budget);
    EXPECT_TRUE(linked.pruned) << c.what;
    std::vector<std::string> kept;
    for (const TableInfo* t : linked.kept) kept.push_back(t->name);
    EXPECT_EQ(kept, c.shown) << c.what;
    for (const std::string& s : c.contains) {
      EXPECT_NE(linked.rendered.find(s), std::string::npos) << c.what << ": " << s;
    }
    for (const std::string& s : c.absent) {
      EXPECT_EQ(linked.rendered.find(s), std::string::npos) << c.what << ": " << s;
    }
    if (c.budget > 1) {
      EXPECT_LE(linked.tokens, c.budget) << c.what;
    }
  }
}

// A user's table named ask is shown qualified (a bare ask is QueryPilot's),
// with a note; agent_runs and the others of QueryPilot's names are the user's
// data and need nothing.
TEST(Linking, AskTablesAreShownQualifiedWithANote) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> tables;  // database, name
    std::vector<std::string> shown;
    const char* note;  // in the note; "" = no note
  } cases[] = {
      {{{"main", "orders"}}, {"orders"}, ""},
      {{{"main", "ask"}, {"main", "orders"}},
       {"main.ask", "orders"},
       "Write main.ask with its database name"},
      {{{"main", "ASK"}, {"world", "ask"}},
       {"main.ASK", "world.ask"},
       "Write main.ASK, world.ask with their"},
      {{{"main", "agent_runs"}, {"main", "agent_prompts"}, {"main", "asked"}},
       {"agent_runs", "agent_prompts", "asked"},
       ""},
  };
  for (const auto& c : cases) {
    auto schema = std::make_shared<Schema>();
    for (const auto& [db, name] : c.tables) {
      TableInfo t;
      t.database = db;
      t.name = name;
      t.columns.push_back({"id", "INTEGER", true});
      schema->tables.push_back(t);
    }
    std::string note = "stale";
    std::shared_ptr<const Schema> out = WithAskTablesQualified(schema, &note);
    std::vector<std::string> shown;
    for (const TableInfo& t : out->tables) shown.push_back(t.DisplayName());
    EXPECT_EQ(shown, c.shown);
    if (std::string(c.note).empty()) {
      EXPECT_EQ(note, "");
      EXPECT_EQ(out.get(), schema.get());  // no copy
    } else {
      EXPECT_NE(note.find(c.note), std::string::npos) << note;
      EXPECT_NE(note.find("QueryPilot's own ask()"), std::string::npos) << note;
      EXPECT_EQ(out->rendered, RenderSchema(*out));
    }
  }
}

TEST(ValueIndexKey, LowerCaseWordsOneSpaceApart) {
  struct Case {
    const char* value;
    const char* key;
  } cases[] = {
      {"  Mr.  Incredible ", "mr incredible"},
      {"3-D Man", "3-d man"},
      {"'Copycat'", "copycat"},
      {"O'Neil", "o'neil"},
      {"a\tb\n(c)", "a b c"},
      {"", ""},
      {"?!", ""},
      {"Grace Thompson", "grace thompson"},
  };
  std::string buffer = "what the buffer held before";
  for (const auto& c : cases) {
    EXPECT_EQ(ValueIndex::Key(c.value), c.key) << c.value;
    ValueIndex::KeyInto(c.value, &buffer);  // the scan's reused buffer: replaced whole
    EXPECT_EQ(buffer, c.key) << c.value;
  }
}

TEST(WordVariants, PlacesFromTheirAdjectives) {
  struct Case {
    const char* word;
    const char* place;
  } cases[] = {
      {"european", "europe"},   {"asian", "asia"},       {"african", "africa"},
      {"canadian", "canada"},   {"italian", "italy"},    {"japanese", "japan"},
      {"israeli", "israel"},    {"brazilian", "brazil"}, {"french", "france"},
      {"dutch", "netherlands"}, {"aliens", "alien"},     {"gold-eyed", "gold"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> v = WordVariants(c.word);
    EXPECT_NE(std::find(v.begin(), v.end(), c.place), v.end()) << c.word;
  }
  EXPECT_TRUE(WordVariants("man").empty());  // too short to strip anything
}

TEST_F(ValueIndexTest, AdjectivesFindThePlacesTheyName) {
  ASSERT_EQ(sqlite3_exec(
                db_,
                "CREATE TABLE country(code TEXT PRIMARY KEY, name TEXT, continent TEXT);"
                "INSERT INTO country VALUES ('FRA', 'France', 'Europe'), ('JPN', 'Japan', 'Asia');",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
  Schema schema = IntrospectSchema(db_, 0).value();
  ValueIndexCache cache;
  auto index = cache.Get(db_);
  EXPECT_EQ(Hints(*index, "How many European countries are there?"),
            (std::vector<std::string>{"country.continent=Europe"}));
  EXPECT_EQ(Hints(*index, "Which Asian country is the largest?"),
            (std::vector<std::string>{"country.continent=Asia"}));
  EXPECT_EQ(Hints(*index, "List the French heroes"),
            (std::vector<std::string>{"country.name=France"}));
}

TEST_F(ValueIndexTest, ColumnsOfFewShortCodesAreShownWithTheirCodes) {
  ASSERT_EQ(sqlite3_exec(
                db_,
                "CREATE TABLE countrylanguage(CountryCode TEXT, Language TEXT, IsOfficial TEXT);"
                "INSERT INTO countrylanguage VALUES ('FRA', 'French', 'T'), ('FRA', 'Breton', 'F'),"
                " ('JPN', 'Japanese', 'T');",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto schema = std::make_shared<const Schema>(IntrospectSchema(db_, 0).value());
  ValueIndexCache cache;
  auto coded = WithDescriptions(schema, CodeNotes(cache.Get(db_)->CodedColumns()));
  ASSERT_NE(coded, schema);
  const std::string rendered = RenderSchema(*coded);
  EXPECT_NE(rendered.find("IsOfficial TEXT -- holds 'F' or 'T'"), std::string::npos) << rendered;
  // Codes, not names: three-letter country codes of two countries are not.
  EXPECT_EQ(rendered.find("CountryCode TEXT, -- holds"), std::string::npos) << rendered;
}

// A database file: read in the background on a connection of its own.
class ValueIndexFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qp_values_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "shop.db").string();
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr), SQLITE_OK);
    // 50,000 customers, each with a name of their own: more than one chunk.
    ASSERT_EQ(
        sqlite3_exec(
            db_,
            "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, status TEXT);"
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000) "
            "INSERT INTO customer SELECT i, 'Customer ' || i, 'City' || (i % 50), "
            "CASE i % 3 WHEN 0 THEN 'active' WHEN 1 THEN 'closed' ELSE 'refunded' END FROM n;",
            nullptr, nullptr, nullptr),
        SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(db_);
    std::filesystem::remove_all(dir_);
  }

  // Asks until the background has read everything (bounded: 60 s).
  std::shared_ptr<const ValueLookup> Complete(ValueIndexCache& cache,
                                              const ValueIndexOptions& options) {
    Schema schema = IntrospectSchema(db_, 0).value();
    for (int i = 0; i < 600; ++i) {
      auto lookup = cache.Get(db_, options);
      if (cache.Progress()[0]["state"] == "complete") return lookup;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << cache.Progress().dump();
    return cache.Get(db_, options);
  }

  template <typename Index>
  std::vector<std::string> Hints(const Index& index, const char* question) {
    std::vector<std::string> out;
    for (const ValueHint& h : index.Lookup(question))
      out.push_back(h.table + "." + h.column + "=" + h.value);
    return out;
  }

  std::filesystem::path dir_;
  std::string path_;
  sqlite3* db_ = nullptr;
};

TEST_F(ValueIndexFileTest, EveryValueOfEveryColumnThenTheRowsAddedSince) {
  ValueIndexCache cache;
  ValueIndexOptions options;
  options.wait_ms = 0;
  auto index = Complete(cache, options);
  EXPECT_EQ(cache.builds(), 0);  // the asks read nothing themselves
  EXPECT_EQ(Hints(*index, "What did Customer 49999 buy?"),
            (std::vector<std::string>{"customer.name=Customer 49999"}));
  EXPECT_EQ(Hints(*index, "How many refunded customers live in City7?"),
            (std::vector<std::string>{"customer.status=refunded", "customer.city=City7"}));
  nlohmann::json p = cache.Progress()[0];
  EXPECT_EQ(p["database"], "main");
  EXPECT_EQ(p["read"], "background");
  EXPECT_EQ(p["values"], 50000 + 50 + 3);
  // Rows this connection adds, inside its own open transaction too, are
  // read by the next ask itself (given the time to: a sanitizer build on a
  // busy machine can take longer than the default catch_up_ms).
  options.catch_up_ms = 60000;
  ASSERT_EQ(
      sqlite3_exec(
          db_, "BEGIN; INSERT INTO customer VALUES (50001, 'Grace Thompson', 'Lyon', 'shipped');",
          nullptr, nullptr, nullptr),
      SQLITE_OK);
  Schema schema = IntrospectSchema(db_, 0).value();
  auto after = cache.Get(db_, options);
  EXPECT_EQ(cache.builds(), 1);
  EXPECT_EQ(Hints(*after, "What did Grace Thompson order in Lyon?"),
            (std::vector<std::string>{"customer.name=Grace Thompson", "customer.city=Lyon"}));
  ASSERT_EQ(sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
}

TEST_F(ValueIndexFileTest, GroundingFindsNearValuesAmongAllOfABigColumn) {
  ValueIndexCache cache;
  ValueIndexOptions options;
  options.wait_ms = 0;
  auto index = Complete(cache, options);
  Schema schema = IntrospectSchema(db_, 0).value();
  const std::string sql = "SELECT count(*) FROM customer WHERE name = 'Custmer 49990'";
  GroundingLimits limits;
  // What is found, not how fast: a sanitizer build on a busy machine may
  // take longer than the default budget to read the sample.
  limits.budget_ms = 60000;
  // The sample of 5,000 values holds no name this near: without the index
  // the nearest proposed is another customer.
  std::vector<ReflectionIssue> sampled = GroundLiterals(SqlTarget::Own(db_), schema, sql, limits);
  ASSERT_EQ(sampled.size(), 1u);
  EXPECT_TRUE(sampled[0].values.empty() || sampled[0].values[0] != "Customer 49990")
      << sampled[0].message;
  // The index has read all 50,000: the one a letter away comes first.
  std::vector<ReflectionIssue> indexed =
      GroundLiterals(SqlTarget::Own(db_), schema, sql, limits, index.get());
  ASSERT_EQ(indexed.size(), 1u);
  EXPECT_EQ(indexed[0].kind(), "value_not_found");
  ASSERT_FALSE(indexed[0].values.empty()) << indexed[0].message;
  EXPECT_EQ(indexed[0].values[0], "Customer 49990");
  // A column of few values is still read from the database itself.
  EXPECT_FALSE(
      index->NearValues("main", "customer", "status", "refundd", 1, 5, limits.sample_values)
          .has_value());
  EXPECT_TRUE(
      index->NearValues("main", "customer", "name", "Custmer 49990", 3, 5, limits.sample_values)
          .has_value());
}

TEST_F(ValueIndexFileTest, RollbackJournalFilesAreReadDuringAsksAndNeverHoldALock) {
  // A second connection reading would make this connection's writes fail
  // with SQLITE_BUSY: the asks read the file themselves, a slice each.
  ASSERT_EQ(sqlite3_exec(db_, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr),
            SQLITE_OK);
  ValueIndexCache cache;
  ValueIndexOptions options;
  // A few chunks per ask. Each slice starts before the tables are listed,
  // which alone can take a few milliseconds in a sanitizer build on a busy
  // machine: a slice shorter than that would read nothing at all.
  options.file_slice_ms = 10;
  // Every value in the end, however slow the build: the asks' total budget
  // (file_budget_ms) is not what this test is about.
  options.file_budget_ms = 600000;
  Schema schema = IntrospectSchema(db_, 0).value();
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &writer), SQLITE_OK);
  int asks = 0;
  for (; asks < 1000 && (cache.Progress().empty() || cache.Progress()[0]["state"] != "complete");
       ++asks) {
    cache.Get(db_, options);
    EXPECT_EQ(cache.Progress()[0]["read"], "during asks");
    // Between asks nothing holds the file: another connection writes at once.
    ASSERT_EQ(sqlite3_exec(writer, "UPDATE customer SET city = city WHERE id = 1", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
  }
  sqlite3_close(writer);
  EXPECT_GT(asks, 1);  // 50,000 rows take more than one chunk
  EXPECT_EQ(cache.Progress()[0]["values"], 50000 + 50 + 3);
  EXPECT_EQ(Hints(*cache.Get(db_, options), "Who is Customer 49999?"),
            (std::vector<std::string>{"customer.name=Customer 49999"}));
}

TEST_F(ValueIndexFileTest, AnIndexFileIsReusedWhileTheDatabaseIsUnchanged) {
  const std::string index_file = (dir_ / "values.qpindex").string();
  {
    ValueIndexCache cache;
    ValueIndexOptions options;
    options.file = index_file;
    options.wait_ms = 0;
    Complete(cache, options);
  }
  // What another process opening the file sees before reading anything.
  auto store = ValueStore::Open(index_file).value();
  std::vector<TableProgress> tables = store->Tables(path_);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_TRUE(tables[0].done);
  EXPECT_EQ(tables[0].rows_read, 50000);
  EXPECT_EQ(store->Find(path_, "customer 123", 5).size(), 1u);
  // Unchanged: nothing to catch up on. Rows added: only those are reopened.
  EXPECT_TRUE(CatchUp(db_, "main", *store, path_, kCountEveryTable).empty());
  ASSERT_EQ(
      sqlite3_exec(db_, "INSERT INTO customer VALUES (50001, 'Grace Thompson', 'Lyon', 'shipped')",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_EQ(CatchUp(db_, "main", *store, path_, kCountEveryTable),
            (std::set<std::string>{"customer"}));
  EXPECT_FALSE(store->Tables(path_)[0].done);
  EXPECT_EQ(store->Tables(path_)[0].rows_read, 50000);  // kept: the new rows are read from there
  ScanLimits limits;
  EXPECT_TRUE(ScanSource(db_, "main", *store, path_, limits));
  EXPECT_EQ(store->Tables(path_)[0].rows_read, 50001);
  EXPECT_EQ(store->Find(path_, "grace thompson", 5).size(), 1u);
  // Rows deleted: read again whole.
  ASSERT_EQ(sqlite3_exec(db_, "DELETE FROM customer WHERE id <= 10", nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(CatchUp(db_, "main", *store, path_, kCountEveryTable),
            (std::set<std::string>{"customer"}));
  EXPECT_TRUE(store->Tables(path_).empty());
  EXPECT_TRUE(ScanSource(db_, "main", *store, path_, limits));
  EXPECT_EQ(store->Tables(path_)[0].rows_read, 49991);
  EXPECT_TRUE(store->Find(path_, "customer 5", 5).empty());
}

// Checks stopped at a deadline go on where they stopped: a table a call
// checked is not checked again by the next, which reaches the others.
TEST_F(ValueIndexFileTest, ACatchUpStoppedAtItsDeadlineGoesOnWhereItStopped) {
  const std::string index_file = (dir_ / "values.qpindex").string();
  {
    ValueIndexCache cache;
    ValueIndexOptions options;
    options.file = index_file;
    options.wait_ms = 0;
    Complete(cache, options);
  }
  auto store = ValueStore::Open(index_file).value();
  ASSERT_EQ(
      sqlite3_exec(db_, "INSERT INTO customer VALUES (50001, 'Grace Thompson', 'Lyon', 'shipped')",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  std::set<std::string> checked;
  bool finished = true;
  // A deadline already past: nothing is checked, and the call says so.
  EXPECT_TRUE(CatchUp(db_, "main", *store, path_, kCountEveryTable,
                      std::chrono::steady_clock::now(), &finished, &checked)
                  .empty());
  EXPECT_FALSE(finished);
  EXPECT_TRUE(checked.empty());
  // Then customer is checked (its new row found) and noted.
  EXPECT_EQ(
      CatchUp(db_, "main", *store, path_, kCountEveryTable, std::nullopt, &finished, &checked),
      (std::set<std::string>{"customer"}));
  EXPECT_TRUE(finished);
  EXPECT_EQ(checked, (std::set<std::string>{"customer"}));
  // Read again and grown again: a call given the tables checked skips it.
  ScanLimits limits;
  EXPECT_TRUE(ScanSource(db_, "main", *store, path_, limits));
  ASSERT_EQ(
      sqlite3_exec(db_, "INSERT INTO customer VALUES (50002, 'Ada Byron', 'Paris', 'shipped')",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_TRUE(
      CatchUp(db_, "main", *store, path_, kCountEveryTable, std::nullopt, &finished, &checked)
          .empty());
  EXPECT_EQ(CatchUp(db_, "main", *store, path_, kCountEveryTable),
            (std::set<std::string>{"customer"}));
}

TEST_F(ValueIndexFileTest, NamesThatMixWordsAndDigitsAreFoundAmongAHundredThousand) {
  // 120,000 people named like 'Person 0123456 C', codes like 'INV-2023-000123'
  // and references like 'Flat 4B, 12 Rue Royale': each is found by the
  // question that names it, as a name of words alone is.
  ASSERT_EQ(
      sqlite3_exec(
          db_,
          "CREATE TABLE person(id INTEGER PRIMARY KEY, name TEXT, invoice TEXT, address TEXT);"
          "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 119999) "
          "INSERT INTO person SELECT i, 'Person ' || printf('%07d', i + 120000) || ' ' || "
          "char(65 + i % 26), 'INV-2023-' || printf('%06d', i), "
          "'Flat ' || (i % 9 + 1) || char(65 + i % 4) || ', ' || i || ' Rue Royale' FROM n;",
          nullptr, nullptr, nullptr),
      SQLITE_OK);
  ValueIndexCache cache;
  ValueIndexOptions options;
  ASSERT_TRUE(cache.Build(db_, options, "main").ok());
  auto index = cache.Get(db_, options);
  // i = 3456: 'Person 0123456 ' || char(65 + 3456 % 26) = 'Person 0123456 Y'.
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"What did Person 0123456 Y order?", {"person.name=Person 0123456 Y"}},
      {"what did person 0123456 y order?", {"person.name=Person 0123456 Y"}},
      {"What did Person 0123456 C order?", {}},  // no such person
      {"Who got invoice INV-2023-003456?", {"person.invoice=INV-2023-003456"}},
      {"Who lives at Flat 1A, 3456 Rue Royale?", {"person.address=Flat 1A, 3456 Rue Royale"}},
      {"What did Person 0239999 J order?", {"person.name=Person 0239999 J"}},
      // A number alone names nothing: numbers are compared as numbers.
      {"How many people have id 0123456?", {}},
  };
  for (const auto& [question, hints] : cases) EXPECT_EQ(Hints(*index, question), hints) << question;
}

TEST_F(ValueIndexFileTest, AColumnOfManyValuesIsKeptAsHashesAndHintedOnlyAsTheRowHoldsIt) {
  // 50,000 names of their own: held as hashes and row numbers, so the index
  // is a fraction of the database; each hint is read from the row itself.
  const std::string index_file = (dir_ / "values.qpindex").string();
  ValueIndexCache cache;
  ValueIndexOptions options;
  options.file = index_file;
  options.background = false;
  ASSERT_TRUE(cache.Build(db_, options, "main").ok());
  int64_t db_bytes = 0;
  {
    auto st = Statement::Prepare(db_,
                                 "SELECT page_count * page_size FROM pragma_page_count, "
                                 "pragma_page_size");
    ASSERT_TRUE(st.ok());
    ASSERT_EQ(st->Step(), SQLITE_ROW);
    db_bytes = st->ColumnInt(0);
  }
  const int64_t index_bytes = cache.Progress()[0]["index_bytes"];
  EXPECT_LT(index_bytes * 4, db_bytes) << index_bytes << " of " << db_bytes;
  auto index = cache.Get(db_, options);
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"What did Customer 49999 buy?", {"customer.name=Customer 49999"}},
      {"what did CUSTOMER   12345 buy?", {"customer.name=Customer 12345"}},
      {"What did Customer 50001 buy?", {}},  // no such customer
      {"How many refunded customers live in City7?",
       {"customer.status=refunded", "customer.city=City7"}},
  };
  for (const auto& [question, hints] : cases) EXPECT_EQ(Hints(*index, question), hints) << question;
  // A row changed since it was read (an UPDATE is seen only when the table
  // is read again): its old name is no longer hinted, its new one not yet.
  ASSERT_EQ(sqlite3_exec(db_, "UPDATE customer SET name = 'Grace Thompson' WHERE id = 49999",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  index = cache.Get(db_, options);
  EXPECT_EQ(Hints(*index, "What did Customer 49999 buy?"), std::vector<std::string>{});
  EXPECT_EQ(Hints(*index, "What did Customer 49998 buy?"),
            (std::vector<std::string>{"customer.name=Customer 49998"}));
  // Without a connection to read the rows on, a hashed column hints nothing.
  ValueLookup blind({{"main", false, ValueStore::Open(index_file).value(), path_}});
  EXPECT_EQ(Hints(blind, "What did Customer 49998 buy?"), std::vector<std::string>{});
}

TEST_F(ValueIndexFileTest, AFullBuildHoldsTheRowsThatStagedReadsHold) {
  // A full-speed build (agent_index()) hashes a hashed column's values as it
  // reads them and writes them straight into their buckets; an ask stages
  // its hashes (qp_pending) to be folded later. Read whole at full speed, or
  // first by asks and the rows added since at full speed, the index holds
  // the same rows for every key, each row once.
  std::vector<std::string> keys;
  for (int i = 1; i <= 50000; i += 997) keys.push_back("customer " + std::to_string(i));
  keys.push_back("customer 50000");
  keys.push_back("customer 50001");  // no such customer
  auto whole = ValueStore::Open((dir_ / "whole.qpindex").string());
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(ScanSource(db_, "main", **whole, path_, ScanLimits()));
  EXPECT_EQ((*whole)->pending(), 0);
  const std::vector<std::vector<int64_t>> rows =
      (*whole)->HashedRows(path_, "customer", "name", keys, 4);
  ASSERT_EQ(rows.size(), keys.size());
  for (size_t k = 0; k + 2 < keys.size(); ++k)
    EXPECT_EQ(rows[k], std::vector<int64_t>{1 + 997 * static_cast<int64_t>(k)}) << keys[k];
  EXPECT_EQ(rows[keys.size() - 2], std::vector<int64_t>{50000});
  EXPECT_TRUE(rows.back().empty());
  EXPECT_EQ((*whole)->ColumnState(path_, "customer", "name"), std::make_pair(int64_t{50000}, true));

  // The first 20,000 rows read as asks read them, the rest at full speed.
  ASSERT_EQ(sqlite3_exec(db_,
                         "CREATE TEMP TABLE later AS SELECT * FROM customer WHERE id > 20000;"
                         "DELETE FROM customer WHERE id > 20000",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto steps = ValueStore::Open((dir_ / "steps.qpindex").string());
  ASSERT_TRUE(steps.ok());
  ScanLimits ask;  // an ask's: a deadline (never reached here), chunks of a few milliseconds
  ask.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  ask.max_chunk_ms = 5;
  bool done = false;
  for (int i = 0; i < 1000 && !done; ++i) done = ScanSource(db_, "main", **steps, path_, ask);
  ASSERT_TRUE(done);
  EXPECT_GT((*steps)->pending(), 0);  // staged, not folded
  ASSERT_EQ(
      sqlite3_exec(db_, "INSERT INTO customer SELECT * FROM later", nullptr, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_EQ(CatchUp(db_, "main", **steps, path_, kCountEveryTable),
            std::set<std::string>{"customer"});
  ASSERT_TRUE(ScanSource(db_, "main", **steps, path_, ScanLimits()));
  EXPECT_EQ((*steps)->pending(), 0);
  EXPECT_EQ((*steps)->HashedRows(path_, "customer", "name", keys, 4), rows);
  EXPECT_EQ((*steps)->ColumnState(path_, "customer", "name"), std::make_pair(int64_t{50000}, true));
}

// Every key an ask looks up probes the hashed columns: the store finds them
// by an index of their own rather than by reading every column it holds (a
// file of a thousand tables holds thousands), kept indexes made before it
// included.
TEST_F(ValueIndexFileTest, TheHashedColumnsAreFoundByAnIndexOfTheirOwn) {
  const std::string index_file = (dir_ / "values.qpindex").string();
  auto index_sql = [&]() {
    sqlite3* raw = nullptr;
    EXPECT_EQ(sqlite3_open(index_file.c_str(), &raw), SQLITE_OK);
    std::string sql;
    auto st = Statement::Prepare(
        raw,
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'qp_columns'"
        " AND sql LIKE '%WHERE hashed%'");
    if (st.ok() && st->Step() == SQLITE_ROW) sql = st->ColumnText(0);
    st = Statement();
    sqlite3_close(raw);
    return sql;
  };
  ASSERT_TRUE(ValueStore::Open(index_file).ok());
  const std::string made = index_sql();
  EXPECT_NE(made, "");
  // An index file without it (as kept before) gets it when opened.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(index_file.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP INDEX qp_columns_hashed", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  ASSERT_EQ(index_sql(), "");
  ASSERT_TRUE(ValueStore::Open(index_file).ok());
  EXPECT_EQ(index_sql(), made);
}

// CodedColumns() is asked at every ask and read again only when the store
// changed: rows another connection wrote to a shared index file are seen.
TEST_F(ValueIndexFileTest, CodedColumnsFollowWhatAnotherConnectionStores) {
  sqlite3* src = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &src), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(src,
                         "CREATE TABLE flags(id INTEGER PRIMARY KEY, flag TEXT);"
                         "INSERT INTO flags(flag) VALUES ('T'), ('F'), ('T'), ('F');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const std::string index_file = (dir_ / "values.qpindex").string();
  std::shared_ptr<ValueStore> asking = ValueStore::Open(index_file).value();
  std::shared_ptr<ValueStore> other = ValueStore::Open(index_file).value();
  auto codes = [&]() {
    std::vector<std::string> out;
    for (const CodedColumn& c : asking->CodedColumns("src", 3, 1))
      out.push_back(c.table + "." + c.column + "=" + fmt::format("{}", fmt::join(c.codes, ",")));
    return out;
  };
  EXPECT_EQ(codes(), std::vector<std::string>{});
  ASSERT_TRUE(ScanSource(src, "main", *other, "src", ScanLimits()));
  EXPECT_EQ(codes(), std::vector<std::string>{"flags.flag=F,T"});
  EXPECT_EQ(codes(), std::vector<std::string>{"flags.flag=F,T"});  // the same, asked again
  ASSERT_EQ(
      sqlite3_exec(src, "INSERT INTO flags(flag) VALUES ('X'), ('X')", nullptr, nullptr, nullptr),
      SQLITE_OK);
  CatchUp(src, "main", *other, "src", kCountEveryTable);
  ASSERT_TRUE(ScanSource(src, "main", *other, "src", ScanLimits()));
  EXPECT_EQ(codes(), std::vector<std::string>{"flags.flag=F,T,X"});
  // ... and what this connection stores itself.
  ASSERT_EQ(
      sqlite3_exec(src, "INSERT INTO flags(flag) VALUES ('Y'), ('Y')", nullptr, nullptr, nullptr),
      SQLITE_OK);
  CatchUp(src, "main", *asking, "src", kCountEveryTable);
  ASSERT_TRUE(ScanSource(src, "main", *asking, "src", ScanLimits()));
  EXPECT_EQ(codes(), std::vector<std::string>{});  // four codes: more than 3
  sqlite3_close(src);
}

// Tables the store does not know are read first and stored a group at a
// time: small ones whole, WITHOUT ROWID ones, one of many chunks begun in a
// group and read on after it, one with no text. Read by asks' slices (a
// deadline, small chunks) or at full speed, every table ends done and every
// value is found, as one transaction per table left them.
TEST_F(ValueIndexFileTest, ManyTablesReadInGroupsEndDoneWithEveryValue) {
  sqlite3* src = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &src), SQLITE_OK);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> close_src(src, sqlite3_close_v2);
  std::string ddl = "BEGIN;";
  for (int i = 0; i < 150; ++i) {
    ddl += fmt::format(
        "CREATE TABLE t{0:03}(id INTEGER PRIMARY KEY, label TEXT, n INTEGER);"
        "INSERT INTO t{0:03}(label, n) VALUES ('Label {0} alpha', 1), ('Label {0} beta', 2);",
        i);
  }
  ddl +=
      "CREATE TABLE pairs(code TEXT PRIMARY KEY, title TEXT) WITHOUT ROWID;"
      "INSERT INTO pairs VALUES ('QX1', 'Heron Bay'), ('QX2', 'Otter Creek');"
      "CREATE TABLE numbers(id INTEGER PRIMARY KEY, x REAL);"
      "INSERT INTO numbers(x) VALUES (1.5), (2.5);"
      "CREATE TABLE big(id INTEGER PRIMARY KEY, name TEXT);"
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
      "INSERT INTO big SELECT i, 'Walker ' || i || ' Finch' FROM n;"
      "COMMIT;";
  ASSERT_EQ(sqlite3_exec(src, ddl.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  auto check = [&](ValueStore& store) {
    int tables = 0, done = 0;
    for (const TableProgress& t : store.Tables("src")) {
      ++tables;
      done += t.done ? 1 : 0;
      EXPECT_EQ(t.error, "") << t.table;
    }
    EXPECT_EQ(tables, 152);  // `numbers` holds no text: never registered
    EXPECT_EQ(done, tables);
    EXPECT_EQ(store.ValueCount("src"), 150 * 2 + 4 + 3000);
    for (const char* key : {"label 0 alpha", "label 149 beta", "heron bay", "qx2"}) {
      const std::vector<StoredValue> found = store.Find("src", key, 4);
      ASSERT_EQ(found.size(), 1u) << key;
    }
    EXPECT_EQ(store.ColumnState("src", "big", "name"), std::make_pair(int64_t{3000}, true));
  };
  std::shared_ptr<ValueStore> whole = ValueStore::Open((dir_ / "whole.qpindex").string()).value();
  ASSERT_TRUE(ScanSource(src, "main", *whole, "src", ScanLimits()));
  check(*whole);
  std::shared_ptr<ValueStore> slices = ValueStore::Open((dir_ / "slices.qpindex").string()).value();
  ScanLimits ask;
  ask.chunk_rows = 256;  // `big` takes twelve chunks
  ask.max_chunk_ms = 5;
  bool done = false;
  for (int i = 0; i < 200 && !done; ++i) {
    // A deadline a few milliseconds on: the scan stops within its tables,
    // and the next goes on from there. It grows, so that a slow build (a
    // sanitizer's) whose listing alone takes longer still ends.
    ask.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(3 + 2 * i);
    done = ScanSource(src, "main", *slices, "src", ask);
  }
  ASSERT_TRUE(done);
  check(*slices);
}

TEST(HashedValues, ABucketHoldsRowsInOrderAndFindsThemByTag) {
  std::string blob;
  int64_t last = 0;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const std::pair<uint16_t, int64_t> entries[] = {
      {7, kMin}, {7, -5}, {9, 0}, {7, 3}, {65535, int64_t{1} << 40}, {7, kMax}};
  for (const auto& [tag, row] : entries) HashedValues::Append(&blob, &last, tag, row);
  EXPECT_EQ(last, kMax);
  EXPECT_EQ(HashedValues::LastRow(blob), kMax);
  EXPECT_EQ(HashedValues::Rows(blob, 7, 10), (std::vector<int64_t>{kMin, -5, 3, kMax}));
  EXPECT_EQ(HashedValues::Rows(blob, 7, 2), (std::vector<int64_t>{kMin, -5}));
  EXPECT_EQ(HashedValues::Rows(blob, 65535, 10), (std::vector<int64_t>{int64_t{1} << 40}));
  EXPECT_TRUE(HashedValues::Rows(blob, 8, 10).empty());
  EXPECT_TRUE(HashedValues::Rows("", 7, 10).empty());
  // A blob cut short gives the entries it holds whole, and no more.
  EXPECT_EQ(HashedValues::Rows(blob.substr(0, blob.size() - 1), 7, 10),
            (std::vector<int64_t>{kMin, -5, 3}));
  // Keys spread over the buckets.
  std::set<int> buckets;
  for (int i = 0; i < 20000; ++i)
    buckets.insert(HashedValues::Of("customer " + std::to_string(i)).bucket);
  EXPECT_GT(buckets.size(), 10000u);
  for (int b : buckets) EXPECT_LT(b, 1 << HashedValues::kBucketBits);
}

TEST(HashedValues, AColumnBecomesHashedPastItsBound) {
  const struct {
    int64_t values;
    int64_t rows_read;
    bool hashed;
  } cases[] = {
      {4096, 4096, false},  // few values, each row its own
      {4097, 8000, true},   // most rows hold a value of their own
      {4097, 9000, false},  // values repeat: kept by value
      {65536, 1000000000, false}, {65537, 1000000000, true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(HashedValues::Overflows(c.values, c.rows_read), c.hashed)
        << c.values << " values in " << c.rows_read << " rows";
  }
}

TEST(EditVariants, EveryKeyOneEditAwayOnce) {
  const std::vector<std::string> v = EditVariants("abc", 100000);
  std::set<std::string> all(v.begin(), v.end());
  EXPECT_EQ(all.size(), v.size());  // each once
  EXPECT_FALSE(all.count("abc"));   // not the key itself
  for (const char* near : {"ab", "ac", "bc", "bac", "acb", "abcd", "xabc", "abd", "a c", "ab-c"})
    EXPECT_TRUE(all.count(near)) << near;
  for (const char* far : {"a", "cba", "abcde", "xyz"}) EXPECT_FALSE(all.count(far)) << far;
  // Deletions first; never more than asked for.
  EXPECT_EQ(EditVariants("abc", 3), (std::vector<std::string>{"bc", "ac", "ab"}));
  EXPECT_TRUE(EditVariants("", 10).empty());
}

TEST_F(ValueIndexFileTest, TheCacheFolderIsBoundedLeastRecentlyUsedFirst) {
  namespace fs = std::filesystem;
  const fs::path cache = dir_ / "bounded";
  fs::create_directories(cache);
  fs::permissions(cache, fs::perms::owner_all);  // as QueryPilot makes its folder
  auto make = [&](const std::string& name, size_t bytes, int hours_old) {
    const fs::path p = cache / name;
    { std::ofstream(p, std::ios::binary) << std::string(bytes, 'x'); }
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(hours_old));
    return p;
  };
  const fs::path oldest = make("a.db-0000000000000001.qpindex", 3000, 30);
  const fs::path middle = make("b.db-0000000000000002.qpindex", 2000, 20);
  const fs::path middle_wal = make("b.db-0000000000000002.qpindex-wal", 1000, 20);
  const fs::path newest = make("c.db-0000000000000003.qpindex", 3000, 10);
  const fs::path other =
      make("notes.txt", 100000, 40);  // not an index: neither counted nor removed
  // 9,000 bytes of indexes: the least recently used goes first, and only
  // what the bound needs.
  EXPECT_EQ(BoundValueIndexCache(cache.string(), 7000, ""), 1u);
  EXPECT_FALSE(fs::exists(oldest));
  EXPECT_TRUE(fs::exists(middle) && fs::exists(middle_wal) && fs::exists(newest));
  // The one being opened is spared, whatever its age; its -wal counts.
  EXPECT_EQ(BoundValueIndexCache(cache.string(), 3000, middle.string()), 1u);
  EXPECT_TRUE(fs::exists(middle) && fs::exists(middle_wal));
  EXPECT_FALSE(fs::exists(newest));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(BoundValueIndexCache(cache.string(), 0, ""), 0u);  // 0: no bound
  EXPECT_TRUE(fs::exists(middle));
  // An index alone bigger than the bound is removed and not kept.
  const std::string cache_dir = (dir_ / "kept").string();
  const std::string kept = ValueIndexCacheFile(cache_dir, path_, db_);
  ASSERT_FALSE(kept.empty());
  { std::ofstream(kept, std::ios::binary) << std::string(5000, 'x'); }
  std::string why;
  EXPECT_EQ(ValueIndexCacheFile(cache_dir, path_, db_, &why, 4000), "");
  EXPECT_NE(why.find("cache_max_mb"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(kept));
  EXPECT_EQ(ValueIndexCacheFile(cache_dir, path_, db_, &why, 1 << 20), kept);
}

TEST_F(ValueIndexFileTest, KeptIndexesUnusedForAMonthArePrunedAndNothingElse) {
  namespace fs = std::filesystem;
  const fs::path cache = dir_ / "prune";
  fs::create_directories(cache);
  fs::permissions(cache, fs::perms::owner_all);  // as QueryPilot makes its folder
  auto make = [&](const std::string& name, int days_old) {
    const fs::path p = cache / name;
    { std::ofstream(p) << "x"; }
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(24) * days_old);
    return p;
  };
  const fs::path old_index = make("gone.db-0000000000000001.qpindex", 40);
  const fs::path old_journal = make("gone.db-0000000000000001.qpindex-journal", 40);
  const fs::path fresh = make("kept.db-0000000000000002.qpindex", 3);
  const fs::path other = make("notes.txt", 400);
  const fs::path old_not_index = make("shop.db", 400);
  const fs::path old_other_name = make("mine.qpindex", 400);  // not a name QueryPilot gives
  EXPECT_EQ(PruneValueIndexCache(cache.string(), kValueIndexCacheDays), 1u);
  EXPECT_FALSE(fs::exists(old_index));
  EXPECT_FALSE(fs::exists(old_journal));
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(old_not_index));
  EXPECT_TRUE(fs::exists(old_other_name));
  // A folder that is not there is nothing to prune.
  EXPECT_EQ(PruneValueIndexCache((cache / "none").string(), kValueIndexCacheDays), 0u);
  // The file handed out is marked used: an old one is young again.
  const std::string cache_dir = (dir_ / "kept").string();
  const std::string kept = ValueIndexCacheFile(cache_dir, path_, db_);
  ASSERT_FALSE(kept.empty());
  { std::ofstream(kept) << ""; }
  fs::last_write_time(kept, fs::file_time_type::clock::now() - std::chrono::hours(24) * 40);
  EXPECT_EQ(ValueIndexCacheFile(cache_dir, path_, db_), kept);
  EXPECT_LT(fs::file_time_type::clock::now() - fs::last_write_time(kept), std::chrono::hours(1));
  EXPECT_EQ(PruneValueIndexCache(cache_dir, kValueIndexCacheDays), 0u);
  EXPECT_TRUE(fs::exists(kept));
}

TEST_F(ValueIndexFileTest, AKeptIndexLivesInTheCacheFolderUnderTheFilesIdentity) {
  const std::string cache_dir = (dir_ / "cache" / "querypilot" / "values").string();
  ValueIndexOptions options;
  options.cache_dir = cache_dir;
  options.wait_ms = 0;
  const std::string kept = ValueIndexCacheFile(cache_dir, path_, db_);
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.rfind(cache_dir + "/shop.db-", 0), 0u) << kept;
  // The same file under another name is the same index; another file is not.
  EXPECT_EQ(ValueIndexCacheFile(cache_dir, (dir_ / "." / "shop.db").string(), db_), kept);
  {
    ValueIndexCache cache;
    Complete(cache, options);
    EXPECT_EQ(cache.Progress()[0]["index_file"], kept);
  }
  // What the next process finds: every table read, before it reads anything.
  {
    auto store = ValueStore::Open(kept).value();
    std::vector<TableProgress> tables = store->Tables(path_);
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_TRUE(tables[0].done);
    EXPECT_EQ(store->Find(path_, "customer 49999", 5).size(), 1u);
  }
  // A new connection's first ask starts from it, complete.
  {
    ValueIndexCache cache;
    options.wait_ms = 60000;
    auto index = cache.Get(db_, options);
    EXPECT_EQ(cache.Progress()[0]["state"], "complete");
    EXPECT_EQ(cache.builds(), 0);
    EXPECT_EQ(Hints(*index, "What did Customer 49999 buy?"),
              (std::vector<std::string>{"customer.name=Customer 49999"}));
  }
  // The cache file attached to the connection is refused as value_index_file
  // would be: the file gets a temporary index.
  ASSERT_EQ(sqlite3_exec(db_, fmt::format("ATTACH '{}' AS kept", kept).c_str(), nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  EXPECT_EQ(ValueIndexCacheFile(cache_dir, path_, db_), "");
  {
    ValueIndexCache cache;
    cache.Get(db_, options);
    EXPECT_EQ(cache.Progress()[0]["index_file"], "");
  }
  ASSERT_EQ(sqlite3_exec(db_, "DETACH kept", nullptr, nullptr, nullptr), SQLITE_OK);
  // No cache folder: a temporary index, as before.
  {
    ValueIndexCache cache;
    options.cache_dir.clear();
    cache.Get(db_, options);
    EXPECT_EQ(cache.Progress()[0]["index_file"], "");
  }
}

// A file of the user's, as it was: its bytes.
std::string Contents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool IsSqliteFile(const std::string& path) {
  return Contents(path).rfind(std::string("SQLite format 3\0", 16), 0) == 0;
}

TEST_F(ValueIndexFileTest, AKeptIndexNeverWritesThroughALinkAtItsNames) {
  namespace fs = std::filesystem;
  const std::string cache_dir = (dir_ / "cache" / "values").string();
  const std::string kept = ValueIndexCacheFile(cache_dir, path_, db_);
  ASSERT_FALSE(kept.empty());
  // Files of the user's: an empty one (which a 2 MB index would fill), one
  // with text, one more; links to them stand at the index's own names.
  const fs::path empty = dir_ / "empty.txt", diary = dir_ / "diary.txt", other = dir_ / "other.txt";
  for (bool background : {true, false}) {
    SCOPED_TRACE(background ? "read in the background" : "read by the asking connection");
    { std::ofstream(empty).flush(); }
    { std::ofstream(diary) << "dear diary"; }
    { std::ofstream(other) << "x"; }
    for (const char* side : {"", "-journal", "-wal", "-shm"}) fs::remove(kept + side);
    fs::create_symlink(empty, kept);
    fs::create_symlink(diary, kept + "-wal");
    fs::create_hard_link(other, kept + "-shm");
    {
      ValueIndexCache cache;
      ValueIndexOptions options;
      options.cache_dir = cache_dir;
      options.background = background;
      options.wait_ms = 0;
      std::shared_ptr<const ValueLookup> index;
      if (background) {
        index = Complete(cache, options);
      } else {
        ASSERT_TRUE(cache.Build(db_, options, "main").ok());
        index = cache.Get(db_, options);
      }
      nlohmann::json p = cache.Progress()[0];
      EXPECT_EQ(p["index_file"], kept);
      const std::string told = p.value("kept_index", "");
      EXPECT_NE(told.find("was a symbolic link"), std::string::npos) << p.dump();
      EXPECT_NE(told.find("was a file with other names"), std::string::npos) << p.dump();
      EXPECT_EQ(Hints(*index, "What did Customer 49999 buy?"),
                (std::vector<std::string>{"customer.name=Customer 49999"}));
    }
    // The user's files are as they were; the index is a file of its own.
    EXPECT_EQ(Contents(empty), "");
    EXPECT_EQ(Contents(diary), "dear diary");
    EXPECT_EQ(Contents(other), "x");
    EXPECT_FALSE(fs::is_symlink(kept));
    EXPECT_TRUE(IsSqliteFile(kept));
  }
}

TEST_F(ValueIndexFileTest, AKeptIndexFolderQueryPilotDidNotMakeIsNeitherUsedNorPruned) {
  namespace fs = std::filesystem;
  // The user's own folder, holding a month-old file named like a kept index.
  const fs::path user = dir_ / "user";
  fs::create_directories(user);
  fs::permissions(user, fs::perms::owner_all);
  const fs::path theirs = user / "gone.db-0000000000000001.qpindex";
  { std::ofstream(theirs) << "mine"; }
  fs::last_write_time(theirs, fs::file_time_type::clock::now() - std::chrono::hours(24) * 40);
  const fs::path cache = dir_ / "cache" / "values";
  fs::create_directories(cache.parent_path());
  struct Case {
    const char* name;
    std::function<void()> make;
    const char* says;
  } cases[] = {
      {"a link to the user's folder", [&] { fs::create_directory_symlink(user, cache); },
       "is a symbolic link"},
      {"a folder open to others",
       [&] {
         fs::create_directory(cache);
         fs::permissions(cache, fs::perms::owner_all | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read |
                                    fs::perms::others_exec);
         fs::copy_file(theirs, cache / theirs.filename());
         fs::last_write_time(cache / theirs.filename(), fs::last_write_time(theirs));
       },
       "is open to others"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fs::remove_all(cache);
    c.make();
    EXPECT_EQ(PruneValueIndexCache(cache.string(), kValueIndexCacheDays), 0u);
    std::string why;
    EXPECT_EQ(ValueIndexCacheFile(cache.string(), path_, db_, &why), "");
    EXPECT_NE(why.find(c.says), std::string::npos) << why;
    ValueIndexCache index;
    ValueIndexOptions options;
    options.cache_dir = cache.string();
    options.wait_ms = 0;
    index.Get(db_, options);
    nlohmann::json p = index.Progress()[0];
    EXPECT_EQ(p["index_file"], "");  // a temporary index, and why
    EXPECT_NE(p.value("kept_index", "").find(c.says), std::string::npos) << p.dump();
    EXPECT_EQ(p.value("kept_index", "").rfind("not used: ", 0), 0u) << p.dump();
    // Nothing of the folder's was removed, nor anything written there.
    EXPECT_EQ(Contents(cache / theirs.filename()), "mine");
    EXPECT_EQ(std::distance(fs::directory_iterator(cache), fs::directory_iterator()), 1);
  }
  EXPECT_EQ(Contents(theirs), "mine");
}

TEST_F(ValueIndexFileTest, AnUnusableKeptIndexIsMadeAnewAndSaidSo) {
  namespace fs = std::filesystem;
  const std::string cache_dir = (dir_ / "cache" / "values").string();
  const std::string kept = ValueIndexCacheFile(cache_dir, path_, db_);
  ASSERT_FALSE(kept.empty());
  struct Case {
    const char* name;
    std::function<void()> spoil;
    const char* says;
  } cases[] = {
      {"not a database", [&] { std::ofstream(kept, std::ios::binary) << std::string(8192, 'x'); },
       "could not be used"},
      {"another database",
       [&] {
         sqlite3* other = nullptr;
         ASSERT_EQ(sqlite3_open(kept.c_str(), &other), SQLITE_OK);
         ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE notes(x)", nullptr, nullptr, nullptr),
                   SQLITE_OK);
         sqlite3_close(other);
       },
       "not a QueryPilot value index"},
      {"corrupt further in",
       [&] {
         {
           ValueIndexCache cache;
           ValueIndexOptions options;
           options.cache_dir = cache_dir;
           options.background = false;
           ASSERT_TRUE(cache.Build(db_, options, "main").ok());
         }
         ASSERT_GT(fs::file_size(kept), 40u * 4096);
         std::fstream f(kept, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(30 * 4096);
         f << std::string(8 * 4096, '\xff');
       },
       "made anew"},
  };
  for (const auto& [c, background] : {std::pair<const Case&, bool>{cases[0], false},
                                      {cases[0], true},
                                      {cases[1], false},
                                      {cases[2], false},
                                      {cases[2], true}}) {
    SCOPED_TRACE(std::string(c.name) + (background ? ", read in the background" : ""));
    for (const char* side : {"", "-journal", "-wal", "-shm"}) fs::remove(kept + side);
    c.spoil();
    ValueIndexCache cache;
    ValueIndexOptions options;
    options.cache_dir = cache_dir;
    options.background = background;
    options.wait_ms = 0;
    // agent_index(): read whole, what is corrupt anywhere found.
    Result<nlohmann::json> built = cache.Build(db_, options, "main");
    ASSERT_TRUE(built.ok()) << built.status().message();
    EXPECT_EQ((*built)[0]["index_file"], kept);
    EXPECT_EQ((*built)[0]["state"], "complete");
    const std::string told = (*built)[0].value("kept_index", "");
    EXPECT_NE(told.find("made anew"), std::string::npos) << built->dump();
    EXPECT_NE(told.find(c.says), std::string::npos) << built->dump();
    EXPECT_EQ(cache.Progress()[0].value("kept_index", ""),
              told);  // and agent_config('value_index')
    EXPECT_EQ(Hints(*cache.Get(db_, options), "What did Customer 49999 buy?"),
              (std::vector<std::string>{"customer.name=Customer 49999"}));
    // What is there now is a sound index, not the file it replaced.
    auto store = ValueStore::Open(kept).value();
    EXPECT_TRUE(store->Verify().ok()) << store->Verify().message();
    EXPECT_EQ(store->Tables(path_).size(), 1u);
  }
}
// A small table read while the machine was busy (a few cells, slow) must not
// price the next tables out of a deadline that has room for them: before,
// such a first chunk left a memory database's value index incomplete on a
// busy machine (ValueIndexTest.ColumnsOfFewShortCodesAreShownWithTheirCodes
// failed about once in 25 runs under AddressSanitizer).
TEST(ChunkSizer, AFewSlowCellsDoNotPriceTheNextTablesOutOfTheDeadline) {
  const auto now = std::chrono::steady_clock::now();
  ScanLimits limits;
  limits.deadline = now + std::chrono::milliseconds(480);
  ChunkSizer sizer(limits);
  EXPECT_EQ(sizer.Rows(3, now), ChunkSizer::kFirstChunkRows);
  sizer.Measured(20.0, 3);  // three rows of one column: 6.7 ms a cell
  EXPECT_EQ(sizer.Rows(3, now), ChunkSizer::kFirstChunkRows);
  // A chunk big enough to measure, as dear a cell: 16 rows of 3 columns
  // (320 ms) do not fit in half of the 480 ms left, so none is read.
  sizer.Measured(20.0 / 3 * 768, 768);
  EXPECT_EQ(sizer.Rows(3, now), 0u);
  // Cheap cells: as many rows as fit in half the time left.
  ChunkSizer cheap(limits);
  cheap.Measured(48.0, 768);  // 1/16 ms a cell: 240 ms hold 1280 rows of 3 columns
  EXPECT_EQ(cheap.Rows(3, now), 1280u);
  // No deadline and no chunk time: the limits' chunk size.
  ScanLimits none;
  ChunkSizer unbounded(none);
  unbounded.Measured(1000.0, 768);
  EXPECT_EQ(unbounded.Rows(3, now), none.chunk_rows);
}

}  // namespace
}  // namespace querypilot
