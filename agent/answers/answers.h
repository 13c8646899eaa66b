// The answers a connection keeps between SQLite's calls: per running SQL
// statement (so that a join or correlated subquery re-reading ask('q') never
// asks the model again) and per answer table (so that SQLite reconnecting
// one after a schema reset never does either), and the stream of an answer's
// rows that records their end in the run they answer (AnswerStream). Owned by
// the Session.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/base/value.h"

struct sqlite3;
struct sqlite3_stmt;

namespace querypilot {

class History;
class LiveQuery;
struct AsyncRun;
struct RunResult;

// An answer kept for the rest of the SQL statement that asked for it.
struct StatementAnswer {
  int64_t run_id = 0;
  std::string sql;
  std::optional<int64_t> confidence;  // the run's (agent_runs.confidence)
  std::string confidence_reason;      // the run's (agent_runs.confidence_reason)
  std::vector<std::string> column_names;
  bool complete = false;  // `rows` is the whole result
  bool truncated = false;
  std::vector<Row> rows;  // when complete
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

class StatementAnswers {
 public:
  explicit StatementAnswers(sqlite3* db) : db_(db) {}

  // The identity of the SQL statement now running on the connection: each
  // busy statement not owned by QueryPilot, with its run counter.
  StatementContext Current();
  // The answer this statement kept for `question`, or null. Forgets the
  // answers of statements that have finished.
  std::shared_ptr<StatementAnswer> Find(const std::string& question,
                                        const StatementContext& context);
  void Keep(const std::string& question, StatementContext context,
            std::shared_ptr<StatementAnswer> answer);
  // Statements QueryPilot is streaming; they are not part of any context.
  void RegisterOwn(sqlite3_stmt* stmt);
  void UnregisterOwn(sqlite3_stmt* stmt);
  // Drops what was kept of run `run_id` (agent_forget).
  void ForgetRun(int64_t run_id);

 private:
  struct Kept {
    std::string question;
    StatementContext context;
    std::shared_ptr<StatementAnswer> answer;
  };
  sqlite3* db_;
  Mutex mu_;
  std::vector<Kept> kept_ GUARDED_BY(mu_);
  std::set<sqlite3_stmt*> own_ GUARDED_BY(mu_);
};

// A column of an answer table, as data: ext/ writes the declaration.
struct AnswerColumn {
  std::string name;  // unique among the table's columns as SQLite compares names
  // The type SQLite reports as the answer's column's declared type ("" when
  // none, or when the host's SQLite does not say); INTEGER for run_id, TEXT
  // for sql. As SQLite gave it: ext/ decides whether it is fit to repeat.
  std::string declared_type;
  bool hidden = false;  // run_id, sql, confidence, confidence_reason: read only when named
};

// A table made by CREATE VIRTUAL TABLE temp.name USING ask('question'): the
// run that answered it and the table's columns.
struct AnswerTableSpec {
  std::string question;
  int64_t run_id = 0;
  std::string sql;                    // the verified SQL, run again on every scan
  std::optional<int64_t> confidence;  // the run's (agent_runs.confidence)
  std::string confidence_reason;      // the run's (agent_runs.confidence_reason)
  // The answer's own columns, then the hidden run_id, sql, confidence and
  // confidence_reason.
  std::vector<AnswerColumn> columns;
  int answer_columns = 0;  // the answer's own
};

// The answer's column names made unique as SQLite compares them (ASCII case
// ignored): a repeat gets a suffix ("total:1", as SQLite names a view's
// repeated columns), an empty name becomes "columnN".
std::vector<std::string> AnswerTableColumnNames(const std::vector<std::string>& names);

// The columns of an answer table whose answer has columns `names` with
// declared types `declared_types` (missing ones are ""): each answer column,
// named by AnswerTableColumnNames, then the hidden run_id (INTEGER), sql
// (TEXT), confidence (INTEGER) and confidence_reason (TEXT). Every name is unique as SQLite
// compares names (any ASCII case): a hidden column takes a name the answer left free (run_id, else
// querypilot_run_id, else querypilot_run_id_2, ...), so the CREATE never fails on a duplicate.
std::vector<AnswerColumn> AnswerTableColumns(const std::vector<std::string>& names,
                                             const std::vector<std::string>& declared_types);

// The spec of an answer table for `run`'s answer: AnswerTableColumns of its
// query's columns and the declared types SQLite reports for them.
std::shared_ptr<AnswerTableSpec> AnswerTableSpecFor(const std::string& question,
                                                    const RunResult& run);

// Answer tables by schema and table name (any case), from CREATE to DROP.
class AnswerTables {
 public:
  std::shared_ptr<const AnswerTableSpec> Find(const std::string& schema, const std::string& name);
  void Keep(const std::string& schema, const std::string& name,
            std::shared_ptr<const AnswerTableSpec> spec);
  void Forget(const std::string& schema, const std::string& name);

 private:
  Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const AnswerTableSpec>> tables_
      GUARDED_BY(mu_);
};

// What the end of an answer's rows records in the run it answers.
enum class RowsRecord {
  kNothing,  // the rows of a run already recorded (a kept answer's SQL run again)
  kAll,      // the run's own rows: how many, or what stopped them
  kStops,    // a scan of an answer table: only what stopped its rows
};

// Rows streamed to the caller from a running query. While it lives its
// statement is QueryPilot's own, never part of a statement's identity. What
// their end records in the run they answer (`record`): when they end, the
// run's row count; when they end in an error (an interrupt, the time budget,
// a runtime error), or the caller closes them early because the connection
// was interrupted, what stopped them and how many rows were returned before:
// the run's status and error say so, and it has no confidence. The run is
// recorded in `history`, or, for an asynchronous run (`async_run` given), in
// the history of the connection that started it, whichever connection reads
// the rows (nowhere once that connection has closed).
class AnswerStream {
 public:
  AnswerStream(std::unique_ptr<LiveQuery> live, StatementAnswers* owner, History* history,
               int64_t record_run, RowsRecord record,
               std::shared_ptr<AsyncRun> async_run = nullptr);
  ~AnswerStream();
  AnswerStream(const AnswerStream&) = delete;
  AnswerStream& operator=(const AnswerStream&) = delete;

  const LiveQuery& query() const { return *live_; }
  // LiveQuery::Next and LiveQuery::ReadAhead: false (0 rows) at the end.
  Result<bool> Next(Row* row);
  Result<size_t> ReadAhead(const std::function<size_t(sqlite3_stmt*)>& visit);
  // The caller stops reading before the rows' end (SQLite closes or rewinds
  // its cursor), having handed `returned` of them on. When the connection
  // is interrupted, that is what stopped them, and it is recorded as an
  // interrupt that Next or ReadAhead returned would be; otherwise (a LIMIT,
  // the statement reset or finalized) nothing is. Call it from the thread
  // that holds the connection; once the rows ended it does nothing.
  void Close(int64_t returned);

 private:
  // Records the end of the rows after `returned` of them: `more` false is
  // their end, an error what stopped them.
  void Ended(const Status& error, bool more, int64_t returned);
  std::unique_ptr<LiveQuery> live_;
  StatementAnswers* owner_;
  History* history_;
  int64_t record_run_;  // 0: nothing (more) to record
  RowsRecord record_;
  std::shared_ptr<AsyncRun> async_run_;
};

}  // namespace querypilot
