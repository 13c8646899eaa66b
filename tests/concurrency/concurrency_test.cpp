// Many threads, many connections, one shared connection, and loading and
// closing again and again: the built extension loaded into this process with
// sqlite3_load_extension, against a model server on 127.0.0.1 in this process.
// scripts/sanitize.sh runs it under ThreadSanitizer as well.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/review_request.h"

namespace {

using nlohmann::json;

// Answers "... customer N ..." with the SQL that counts customer N's orders,
// and accepts each answer it is asked to review (`review`, on by default).
class ModelServer {
 public:
  ModelServer() {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req,
                                                httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      std::string question, system;
      if (!body.is_discarded()) {
        for (const auto& m : body["messages"]) {
          if (m.value("role", "") == "user") question = m.value("content", "");
          if (m.value("role", "") == "system") system = m.value("content", "");
        }
      }
      std::string sql = "SELECT COUNT(*) AS n FROM orders";
      if (querypilot::test_models::IsReviewSystemText(system)) {
        ++reviews_;
        sql = querypilot::test_models::kAcceptingReview;
      } else {
        ++requests_;
        // "... in the <word> book?": the prompt shows that book's sample rows.
        if (size_t at = question.find(" in the "); at != std::string::npos) {
          const std::string word = question.substr(at + 8, question.find(' ', at + 8) - at - 8);
          if (system.find("'entry " + word + "'") != std::string::npos) ++books_sampled_;
        }
        if (size_t at = question.find("customer "); at != std::string::npos) {
          sql += " WHERE customer_id = " + std::to_string(std::atoi(question.c_str() + at + 9));
        }
      }
      json out = {{"choices", json::array({{{"message", {{"role", "assistant"}, {"content", sql}}},
                                            {"finish_reason", "stop"}}})},
                  {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}};
      res.set_content(out.dump(), "application/json");
    });
    server_.new_task_queue = [] { return new httplib::ThreadPool(16); };
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ModelServer() {
    server_.stop();
    thread_.join();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int requests() const { return requests_.load(); }  // reviews apart
  int reviews() const { return reviews_.load(); }
  int books_sampled() const { return books_sampled_.load(); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> reviews_{0};
  std::atomic<int> books_sampled_{0};
};

// Customer c (1..10) has c orders.
void MakeDatabase(const std::string& path) {
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string sql =
      "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);"
      "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), "
      "total REAL);";
  for (int c = 1; c <= 10; ++c) {
    sql += "INSERT INTO customers(id, name) VALUES (" + std::to_string(c) + ", 'C" +
           std::to_string(c) + "');";
    for (int o = 0; o < c; ++o)
      sql += "INSERT INTO orders(customer_id, total) VALUES (" + std::to_string(c) + ", 1);";
  }
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

// One value from a query, as text; "error: ..." when it fails.
std::string QueryOne(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return std::string("error: ") + sqlite3_errmsg(db);
  }
  std::string out;
  int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    out = t ? reinterpret_cast<const char*>(t) : "NULL";
  } else if (rc != SQLITE_DONE) {
    out = std::string("error: ") + sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  return out;
}

sqlite3* OpenWithExtension(const std::string& path, const std::string& base_url, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) return nullptr;
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, nullptr);
  char* err = nullptr;
  if (sqlite3_load_extension(db, QP_EXTENSION_PATH, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "load failed: %s\n", err ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
    return nullptr;
  }
  QueryOne(db, "SELECT agent_config('provider', 'openai')");
  QueryOne(db, "SELECT agent_config('base_url', '" + base_url + "')");
  QueryOne(db, "SELECT agent_config('model', 'm')");
  QueryOne(db, "SELECT agent_config('value_hints', 0)");
  QueryOne(db, "SELECT agent_config('answer_cache', 0)");  // every ask reaches the model
  return db;
}

std::string Ask(sqlite3* db, int customer) {
  return QueryOne(db, "SELECT row FROM ask('How many orders has customer " +
                          std::to_string(customer) + " placed?')");
}

std::string Expected(int customer) {
  return "{\"n\":" + std::to_string(customer) + "}";
}

class ConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A name of each test's own: a database made anew under a name an
    // earlier test used could have its identity, and so its history file.
    path_ = (std::filesystem::temp_directory_path() /
             ("qp-concurrency-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db"))
                .string();
    MakeDatabase(path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
  ModelServer model_;
};

constexpr int kThreads = 8;
constexpr int kAsksPerThread = 25;

TEST_F(ConcurrencyTest, EightThreadsEachWithItsOwnConnection) {
  std::atomic<int> wrong{0};
  auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
      if (!db) {
        wrong += kAsksPerThread;
        return;
      }
      // A setting of this connection's own: no other connection may see it.
      QueryOne(db, "SELECT agent_config('max_rows', " + std::to_string(1000 + t) + ")");
      for (int i = 0; i < kAsksPerThread; ++i) {
        int customer = 1 + (t + i) % 10;
        if (Ask(db, customer) != Expected(customer)) ++wrong;
      }
      if (QueryOne(db, "SELECT agent_config('max_rows')") != std::to_string(1000 + t)) ++wrong;
      // Its own runs at least: the database's history file is shared by
      // every connection, so the others' are there too, as many as have
      // ended.
      const int64_t runs = std::atoll(QueryOne(db, "SELECT COUNT(*) FROM agent_runs").c_str());
      if (runs < kAsksPerThread || runs > kThreads * kAsksPerThread) ++wrong;
      sqlite3_close(db);
    });
  }
  for (auto& th : threads) th.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(model_.requests(), kThreads * kAsksPerThread);
  EXPECT_EQ(model_.reviews(), kThreads * kAsksPerThread);
  std::printf("[figures] own connections: %d threads x %d asks in %.3f s (%.0f asks/s)\n", kThreads,
              kAsksPerThread, seconds, kThreads * kAsksPerThread / seconds);
}

TEST_F(ConcurrencyTest, OneConnectionSharedByEightThreadsInSerializedMode) {
  sqlite3* db =
      OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX);
  ASSERT_NE(db, nullptr);
  std::atomic<int> wrong{0};
  auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAsksPerThread; ++i) {
        int customer = 1 + (t * 3 + i) % 10;
        std::string got = Ask(db, customer);
        if (got != Expected(customer)) {
          ++wrong;
          std::fprintf(stderr, "thread %d ask %d: %s\n", t, i, got.c_str());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(DISTINCT id) FROM agent_runs WHERE status = 'ok'"),
            std::to_string(kThreads * kAsksPerThread));
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM agent_attempts"),
            std::to_string(kThreads * kAsksPerThread));
  sqlite3_close(db);
  std::printf("[figures] shared connection: %d threads x %d asks in %.3f s (%.0f asks/s)\n",
              kThreads, kAsksPerThread, seconds, kThreads * kAsksPerThread / seconds);
}

TEST_F(ConcurrencyTest, LoadAskCloseAndLoadAgain) {
  constexpr int kRounds = 10;
  std::atomic<int> wrong{0};
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
        if (!db) {
          ++wrong;
          return;
        }
        // Each new connection starts from the defaults, whatever others set.
        if (QueryOne(db, "SELECT agent_config('max_attempts')") != "3") ++wrong;
        QueryOne(db, "SELECT agent_config('max_attempts', 7)");
        if (Ask(db, 1 + t) != Expected(1 + t)) ++wrong;
        sqlite3_close(db);
      });
    }
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(model_.requests(), kRounds * kThreads);
  EXPECT_EQ(model_.reviews(), kRounds * kThreads);
}

TEST_F(ConcurrencyTest, TheValueIndexIsBuiltBesideAsksWhileAnotherConnectionWrites) {
  // In WAL mode the file's value index is read by a thread of its own,
  // shared by every connection of the process; connections come and go,
  // ask, and another connection writes, all at once.
  sqlite3* setup = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &setup), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(
                setup,
                "PRAGMA journal_mode = WAL;"
                "WITH RECURSIVE n(i) AS (SELECT 11 UNION ALL SELECT i + 1 FROM n WHERE i < 30000) "
                "INSERT INTO customers(id, name) SELECT i, 'Customer ' || i FROM n;",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(setup);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::mutex first_mu;
  std::string first_wrong;  // what went wrong first, for the failure message
  auto note = [&](const std::string& what) {
    ++wrong;
    std::lock_guard<std::mutex> lock(first_mu);
    if (first_wrong.empty()) first_wrong = what;
  };
  std::thread writer([&] {
    sqlite3* db = nullptr;
    if (sqlite3_open(path_.c_str(), &db) != SQLITE_OK) {
      note("the writer could not open the file");
      return;
    }
    sqlite3_busy_timeout(db, 5000);
    for (int i = 0; !stop && i < 200; ++i) {
      std::string sql = "INSERT INTO customers(id, name) VALUES (" + std::to_string(100000 + i) +
                        ", 'New " + std::to_string(i) + "')";
      if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
        note(std::string("the writer's insert failed: ") + sqlite3_errmsg(db));
      }
    }
    sqlite3_close(db);
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
        if (!db) {
          note("could not open a connection with QueryPilot");
          return;
        }
        // A host whose file another connection writes waits for its locks
        // (QueryPilot's own reads take the host's busy timeout): without
        // one, SQLite may answer "database is locked" at once on a busy
        // machine, which is the host's choice, not a fault of the ask.
        sqlite3_busy_timeout(db, 5000);
        QueryOne(db, "SELECT agent_config('value_hints', 1)");
        QueryOne(db, "SELECT agent_config('value_index_wait_ms', 0)");
        for (int i = 0; i < 4; ++i) {
          const int c = 1 + (t + i) % 10;
          if (std::string got = Ask(db, c); got != Expected(c))
            note("customer " + std::to_string(c) + ": " + got);
        }
        if (std::string p = QueryOne(db, "SELECT json_array_length(agent_config('value_index'))");
            p.rfind("error", 0) == 0) {
          note("agent_config('value_index'): " + p);
        }
        sqlite3_close(db);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  writer.join();
  EXPECT_EQ(wrong.load(), 0) << "first: " << first_wrong;
}

TEST_F(ConcurrencyTest, ClosingWhileAnotherConnectionAsks) {
  sqlite3* keeper = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
  ASSERT_NE(keeper, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread asker([&] {
    for (int i = 0; !stop; ++i) {
      if (Ask(keeper, 1 + i % 10) != Expected(1 + i % 10)) ++wrong;
    }
  });
  for (int i = 0; i < 40; ++i) {
    sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
    ASSERT_NE(db, nullptr);
    sqlite3_close(db);
  }
  stop = true;
  asker.join();
  EXPECT_EQ(wrong.load(), 0);
  sqlite3_close(keeper);
}

// Asynchronous asks started on some connections and read on others (a
// pool), while another connection starts asks and closes with them in flight.
TEST_F(ConcurrencyTest, AsyncAsksStartedOnSomeConnectionsAndReadOnOthers) {
  constexpr int kStarters = 4;
  constexpr int kReaders = 4;
  constexpr int kAsksPerStarter = 10;
  std::vector<sqlite3*> starters;
  for (int i = 0; i < kStarters; ++i) {
    starters.push_back(OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE));
    ASSERT_NE(starters.back(), nullptr);
  }
  std::mutex mu;
  std::vector<std::pair<int64_t, int>> started;  // run id, customer
  std::atomic<int> starting{kStarters};
  std::atomic<int> wrong{0};
  std::string first_wrong;
  std::vector<std::thread> threads;
  for (int t = 0; t < kStarters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAsksPerStarter; ++i) {
        const int customer = 1 + (t * kAsksPerStarter + i) % 10;
        const std::string id =
            QueryOne(starters[t], "SELECT ask_start('How many orders has customer " +
                                      std::to_string(customer) + " placed?')");
        std::lock_guard<std::mutex> lock(mu);
        started.emplace_back(std::atoll(id.c_str()), customer);
      }
      --starting;
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&] {
      sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
      for (;;) {
        std::pair<int64_t, int> run{0, 0};
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!started.empty()) {
            run = started.back();
            started.pop_back();
          }
        }
        if (run.first == 0) {
          if (starting.load() == 0) {
            std::lock_guard<std::mutex> lock(mu);
            if (started.empty()) break;
          }
          std::this_thread::yield();
          continue;
        }
        std::string got;
        do {
          got =
              QueryOne(db, "SELECT row FROM ask_result(" + std::to_string(run.first) + ", 30000)");
        } while (got.find("pending") != std::string::npos);
        if (got != Expected(run.second)) {
          std::lock_guard<std::mutex> lock(mu);
          if (wrong++ == 0) first_wrong = got;
        }
      }
      sqlite3_close(db);
    });
  }
  // A connection closed with its runs in flight: they are lost, nothing else.
  threads.emplace_back([&] {
    sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
    for (int i = 0; i < 5; ++i)
      QueryOne(db, "SELECT ask_start('How many orders has customer 1 placed?')");
    sqlite3_close(db);
  });
  for (std::thread& t : threads) t.join();
  for (sqlite3* db : starters) sqlite3_close(db);
  EXPECT_EQ(wrong.load(), 0) << "first: " << first_wrong;
}

// A word of six letters for each number (0 -> "bababa"): a table name
// linking tells apart, as it does not tell ledger_1 from ledger_2.
std::string Word(int n) {
  std::string w;
  for (int i = 0; i < 3; ++i, n /= 25) {
    w += "bdfgklmnprstvz"[n % 5 + 5 * (i % 2)];
    w += "aeiou"[(n / 5) % 5];
  }
  return w;
}

// A schema over its token budget has its sample rows read when a prompt first
// shows a table (SchemaCache::WithSamples), on the asking thread; the run
// then waits on its model call on a worker thread and is ended by another
// call (ask_result). Asynchronous asks of one connection, each naming
// another table beside customers and orders, each show that table with its
// rows, the runs' schemas handed between threads.
TEST_F(ConcurrencyTest, AsyncAsksOfOneConnectionReadSampleRowsAtOnce) {
  constexpr int kBooks = 80;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql;
    for (int i = 0; i < kBooks; ++i) {
      const std::string w = Word(i);
      sql += "CREATE TABLE book_" + w + "(id INTEGER PRIMARY KEY, label TEXT, amount REAL);" +
             "INSERT INTO book_" + w + "(label, amount) VALUES ('entry " + w + "', " +
             std::to_string(i) + ".5), ('other', 7);";
    }
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  sqlite3* db = OpenWithExtension(path_, model_.base_url(), SQLITE_OPEN_READWRITE);
  ASSERT_NE(db, nullptr);
  ASSERT_EQ(QueryOne(db, "SELECT agent_config('schema_budget_tokens', 400)"), "400");
  constexpr int kAsks = 16;
  std::vector<std::pair<std::string, int>> runs;  // run id, customer
  for (int i = 0; i < kAsks; ++i) {
    const int customer = 1 + i % 10;
    const std::string id =
        QueryOne(db, "SELECT ask_start('How many orders has customer " + std::to_string(customer) +
                         " placed in the " + Word(i * 5) + " book?')");
    ASSERT_EQ(id.find("error"), std::string::npos) << id;
    runs.emplace_back(id, customer);
  }
  int wrong = 0;
  for (const auto& [id, customer] : runs) {
    std::string got;
    do {
      got = QueryOne(db, "SELECT row FROM ask_result(" + id + ", 30000)");
    } while (got.find("pending") != std::string::npos);
    if (got != Expected(customer)) {
      ++wrong;
      std::fprintf(stderr, "run %s: %s\n", id.c_str(), got.c_str());
    }
  }
  EXPECT_EQ(wrong, 0);
  // Each ask's prompt showed its book, with its sample rows; the rest of the
  // schema was not shown.
  EXPECT_EQ(model_.books_sampled(), kAsks);
  EXPECT_EQ(QueryOne(db, "SELECT count(*) FROM agent_runs WHERE status = 'ok'"),
            std::to_string(kAsks));
  sqlite3_close(db);
}

}  // namespace
