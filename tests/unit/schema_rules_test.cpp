// The host's rules over a schema read on QueryPilot's own connection: applied
// again at every SchemaCache::Get, views included.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agent/knowledge/schema.h"

namespace querypilot {
namespace {

// The host's authorizer of each case: what it answers for reading users.ssn.
int AnswerForSsn(void* answer, int action, const char* table, const char* column, const char*,
                 const char*) {
  if (action == SQLITE_READ && table && column && std::string(table) == "users" &&
      std::string(column) == "ssn") {
    return *static_cast<int*>(answer);
  }
  return SQLITE_OK;
}

class SchemaRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() / ("qp-rules-" + std::to_string(getpid()) + ".db"))
            .string();
    std::filesystem::remove(path_);
    ASSERT_EQ(sqlite3_open(path_.c_str(), &host_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(host_,
                           "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT);"
                           "INSERT INTO users VALUES (1, 'Ann', '111-22-3333');"
                           "CREATE VIEW people AS SELECT name, ssn FROM users;"
                           "CREATE VIEW known AS SELECT name FROM users WHERE ssn LIKE '1%';",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &reader_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  }
  void TearDown() override {
    sqlite3_close(reader_);
    sqlite3_close(host_);
    std::filesystem::remove(path_);
  }
  // Each table's columns as the schema shows them, "table(a,b)" in order,
  // and whether an ssn value is among the sample rows.
  static std::string Shown(const Schema& schema, bool* ssn_sampled) {
    std::string out;
    *ssn_sampled = false;
    for (const TableInfo& t : schema.tables) {
      out += t.name + "(";
      for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + t.columns[i].name;
      out += ") ";
      for (const auto& row : t.sample_rows) {
        for (const std::string& v : row) *ssn_sampled = *ssn_sampled || v == "'111-22-3333'";
      }
    }
    return out;
  }
  // `schema` with the sample rows of every table read (SchemaCache::
  // WithSamples), as a prompt that shows every table has them.
  static std::shared_ptr<const Schema> AllSampled(SchemaCache& cache,
                                                  const std::shared_ptr<const Schema>& schema,
                                                  sqlite3* db, sqlite3* host) {
    std::vector<SchemaCache::TableName> all;
    for (const TableInfo& t : schema->tables) {
      if (t.samples_pending) all.emplace_back(t.database, t.name);
    }
    if (all.empty()) return schema;
    int64_t budget_end_ns = 0;
    auto read = cache.WithSamples(*schema, all, db, 3, host, &budget_end_ns);
    EXPECT_TRUE(read.ok()) << read.status().message();
    if (!read.ok()) return schema;
    for (const TableInfo& t : (*read)->tables) EXPECT_FALSE(t.samples_pending) << t.name;
    return *read;
  }
  std::string path_;
  sqlite3* host_ = nullptr;
  sqlite3* reader_ = nullptr;
};

TEST_F(SchemaRulesTest, TheHostsRulesAtEachGetDecideWhatIsShownViewsIncluded) {
  struct Case {
    int answer;  // for users.ssn; -1: no authorizer
    const char* shown;
    bool ssn_sampled;
  } cases[] = {
      {-1, "known(name) people(name,ssn) users(id,name,ssn) ", true},
      {SQLITE_IGNORE, "people(name) users(id,name) ", false},
      // A view whose body reads a denied column cannot be read at all, as
      // the host's own SELECT name FROM people is denied.
      {SQLITE_DENY, "users(id,name) ", false},
      {SQLITE_OK, "known(name) people(name,ssn) users(id,name,ssn) ", true},
  };
  SchemaCache cache;  // one cache: the rules change between reads
  int answer = SQLITE_OK;
  for (const Case& c : cases) {
    if (c.answer < 0) {
      sqlite3_set_authorizer(host_, nullptr, nullptr);
    } else {
      answer = c.answer;
      sqlite3_set_authorizer(host_, AnswerForSsn, &answer);
    }
    auto got = cache.Get(reader_, 3, host_);
    ASSERT_TRUE(got.ok()) << got.status().message();
    // The samples read for the first case are kept: the next Gets show
    // them, under the rules as they are then.
    const std::shared_ptr<const Schema> schema = AllSampled(cache, *got, reader_, host_);
    bool ssn_sampled = false;
    EXPECT_EQ(Shown(*schema, &ssn_sampled), c.shown) << c.answer;
    EXPECT_EQ(ssn_sampled, c.ssn_sampled) << c.answer;
    EXPECT_EQ(schema->rendered.find("111-22-3333") != std::string::npos, c.ssn_sampled);
    if (&c != &cases[0]) {
      EXPECT_EQ(schema, *got) << "no sample left to read: " << c.answer;
    }
  }
  EXPECT_EQ(cache.introspections(), 1);  // the files were read once
  EXPECT_EQ(cache.tables_sampled(), 3);  // and the samples of each table once
}

// A schema a prompt showed with no rules in force, checked again under the
// rules each case sets (a paused asynchronous run taken up again), with and
// without QueryPilot's own connection to compare with.
TEST_F(SchemaRulesTest, ASchemaShownBeforeIsCheckedAgainUnderTheRulesNow) {
  struct Case {
    int answer;  // for users.ssn; -1: no authorizer
    bool with_reader;
    const char* shown;
    bool ssn_sampled;
  } cases[] = {
      {-1, true, "known(name) people(name,ssn) users(id,name,ssn) ", true},
      {SQLITE_IGNORE, true, "people(name) users(id,name) ", false},
      {SQLITE_DENY, true, "users(id,name) ", false},
      {SQLITE_DENY, false, "users(id,name) ", false},
      // Without a connection to compare with, a view's blanked column is
      // not told apart (the table's is), and no view's values are shown.
      {SQLITE_IGNORE, false, "known(name) people(name,ssn) users(id,name) ", false},
      {-1, false, "known(name) people(name,ssn) users(id,name,ssn) ", true},
  };
  sqlite3_set_authorizer(host_, nullptr, nullptr);
  SchemaCache cache;
  auto got = cache.Get(reader_, 3, host_);
  ASSERT_TRUE(got.ok()) << got.status().message();
  const std::shared_ptr<const Schema> before = AllSampled(cache, *got, reader_, host_);
  int answer = SQLITE_OK;
  for (const Case& c : cases) {
    if (c.answer < 0) {
      sqlite3_set_authorizer(host_, nullptr, nullptr);
    } else {
      answer = c.answer;
      sqlite3_set_authorizer(host_, AnswerForSsn, &answer);
    }
    Result<Schema> now = UnderHostRulesNow(*before, host_, c.with_reader ? reader_ : nullptr);
    ASSERT_TRUE(now.ok()) << now.status().message();
    bool ssn_sampled = false;
    EXPECT_EQ(Shown(*now, &ssn_sampled), c.shown) << c.answer << " " << c.with_reader;
    EXPECT_EQ(ssn_sampled, c.ssn_sampled) << c.answer << " " << c.with_reader;
  }
}

// What the host refuses now: reading any column of the table named.
int RefuseTable(void* table, int action, const char* name, const char*, const char*, const char*) {
  const std::string& refused = *static_cast<std::string*>(table);
  return action == SQLITE_READ && name && refused == name ? SQLITE_DENY : SQLITE_OK;
}

bool Lists(const Schema& schema, const std::string& table) {
  for (const TableInfo& t : schema.tables) {
    if (t.name == table) return true;
  }
  return false;
}

// On a schema of many tables a warm Get() checks again only what the last
// whole check found refused, and Confirm() the tables a prompt shows: a table
// refused since by an authorizer answering otherwise (no call tells of it) is
// found as soon as a prompt would show it, and the next schema is all checked.
TEST_F(SchemaRulesTest, AWarmGetChecksOnlyWhatThePromptShowsAndRefusedTables) {
  std::string sql;
  for (int i = 0; i < 40; ++i)
    sql += "CREATE TABLE t" + std::to_string(i) + "(id INTEGER, v TEXT);";
  ASSERT_EQ(sqlite3_exec(host_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  std::string refused;
  sqlite3_set_authorizer(host_, RefuseTable, &refused);
  SchemaCache cache;
  bool all = false;
  auto first = cache.Get(reader_, 0, host_, &all);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const int64_t tables = static_cast<int64_t>((*first)->tables.size());
  EXPECT_EQ(tables, 43);  // known, people, users and t0..t39
  EXPECT_FALSE(all);      // the first Get checks none: a prompt's tables are confirmed
  EXPECT_EQ(cache.tables_checked(), 0);

  // Nothing refused, nothing changed: no table is checked but those shown.
  auto warm = cache.Get(reader_, 0, host_, &all);
  ASSERT_TRUE(warm.ok());
  EXPECT_FALSE(all);
  EXPECT_EQ(cache.tables_checked(), 0);
  auto confirmed = cache.Confirm(**warm, {{"main", "t1"}, {"main", "t2"}}, reader_, host_);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_TRUE(*confirmed);
  EXPECT_EQ(cache.tables_checked(), 2);

  // t1 refused now: the warm schema still lists it, unchecked, but a prompt
  // showing it is not confirmed, and the schema asked for then is all checked.
  refused = "t1";
  warm = cache.Get(reader_, 0, host_, &all);
  ASSERT_TRUE(warm.ok());
  EXPECT_FALSE(all);
  confirmed = cache.Confirm(**warm, {{"main", "t2"}}, reader_, host_);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_TRUE(*confirmed);  // t1 is not shown
  confirmed = cache.Confirm(**warm, {{"main", "t2"}, {"main", "t1"}}, reader_, host_);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_FALSE(*confirmed);
  auto whole = cache.Get(reader_, 0, host_, &all);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(all);  // a check found a table changed: every table is checked
  EXPECT_FALSE(Lists(**whole, "t1"));
  EXPECT_TRUE(Lists(**whole, "t2"));

  // A refused table is checked at every Get(): allowed again, it is shown
  // again at once, and every table is checked with it.
  const int64_t before = cache.tables_checked();
  warm = cache.Get(reader_, 0, host_, &all);
  ASSERT_TRUE(warm.ok());
  EXPECT_FALSE(all);
  EXPECT_EQ(cache.tables_checked(), before + 1);
  refused.clear();
  warm = cache.Get(reader_, 0, host_, &all);
  ASSERT_TRUE(warm.ok());
  EXPECT_TRUE(all);
  EXPECT_TRUE(Lists(**warm, "t1"));
  EXPECT_EQ(cache.introspections(), 1);  // the files were read once
}

// The first Get() of a cache that will be confirmed checks no table, however
// many there are: the host's rules, in force from the start, are found by
// Confirm() on a table the prompt shows, and the schema asked for then is
// all checked. A table the prompt does not show is never checked, and never
// shown.
TEST_F(SchemaRulesTest, AColdGetChecksNoTableAndConfirmFindsWhatTheRulesLeaveOut) {
  struct Case {
    int answer;         // for users.ssn, from before the first Get
    const char* shown;  // by the schema all checked
  } cases[] = {
      {SQLITE_IGNORE, "notes(body) people(name) users(id,name) "},
      {SQLITE_DENY, "notes(body) users(id,name) "},
  };
  ASSERT_EQ(sqlite3_exec(host_, "CREATE TABLE notes(body TEXT)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  for (const Case& c : cases) {
    int answer = c.answer;
    sqlite3_set_authorizer(host_, AnswerForSsn, &answer);
    SchemaCache cache;
    bool all = true;
    auto cold = cache.Get(reader_, 3, host_, &all);
    ASSERT_TRUE(cold.ok()) << cold.status().message();
    EXPECT_FALSE(all) << c.answer;
    EXPECT_EQ(cache.tables_checked(), 0) << c.answer;
    // A prompt that shows neither users nor a view over it stands.
    auto confirmed = cache.Confirm(**cold, {{"main", "notes"}}, reader_, host_);
    ASSERT_TRUE(confirmed.ok());
    EXPECT_TRUE(*confirmed) << c.answer;
    // One that shows users is not confirmed: its ssn is left out now. (The
    // tables shown whole are checked together first: users spoils that
    // check for notes too, and each is then checked by itself.)
    confirmed = cache.Confirm(**cold, {{"main", "notes"}, {"main", "users"}}, reader_, host_);
    ASSERT_TRUE(confirmed.ok());
    EXPECT_FALSE(*confirmed) << c.answer;
    auto whole = cache.Get(reader_, 3, host_, &all);
    ASSERT_TRUE(whole.ok());
    EXPECT_TRUE(all) << c.answer;
    bool ssn_sampled = true;
    EXPECT_EQ(Shown(**whole, &ssn_sampled), c.shown) << c.answer;
    EXPECT_FALSE(ssn_sampled) << c.answer;
    sqlite3_set_authorizer(host_, nullptr, nullptr);
  }
}

// On the host's own connection (no reader: a file in WAL mode), many tables
// are checked by one compiled statement: a table with a column the rules
// deny or blank, or that they refuse whole, among many that they let be
// read, is shown as the rules say, its samples too, at the first Get and at
// the next.
TEST_F(SchemaRulesTest, ManyTablesOnTheHostAreShownAsTheRulesSay) {
  std::string sql;
  for (int i = 0; i < 120; ++i)
    sql += "CREATE TABLE m" + std::to_string(i) + "(id INTEGER PRIMARY KEY, a TEXT, b TEXT);" +
           "INSERT INTO m" + std::to_string(i) + " VALUES (1, 'a-value', 'b-value');";
  ASSERT_EQ(sqlite3_exec(host_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  auto rules = [](void*, int action, const char* table, const char* column, const char*,
                  const char*) {
    if (action != SQLITE_READ || !table || !column) return SQLITE_OK;
    const std::string t = table, c = column;
    if (t == "m7" && c == "a") return SQLITE_DENY;
    if (t == "m70" && c == "b") return SQLITE_IGNORE;
    if (t == "m99") return SQLITE_DENY;
    return SQLITE_OK;
  };
  sqlite3_set_authorizer(host_, rules, nullptr);
  SchemaCache cache;
  for (int get = 0; get < 2; ++get) {
    bool all_checked = false;
    auto got = cache.Get(host_, 3, host_, &all_checked);
    ASSERT_TRUE(got.ok()) << got.status().message();
    const std::shared_ptr<const Schema> schema = AllSampled(cache, *got, host_, host_);
    std::map<std::string, std::string> shown;  // columns, then the sample values
    for (const TableInfo& t : schema->tables) {
      std::string& s = shown[t.name];
      for (const ColumnInfo& c : t.columns) s += c.name + ",";
      for (const auto& row : t.sample_rows) {
        for (const std::string& v : row) s += v + ",";
      }
    }
    EXPECT_EQ(shown.size(), 3u + 120u - 1u) << get;  // the fixture's three, less m99
    EXPECT_EQ(shown.count("m99"), 0u);
    EXPECT_EQ(shown["m7"], "id,b,1,'b-value',");
    EXPECT_EQ(shown["m70"], "id,a,1,'a-value',");
    EXPECT_EQ(shown["m8"], "id,a,b,1,'a-value','b-value',");
    EXPECT_EQ(shown["m119"], "id,a,b,1,'a-value','b-value',");
  }
}

}  // namespace
}  // namespace querypilot
