// Linking with sample rows read only for the tables a prompt shows
// (SamplesToRead, SchemaCache::WithSamples) gives, byte for byte, what
// linking with every table's samples gives: for random schemas, questions,
// hints, descriptions and budgets, and for schemas read from SQLite.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agent/knowledge/descriptions.h"
#include "agent/knowledge/linking.h"
#include "agent/knowledge/schema.h"

namespace querypilot {
namespace {

// Words that names, descriptions and questions are made of: some are words
// of the notes sample rows add ("numbers stored as text ... to compare or
// sort"), or alike to them (store, stores, sorted), so that what the notes
// add to the vocabulary is met.
const std::vector<std::string> kWords = {
    "customer", "order",   "invoice", "payment",  "product", "store",   "stores", "item",
    "shipment", "record",  "text",    "note",     "sort",    "sorted",  "price",  "amount",
    "status",   "city",    "country", "employee", "course",  "student", "grade",  "score",
    "rank",     "level",   "stock",   "shelf",    "year",    "code",    "label",  "kind",
    "integer",  "numbers", "real",    "compare",  "cast",    "pages",   "book",   "author"};

// Values a sample row may hold, as SQL literals: numbers stored as text
// (whole, decimal, with an exponent), text, numbers, NULL.
const std::vector<std::string> kValues = {
    "NULL",  "'370'", "'1.5'", "'1e5'", "'-2'",         "'Ann'",
    "'abc'", "12",    "3.5",   "'x'",   "'2024-01-01'", "'a longer text value here'"};

// A random schema: `base` without samples, the samples of each table aside.
struct Generated {
  Schema base;
  std::vector<std::vector<std::vector<std::string>>> samples;
  std::vector<bool> sampled;  // whether the table's samples are read at all
  std::vector<Description> descriptions;
};

Generated Generate(std::mt19937& rng) {
  auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  Generated g;
  const size_t tables = std::uniform_int_distribution<size_t>(1, 60)(rng);
  std::vector<std::string> databases = {"main"};
  if (chance(0.25)) databases.push_back("aux");
  if (chance(0.1)) databases.push_back("world");
  for (size_t i = 0; i < tables; ++i) {
    TableInfo t;
    t.name = chance(0.5) ? fmt::format("{}_{}", pick(kWords), i)
                         : fmt::format("{}_{}_{}", pick(kWords), pick(kWords), i);
    t.database = databases[std::uniform_int_distribution<size_t>(0, databases.size() - 1)(rng)];
    t.qualified = t.database != "main";
    t.is_view = chance(0.1);
    const size_t columns = std::uniform_int_distribution<size_t>(chance(0.05) ? 0 : 1, 8)(rng);
    for (size_t c = 0; c < columns; ++c) {
      ColumnInfo col;
      col.name = c == 0 && chance(0.7) ? "id" : fmt::format("{}_{}", pick(kWords), c);
      col.type = std::vector<std::string>{"TEXT", "INTEGER", "REAL", ""}[c % 4];
      col.primary_key = c == 0 && col.name == "id";
      t.columns.push_back(col);
    }
    if (i > 0 && !t.columns.empty() && chance(0.4)) {
      const TableInfo& parent = g.base.tables[std::uniform_int_distribution<size_t>(0, i - 1)(rng)];
      if (parent.database == t.database) {
        t.foreign_keys.push_back({t.columns.back().name, parent.name, ""});
      }
    }
    std::vector<std::vector<std::string>> rows(
        t.columns.empty() ? 0 : std::uniform_int_distribution<size_t>(0, 3)(rng));
    // Some columns hold numbers as text in every row, so that their notes say so.
    std::vector<bool> numeric(t.columns.size());
    for (size_t c = 0; c < numeric.size(); ++c) numeric[c] = chance(0.3);
    for (auto& row : rows) {
      for (size_t c = 0; c < t.columns.size(); ++c) {
        row.push_back(numeric[c] ? std::vector<std::string>{"'370'", "'1.5'", "'1e5'", "NULL",
                                                            "'12345'", "'1e55'"}[(c + i) % 6]
                                 : pick(kValues));
      }
    }
    g.samples.push_back(std::move(rows));
    g.sampled.push_back(!t.columns.empty() && !chance(0.1));
    if (chance(0.15))
      g.descriptions.push_back({t.database, t.name, "", pick(kWords) + " " + pick(kWords)});
    for (const ColumnInfo& c : t.columns) {
      if (chance(0.08))
        g.descriptions.push_back(
            {t.database, t.name, c.name, pick(kWords) + " of the " + pick(kWords)});
    }
    g.base.tables.push_back(std::move(t));
  }
  return g;
}

// The schema an ask links: its tables with the samples of those `read` marks
// (and the notes they add), the others pending where they are sampled at all,
// then the descriptions, rendered (as Agent::BuildFirstMessages makes it).
std::shared_ptr<const Schema> Make(const Generated& g, const std::vector<bool>& read) {
  auto schema = std::make_shared<Schema>(g.base);
  for (size_t i = 0; i < schema->tables.size(); ++i) {
    TableInfo& t = schema->tables[i];
    if (!g.sampled[i]) continue;
    if (read[i]) {
      t.sample_rows = g.samples[i];
      NoteNumbersAsText(&t);
    } else {
      t.samples_pending = true;
    }
  }
  RenderInto(schema.get());
  return WithDescriptions(schema, g.descriptions);
}

std::string Question(std::mt19937& rng) {
  static const std::vector<std::string> kGlue = {"how", "many",   "the",   "of",  "with",
                                                 "by",  "what",   "which", "and", "per",
                                                 "in",  "number", "total"};
  static const std::vector<std::string> kTies = {
      "numbers", "stored", "text",  "sort",   "integer", "3rd",    "1e5",   "stores",
      "compare", "real",   "t0000", "x12345", "1e55",    "12345x", "12345", "1234x"};
  std::string q;
  const size_t words = std::uniform_int_distribution<size_t>(1, 9)(rng);
  for (size_t i = 0; i < words; ++i) {
    const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
    const std::vector<std::string>& from = kind < 5 ? kWords : kind < 9 ? kGlue : kTies;
    q += from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)] + " ";
  }
  return q + "?";
}

struct Linked {
  LinkedSchema linked;
  std::shared_ptr<const Schema> schema;  // what linked.kept points into
  size_t rounds = 0, read = 0;           // linkings, tables whose samples were read
};

// Linked as an ask links: SamplesToRead, then the samples it names read, until
// it names none. `fill` makes the schema with the samples of more tables.
template <typename Fill>
Linked LinkLazily(std::shared_ptr<const Schema> schema, const std::string& question,
                  const std::vector<ValueHint>& hints, size_t budget, Fill fill) {
  Linked out;
  for (;;) {
    ++out.rounds;
    std::vector<size_t> to_read =
        SamplesToRead(*schema, schema->rendered, question, hints, budget, &out.linked);
    if (to_read.empty()) break;
    for (size_t i : to_read) EXPECT_TRUE(schema->tables[i].samples_pending);
    out.read += to_read.size();
    schema = fill(*schema, to_read);
    if (out.rounds > schema->tables.size() + 2) {
      ADD_FAILURE() << "no fixpoint";
      break;
    }
  }
  out.schema = schema;
  return out;
}

std::vector<std::string> Names(const std::vector<const TableInfo*>& tables) {
  std::vector<std::string> out;
  for (const TableInfo* t : tables) out.push_back(t->database + "." + t->name);
  return out;
}

TEST(LazyLinking, RandomSchemasLinkAsWithEverySampleRead) {
  std::mt19937 rng(20261129);
  size_t cases = 0, pruned = 0, several_rounds = 0, pending_total = 0, read_total = 0;
  for (int n = 0; n < 500; ++n) {
    const Generated g = Generate(rng);
    const size_t tables = g.base.tables.size();
    const std::shared_ptr<const Schema> eager = Make(g, std::vector<bool>(tables, true));
    const size_t full = EstimateTokens(eager->rendered);
    for (int ask = 0; ask < 4; ++ask) {
      const std::string question = Question(rng);
      std::vector<ValueHint> hints;
      const size_t hinted = std::uniform_int_distribution<size_t>(0, 2)(rng);
      for (size_t h = 0; h < hinted; ++h) {
        const TableInfo& t =
            g.base.tables[std::uniform_int_distribution<size_t>(0, tables - 1)(rng)];
        if (!t.columns.empty()) hints.push_back({t.name, t.columns[0].name, "paid", ""});
      }
      const size_t budget =
          std::uniform_int_distribution<int>(0, 19)(rng) == 0
              ? 0
              : std::uniform_int_distribution<size_t>(1, full + full / 4 + 1)(rng);
      const LinkedSchema want = LinkSchema(*eager, eager->rendered, question, hints, budget);
      std::vector<bool> read(tables, false);
      const std::shared_ptr<const Schema> cold = Make(g, read);
      const bool ties = QuestionMayTieToSampleNotes(question);
      if (!ties) {
        // What the samples add changes no table's relevance.
        const std::vector<TableScore> lazy_rank = RankTables(*cold, question, hints);
        const std::vector<TableScore> eager_rank = RankTables(*eager, question, hints);
        ASSERT_EQ(lazy_rank.size(), eager_rank.size());
        for (size_t i = 0; i < lazy_rank.size(); ++i) {
          EXPECT_EQ(lazy_rank[i].table - cold->tables.data(),
                    eager_rank[i].table - eager->tables.data());
          EXPECT_EQ(lazy_rank[i].score, eager_rank[i].score) << question;
        }
        const HintRelevance lazy_hints = RankHintsFor(*cold, question);
        const HintRelevance eager_hints = RankHintsFor(*eager, question);
        for (const ValueHint& h : hints) EXPECT_EQ(lazy_hints(h), eager_hints(h)) << question;
      }
      const Linked got = LinkLazily(cold, question, hints, budget,
                                    [&](const Schema&, const std::vector<size_t>& more) {
                                      for (size_t i : more) read[i] = true;
                                      return Make(g, read);
                                    });
      ++cases;
      pruned += want.pruned;
      several_rounds += got.rounds > 2;
      if (budget > 0 && EstimateTokens(cold->rendered) > budget && !ties) {
        for (const TableInfo& t : cold->tables) pending_total += t.samples_pending;
        read_total += got.read;
      }
      ASSERT_EQ(got.linked.rendered, want.rendered)
          << "case " << n << " question '" << question << "' budget " << budget;
      EXPECT_EQ(got.linked.pruned, want.pruned);
      EXPECT_EQ(got.linked.tokens, want.tokens);
      EXPECT_EQ(Names(got.linked.kept), Names(want.kept));
      // The tables kept are those of the schema it returns, all read.
      for (const TableInfo* t : got.linked.kept) {
        EXPECT_TRUE(t >= got.schema->tables.data() &&
                    t < got.schema->tables.data() + got.schema->tables.size());
        EXPECT_FALSE(t->samples_pending);
      }
    }
  }
  // The cases met what the proof covers: pruned schemas, several rounds, and
  // (where the schema without samples is over the budget, for a question that
  // does not tie to what samples add) far fewer samples read than there are
  // tables.
  EXPECT_GT(pruned, cases / 4);
  EXPECT_GT(several_rounds, 20u);
  EXPECT_LT(read_total * 2, pending_total) << read_total << " of " << pending_total;
}

// Each pending table's rendering is no longer with its samples read: the
// costs linking takes for pending tables are lower bounds.
TEST(LazyLinking, APendingTablesCostIsALowerBound) {
  std::mt19937 rng(7);
  for (int n = 0; n < 300; ++n) {
    const Generated g = Generate(rng);
    const std::shared_ptr<const Schema> cold =
        Make(g, std::vector<bool>(g.base.tables.size(), false));
    const std::shared_ptr<const Schema> eager =
        Make(g, std::vector<bool>(g.base.tables.size(), true));
    for (size_t i = 0; i < cold->tables.size(); ++i)
      EXPECT_LE(cold->table_tokens[i], eager->table_tokens[i]);
    EXPECT_LE(cold->rendered.size(), eager->rendered.size());
  }
}

TEST(LazyLinking, QuestionsThatMayTieToWhatSamplesAdd) {
  struct Case {
    const char* question;
    bool ties;
  } cases[] = {
      {"How many books are there?", false},
      {"What is the number of students per course?", false},  // "number" is a stop word
      {"Which numbers are stored as text?", true},
      {"Sort the authors by name", true},
      {"List the sorted grades", true},
      {"Which stores sell the most?", true},  // alike to "stored"
      {"Who came 3rd in the race?", false},   // no number's term is alike to 3rd
      {"How many rows does table t0000 have?", false},
      {"Find the price of 1e5 items", true},           // a number a note may show
      {"Find the price of 12345x items", true},        // alike to 12345 by its beginning
      {"Find the price of 1234x items", true},         // one edit from 12345
      {"Find the price of 100 items in 2024", false},  // numbers alone are no terms
  };
  for (const Case& c : cases)
    EXPECT_EQ(QuestionMayTieToSampleNotes(c.question), c.ties) << c.question;
}

// Schemas read from SQLite through SchemaCache: Get() reads no samples, and
// WithSamples() reads those SamplesToRead names; linked so, the prompt is
// the one linked from IntrospectSchema's schema with every sample read.
// A schema of 80 ledgers, books with pages as text, customers and a view.
std::string LedgersSql() {
  std::string sql =
      "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, status TEXT);"
      "INSERT INTO customers VALUES (1, 'Ann', 'paid'), (2, 'Bo', 'open');"
      "CREATE TABLE books(id INTEGER PRIMARY KEY, title TEXT, pages TEXT, author_id INTEGER "
      "REFERENCES customers(id));"
      "INSERT INTO books VALUES (1, 'Dune', '412', 1), (2, 'Emma', '370', 2);"
      "CREATE VIEW paid AS SELECT name FROM customers WHERE status = 'paid';";
  for (int i = 0; i < 80; ++i) {
    sql += fmt::format(
        "CREATE TABLE ledger_{0}(id INTEGER PRIMARY KEY, name TEXT, amount TEXT, "
        "customer_id INTEGER REFERENCES customers(id));"
        "INSERT INTO ledger_{0} VALUES (1, 'entry {0}', '{0}.5', 1), (2, 'other', '7', 2);",
        i);
  }
  return sql;
}

// Linked lazily on `db` (`host` as for SchemaCache::Get), each question at
// each budget, against the schema IntrospectSchema reads with every sample.
// Sample reads are bounded in time (kSampleReadMs, kSampleBudgetMs): on a
// starved machine a read may stop, and the prompt then lawfully lacks those
// samples. Such a case is read again, a few times at most; the test fails
// only on a difference with no stopped read, and on too few compared cases.
void ExpectLazyLinkingAsEager(sqlite3* db, sqlite3* host) {
  Schema eager;
  for (int tries = 0;; ++tries) {
    Result<Schema> read = IntrospectSchema(db, 3, host);
    ASSERT_TRUE(read.ok()) << read.status().message();
    eager = std::move(read).value();
    if (eager.stopped_reads.empty()) break;
    ASSERT_LT(tries, 5) << "every eager read stopped: " << eager.stopped_reads.front();
  }
  RenderInto(&eager);
  const std::vector<std::string> questions = {
      "How many books has each customer?",     "What is the amount of ledger 7?",
      "Which books have more than 400 pages?", "Sort the books by pages",
      "Which numbers are stored as text?",     "what is in here",
      "Show the names of paid customers"};
  size_t read_total = 0, sampled_total = 0, cases = 0, compared = 0;
  for (size_t budget : {0, 1, 150, 400, 900, 2000, 4000, 100000}) {
    for (const std::string& question : questions) {
      ++cases;
      const LinkedSchema want = LinkSchema(eager, eager.rendered, question, {}, budget);
      for (int tries = 0; tries < 5; ++tries) {
        SchemaCache cache;  // cold: each ask reads the samples it needs
        auto cold = cache.Get(db, 3, host);
        ASSERT_TRUE(cold.ok()) << cold.status().message();
        int64_t budget_end_ns = 0;
        bool stopped = false;
        const Linked got =
            LinkLazily(*cold, question, {}, budget,
                       [&](const Schema& schema, const std::vector<size_t>& more) {
                         std::vector<SchemaCache::TableName> names;
                         for (size_t i : more)
                           names.emplace_back(schema.tables[i].database, schema.tables[i].name);
                         auto read = cache.WithSamples(schema, names, db, 3, host, &budget_end_ns);
                         EXPECT_TRUE(read.ok()) << read.status().message();
                         if (!read.ok()) return std::make_shared<const Schema>(schema);
                         stopped = stopped || !(*read)->stopped_reads.empty();
                         return *read;
                       });
        if (stopped) continue;  // a time bound cut a read: read the case again
        ++compared;
        EXPECT_EQ(got.linked.rendered, want.rendered) << question << " " << budget;
        EXPECT_EQ(Names(got.linked.kept), Names(want.kept)) << question << " " << budget;
        EXPECT_EQ(cache.tables_sampled(), static_cast<int64_t>(got.read));
        if (budget > 0 && EstimateTokens((*cold)->rendered) > budget &&
            !QuestionMayTieToSampleNotes(question)) {
          read_total += got.read;
          sampled_total += eager.tables.size();
        }
        // The next Get shows the samples read: its schema needs no more.
        auto warm = cache.Get(db, 3, host);
        ASSERT_TRUE(warm.ok());
        const Linked again = LinkLazily(*warm, question, {}, budget, [&](const Schema& s, auto&&) {
          ADD_FAILURE() << "read again: " << question;
          return std::make_shared<const Schema>(s);
        });
        EXPECT_EQ(again.linked.rendered, want.rendered);
        EXPECT_EQ(again.read, 0u);
        break;
      }
    }
  }
  // A case is left out only when five reads in a row stopped.
  EXPECT_GE(compared * 10, cases * 9) << compared << " of " << cases << " compared";
  EXPECT_GT(sampled_total, 0u);
  EXPECT_LT(read_total * 2, sampled_total) << read_total << " of " << sampled_total;
}

// On the host's own connection (a memory database).
TEST(LazyLinking, SchemasReadFromSqliteLinkAsWithEverySampleRead) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, LedgersSql().c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  ExpectLazyLinkingAsEager(db, db);
  sqlite3_close(db);
}

// On QueryPilot's own read connection to a file, under a host's authorizer
// that blanks a column: the samples read later are cut as the rules say.
TEST(LazyLinking, SchemasReadOnAReadConnectionLinkAsWithEverySampleRead) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("qp-lazy-" + std::to_string(getpid()) + ".db"))
          .string();
  std::filesystem::remove(path);
  sqlite3* host = nullptr;
  sqlite3* reader = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &host), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(host, LedgersSql().c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto blank_status = [](void*, int action, const char* table, const char* column, const char*,
                         const char*) {
    return action == SQLITE_READ && table && column && std::string(table) == "customers" &&
                   std::string(column) == "status"
               ? SQLITE_IGNORE
               : SQLITE_OK;
  };
  sqlite3_set_authorizer(host, blank_status, nullptr);
  Result<Schema> ruled = IntrospectSchema(reader, 3, host);
  ASSERT_TRUE(ruled.ok());
  ASSERT_NE(ruled->FindTable("customers"), nullptr);
  EXPECT_EQ(ruled->FindTable("customers")->FindColumn("status"), nullptr);  // the rule holds
  ExpectLazyLinkingAsEager(reader, host);
  sqlite3_close(reader);
  sqlite3_close(host);
  std::filesystem::remove(path);
}

// A paused run taken up on another connection: that connection's cache
// reads the samples of a schema the first one gave.
TEST(LazyLinking, AnotherCachesSchemaGetsItsSamplesRead) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE books(id INTEGER PRIMARY KEY, pages TEXT);"
                         "INSERT INTO books VALUES (1, '412');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  SchemaCache first, second;
  auto cold = first.Get(db, 3);
  ASSERT_TRUE(cold.ok());
  ASSERT_TRUE((*cold)->tables[0].samples_pending);
  int64_t budget_end_ns = 0;
  auto read = second.WithSamples(**cold, {{"main", "books"}}, db, 3, db, &budget_end_ns);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_FALSE((*read)->tables[0].samples_pending);
  EXPECT_EQ((*read)->tables[0].sample_rows,
            (std::vector<std::vector<std::string>>{{"1", "'412'"}}));
  EXPECT_NE((*read)->rendered.find("numbers stored as text ('412')"), std::string::npos)
      << (*read)->rendered;
  EXPECT_TRUE((*read)->stopped_reads.empty());
  EXPECT_EQ(second.tables_sampled(), 1);
  EXPECT_EQ(first.tables_sampled(), 0);
  sqlite3_close(db);
}

}  // namespace
}  // namespace querypilot
