// Connection: QueryPilot's state for one database connection.
//
// Created when the extension is loaded into a connection and shared (through
// shared_ptr) by every function and module registered there, so it lives
// exactly as long as the last of them. Holds the settings, the schema cache,
// the history and the HTTP transport; no state is shared between connections.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/sql/read_connection.h"
#include "agent/config.h"
#include "agent/memory/history.h"
#include "agent/memory/history_file.h"
#include "agent/providers/http.h"
#include "agent/knowledge/schema.h"
#include "agent/base/value.h"

struct sqlite3;
struct sqlite3_stmt;

namespace querypilot::ext {

// An answer kept for the rest of the SQL statement that asked for it, so
// that SQLite re-reading ask('q') (a join, a correlated subquery) reuses the
// run instead of asking the model again.
struct StatementAnswer {
  int64_t run_id = 0;
  std::string sql;
  std::vector<std::string> column_names;
  bool complete = false;   // `rows` is the whole result
  bool truncated = false;
  std::vector<Row> rows;   // when complete
};

// One busy statement of the connection, as seen when an answer was kept:
// the statement, how many times it has started, and how far its program had
// run. The same statement later has the same address and run count and has
// run at least as far; a new statement that happens to get the freed
// statement's memory has run less far at the same point of the same SQL.
struct StatementMark {
  const void* stmt = nullptr;
  int runs = 0;
  int vm_steps = 0;
};
using StatementContext = std::vector<StatementMark>;

// A table made by CREATE VIRTUAL TABLE temp.name USING ask('question'): the
// run that answered it and the table it declared (ext/answer_table.h).
struct AnswerTableSpec {
  std::string question;
  int64_t run_id = 0;
  std::string sql;          // the verified SQL, run again on every scan
  std::string declaration;  // CREATE TABLE x(...) for sqlite3_declare_vtab
  int answer_columns = 0;   // the answer's own; the hidden run_id and sql follow
};

class Connection {
 public:
  explicit Connection(sqlite3* db);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }

  // A copy of the settings, taken under the lock.
  Config config() const;
  Status SetConfig(const std::string& key, const std::string& value);
  Result<std::string> GetConfig(const std::string& key) const;
  std::string ConfigJson() const;
  // Rewrites the prompt text `name`, or restores its default when `text` is
  // nullopt. Returns the text now in force.
  Result<std::string> SetPrompt(const std::string& name, const std::optional<std::string>& text);

  History& history() { return history_; }
  SchemaCache& schema_cache() { return schema_cache_; }

  // Checks a question: not empty, valid UTF-8, within max_question_bytes.
  Status ValidateQuestion(std::string_view question) const;

  // Runs the agent for `question` (which must be valid). Fails fast, without
  // a run, when called from inside another ask().
  Result<RunResult> Ask(std::string_view question);

  // --- descriptions (agent_describe) --------------------------------------
  // Sets (text given), removes (nullopt) or, with `read`, reads the
  // description of the table or column `target` names. Returns the
  // description now in force, nullopt when there is none. An unknown table
  // or column is InvalidArgument.
  Result<std::optional<std::string>> Describe(const std::string& target, const std::optional<std::string>& text,
                                              bool read);
  std::vector<Description> Descriptions() const;

  // agent_index([database]): the value index read whole now (ValueIndexCache::Build),
  // as JSON: per database, its state, tables, values and time.
  Result<std::string> BuildValueIndex(const std::string& database);

  // A plain-language explanation of run `run_id`'s result (agent_explain()).
  Result<std::string> Explain(int64_t run_id);

  // --- the per-statement answer cache --------------------------------------
  // The identity of the SQL statement now running on this connection: each
  // busy statement not owned by QueryPilot, with its run counter.
  StatementContext CurrentStatementContext();
  std::shared_ptr<StatementAnswer> FindAnswer(const std::string& question,
                                              const StatementContext& context);
  void KeepAnswer(const std::string& question, StatementContext context,
                  std::shared_ptr<StatementAnswer> answer);
  // Statements QueryPilot is streaming; they are not part of any context.
  void RegisterOwnStatement(sqlite3_stmt* stmt);
  void UnregisterOwnStatement(sqlite3_stmt* stmt);

  // --- answer tables, by schema and table name -----------------------------
  // Kept from the CREATE until the DROP, so that SQLite reconnecting the
  // table (after a schema reset) never asks the model again.
  std::shared_ptr<const AnswerTableSpec> FindAnswerTable(const std::string& schema,
                                                         const std::string& name);
  void KeepAnswerTable(const std::string& schema, const std::string& name,
                       std::shared_ptr<const AnswerTableSpec> spec);
  void ForgetAnswerTable(const std::string& schema, const std::string& name);

  // Ok while history_file and value_index_file are still none of the
  // connection's database files (a file attached since they were set is
  // refused); checked before anything QueryPilot writes to them.
  Status CheckOwnFiles() const;

 private:
  // Opens and attaches a history file (with config_mu_ held).
  Status AttachHistoryFile(const std::string& path);
  // A value index file must open as one and be none of the connection's
  // databases.
  Status CheckValueIndexFile(const std::string& path) const;

  // Calls f(AgentContext) with this connection's settings snapshot, caches,
  // history and model client (interruptible by sqlite3_interrupt).
  template <typename F>
  auto WithAgent(F&& f);

  sqlite3* db_;
  mutable std::mutex config_mu_;
  Config config_;
  History history_;
  std::shared_ptr<HistoryFile> history_file_;  // set once history_file is
  SchemaCache schema_cache_;
  ValueIndexCache value_index_;
  ReadConnection reader_;
  AnswerCache answer_cache_;
  CurlTransport transport_;
  std::atomic<int> ask_depth_{0};

  struct KeptAnswer {
    std::string question;
    StatementContext context;
    std::shared_ptr<StatementAnswer> answer;
  };
  std::mutex answers_mu_;
  std::vector<KeptAnswer> answers_;
  std::set<sqlite3_stmt*> own_statements_;
  std::vector<Description> descriptions_;  // under config_mu_
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const AnswerTableSpec>> answer_tables_;
};

}  // namespace querypilot::ext
