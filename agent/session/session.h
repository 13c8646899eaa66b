// Session: QueryPilot's state for one database connection, and the one place
// where what each SQL entry point does is written.
//
// ext/ registers one Session per connection and shares it (through
// shared_ptr) with every function and module it registers there; each
// callback decodes SQLite's arguments, calls one method below, and encodes
// its result. The session holds the settings, the history and its file, the
// schema and value index caches, the user's descriptions, the model's
// transport, the answer cache and the answers kept between SQLite's calls.
// The value index builds are the one thing shared with other connections
// (agent/knowledge/value_index.h).
//
// Its methods are written in agent/session/ by what they serve: session.cpp
// (the asks, answer tables, descriptions and the record of runs),
// async_asks.cpp (ask_start, ask_state, ask_result), settings.cpp
// (agent_config, agent_prompt), history_setting.cpp (the history file) and
// record_tables.cpp (the record tables' rows); state.h holds what they share.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/answers/answers.h"
#include "agent/base/own_surface.h"
#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/base/value.h"

struct sqlite3;
struct sqlite3_stmt;

namespace querypilot {

class LiveQuery;
class History;
struct AsyncRun;
struct AttemptRecord;
struct Config;
struct MetricRecord;
struct RunRecord;
struct RunResult;

// A cell of a record table as SQL shows it: its value, and whether that is
// JSON text (ext/ gives it subtype 'J').
struct RecordCell {
  Value value;
  bool json = false;
};

// What ask('q') returns: the run's answer and where its rows come from.
struct AskedRows {
  std::shared_ptr<const StatementAnswer> answer;  // run id, SQL, column names
  std::unique_ptr<AnswerStream> stream;           // null: replay answer->rows
  std::string question;                           // ask_result: the run's question
};

// A row of agent_prompts.
struct PromptRecord {
  std::string name;
  std::string text;
  bool is_default = true;
  std::string description;
};

class Session;

// What one scan of a record table asks of it (ext/'s xBestIndex chooses):
// only the rows whose key (RecordTableSpec::key) is `key`, and the rows in
// the key's order or in any.
struct RecordQuery {
  enum class Order { kAny, kAscending, kDescending };
  std::optional<int64_t> key;
  Order order = Order::kAny;
};

// A record table's rows as one scan reads them: the records taken at its
// start, each cell made when SQL reads it, so that reading one column of the
// newest of a thousand runs does not show every run whole.
class RecordRows {
 public:
  virtual ~RecordRows() = default;
  virtual size_t size() const = 0;
  // Row `row`'s cell in column `column` (a null cell past the last column).
  virtual RecordCell Cell(size_t row, size_t column) const = 0;
};

// One row per record table, read-only in SQL: what QueryPilot did and knows.
// ext/ registers one eponymous table per row (ext/record_tables.cpp), so a
// new record table is one row of RecordTables() (agent/session/record_tables.cpp).
struct RecordTableSpec {
  const char* name;                              // its SQL name: agent_runs
  const std::vector<std::string>& (*columns)();  // each column's "name TYPE", in order
  // The column a query may ask for one value of, or order by: agent_runs.id,
  // agent_attempts.run_id; null for a table with none (every query reads all).
  const char* key;
  // Its rows now, as `query` asks.
  std::unique_ptr<RecordRows> (*rows)(const Session&, const RecordQuery& query);
};
// Every record table: agent_runs (kRunFields, agent/memory/history.h),
// agent_attempts (kAttemptFields), agent_metrics (the history's sums),
// agent_prompts (every editable prompt text, in force and default) and
// agent_descriptions (the user's descriptions of tables and columns).
std::span<const RecordTableSpec> RecordTables();

class Session {
 public:
  // `own` is what ext/ registers on the connection (functions, modules):
  // generated SQL may reach none of it. The connection becomes a host's
  // connection for the critic (agent/sql/check_connection.h): QueryPilot
  // never sets an authorizer on it. `first_call`, when given, is work that
  // must wait for the connection's first call of QueryPilot's (ext/ gives
  // what would read the file when QueryPilot is loaded as the connection
  // opens): Reachable runs it once. Making the session reads nothing.
  explicit Session(sqlite3* db, OwnSurface own = {}, std::function<void()> first_call = nullptr);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // --- ask('q'), ask_sql('q'), answer tables --------------------------------
  // The answer to `question` for the SQL statement now running: the one it
  // kept when it asked before (its SQL re-run when the rows were too many to
  // keep), or a new run of the agent. A run that ended without an answer is
  // an error with the message ask() shows.
  Result<AskedRows> Ask(std::string_view question);
  // The checked SQL for `question`, kept for the statement like Ask's.
  Result<std::string> AskSql(std::string_view question);
  // ask_prompt: the messages the first model call of an ask of `question`
  // would send, as a JSON array of {"role", "content"}, read as that ask
  // reads them; no model is called, and nothing is run or recorded but
  // those reads. The checks an ask makes first apply, but for a provider
  // that is set or can be used: none is needed.
  Result<std::string> Prompt(std::string_view question);
  // --- ask_start('q'), ask_result(id [, wait_ms]), ask_state(id) ------------
  // Starts an asynchronous ask of `question` (agent/answers/async_runs.h): the reads
  // its prompt needs are made now, on this connection, with the checks ask()
  // makes first; the model call is made on QueryPilot's worker threads. The
  // run is in agent_runs at once (status pending, or its end when it needed
  // no model call). Returns its id, unique in the process.
  Result<int64_t> AskStart(std::string_view question);
  // The longest wait ask_result takes, in milliseconds.
  static constexpr int64_t kMaxResultWaitMs = 60000;
  // The answer of run `run_id` for a connection to the same databases as
  // the one that started it, after waiting up to `wait_ms` (0 to
  // kMaxResultWaitMs) for its model: its rows, once the reply was checked
  // and run here under ask()'s checks (a correction that needs another
  // model call sends it back, pending), recorded in the history and answer
  // cache of the connection that started it, as a read there would record
  // it (the rows' count too). Pending is an error whose message
  // says "pending" and how to wait; a failed or lost run gives its error.
  // An answered run's SQL is checked and run again on each call.
  Result<AskedRows> AskResult(int64_t run_id, int64_t wait_ms);
  // The state of run `run_id`: pending, ready, done, failed or lost
  // (AsyncStateName). Unknown ids and other databases are errors.
  Result<std::string> AskState(int64_t run_id);

  // The answer behind the answer table schema.name: kept from its CREATE, or
  // asked for now.
  Result<std::shared_ptr<const AnswerTableSpec>> AnswerTable(const std::string& schema,
                                                             const std::string& name,
                                                             const std::string& question);
  // The answer table's verified SQL, checked and run again, every row
  // streamed; a scan an interrupt or an error stops is recorded in the run
  // that answered the table (RowsRecord::kStops).
  Result<std::unique_ptr<AnswerStream>> ScanAnswerTable(const AnswerTableSpec& spec);
  void DropAnswerTable(const std::string& schema, const std::string& name);

  // Ok, or why `what` (one of QueryPilot's own functions or tables) must not
  // run now: SQL QueryPilot runs for a model is being prepared or stepped on
  // this connection (agent/sql/query_only.h's RunningGeneratedSql), so only
  // the host's schema (a TEMP view) can have reached it. ext/ asks this
  // first in each function and each table's xFilter; the refusal fails the
  // generated query and changes nothing. The first time it is Ok on the
  // connection, the session's `first_call` work runs first.
  Status Reachable(std::string_view what) const;

  // --- the record of runs ---------------------------------------------------
  // agent_feedback: "good", "bad" or "" (none). A verdict the history file
  // could not keep is an error, and the run is unchanged. After "bad", the
  // answer cache no longer holds the run's SQL (nor the SQL it repeated, when
  // it was answered from the cache): the same question asks the model again.
  Status Feedback(int64_t run_id, const std::string& verdict);
  // agent_forget: the run, its attempts, its cached answer and the example it
  // taught are gone, from memory and from the history file; when the file
  // could not be written, an error, and nothing is gone.
  Status Forget(int64_t run_id);
  // agent_explain: a plain-language explanation of the run's result.
  Result<std::string> Explain(int64_t run_id);
  // agent_chart: a Vega-Lite specification of the run's answer (its SQL run
  // again, at most chart_max_rows rows), as JSON text (agent/chart/chart.h).
  Result<std::string> Chart(int64_t run_id);
  // agent_chart_html: a page drawing that chart offline, with npm's vega,
  // vega-lite and vega-embed inlined (found through chart_scripts, else in
  // the usual places); an error naming what to install when they are not.
  Result<std::string> ChartPage(int64_t run_id);
  // Every run (agent_runs), or the one of id `id`.
  std::vector<RunRecord> Runs(std::optional<int64_t> id = std::nullopt) const;
  // Every attempt (agent_attempts), or those of run `run_id`.
  std::vector<AttemptRecord> Attempts(std::optional<int64_t> run_id = std::nullopt) const;
  std::vector<MetricRecord> Metrics() const;

  // --- settings and prompts ---------------------------------------------------
  // Every setting, "host", and what the next ask would use or stop at:
  // "in_use" (the provider, model and endpoint, redacted, resolved as an ask
  // resolves them; null when none is) and "problems" (each message an ask
  // would fail with before reaching a model: a QUERYPILOT_* variable that
  // cannot be used, a base URL or key that cannot be, no model, a model
  // sent to another provider's endpoint; then each base URL the ask would
  // still send to but most likely wrongly, with its fix; [] when none). No
  // network call is made.
  std::string SettingsJson() const;
  // A setting's value, typed as agent_config(key) returns it (a number as a
  // number); a read-only key's (ReadOnlySettings(), agent/config.h: "host",
  // "in_use", "problems", ...) as JSON text.
  Result<Value> Setting(const std::string& key) const;
  Status Set(const std::string& key, const std::string& value);
  Status Reset(const std::string& key);  // back to its default
  Result<std::string> PromptText(const std::string& name) const;
  // Rewrites the prompt text `name`, or restores its default when `text` is
  // nullopt. Returns the text now in force.
  Result<std::string> SetPrompt(const std::string& name, const std::optional<std::string>& text);
  std::vector<PromptRecord> Prompts() const;

  // --- what the agent knows ---------------------------------------------------
  // Sets (text given), removes (nullopt) or, with `read`, reads the
  // description of the table or column `target` names. Returns the
  // description now in force, nullopt when there is none. An unknown table
  // or column is InvalidArgument. A description set, changed or removed
  // empties the answer cache: the prompts its answers came from changed.
  Result<std::optional<std::string>> Describe(const std::string& target,
                                              const std::optional<std::string>& text, bool read);
  std::vector<Description> Descriptions() const;
  // agent_index([database]): the value index read whole now, as JSON: per
  // database, its state, tables, values and time.
  Result<std::string> BuildValueIndex(const std::string& database);

 private:
  // A copy of the settings now in force.
  Config config() const;
  // Checks a question: not empty, valid UTF-8, within max_question_bytes.
  Status ValidateQuestion(std::string_view question) const;
  // Runs the agent (fails fast, without a run, inside another ask()). A run
  // that ended without an answer is an error with its message.
  Result<RunResult> Run(std::string_view question);
  // The checks every ask makes before a run (not inside another ask, an
  // authorizer, usable QUERYPILOT_* variables, own files).
  Status CheckAskable() const;
  // Runs this connection started that are still waiting are lost (at its
  // close): their calls cancelled, their records saying so.
  void AbandonAsyncRuns();
  // The asynchronous run `run_id`, if this connection may go on with it.
  Result<std::shared_ptr<AsyncRun>> FindAsyncRun(int64_t run_id) const;
  // Ok while history_file and value_index_file are still none of the
  // database files of the connection (or of the process's other host
  // connections); checked before QueryPilot writes to them. Records the
  // connection's databases for the other connections' checks.
  Status CheckOwnFiles() const;
  Status SetLocked(const std::string& key, const std::string& value);  // config_mu held
  // history_file set on the connection: a file opened now, "" (the default)
  // or "off" (none) settled at the first call that needs the history.
  Status AttachHistoryFile(const std::string& value);  // config_mu held
  // Settles the connection's history file once, at the first call that reads
  // or writes the history: history_file, or the default of a database file
  // (a file of QueryPilot's own in the cache folder); a default that cannot
  // be used leaves the history in memory, each run saying why (not_kept). An
  // error only for a file named (history_file, QUERYPILOT_HISTORY_FILE) that
  // cannot be used.
  // Once settled, reads the file again when another connection or process
  // wrote to it since (History::Refresh).
  Status SettleHistory() const;
  Status SettleHistoryLocked() const;  // config_mu held
  // Runs the history holds pending or ready that no ask of this process
  // waits on, shown lost (memory only).
  void ShowLostRuns() const;
  // Opens `path` as the history file and attaches it (history still empty).
  Status OpenHistoryFile(const std::string& path, bool is_default) const;  // config_mu held
  // history_file as agent_config() shows it: the file in use, else the value.
  std::string ShownHistoryFile() const;  // config_mu held
  Status CheckValueIndexFile(const std::string& path) const;
  // Calls f(AgentContext) with this connection's settings snapshot, caches,
  // history and model client (interruptible by sqlite3_interrupt).
  template <typename F>
  auto WithAgent(F&& f, bool pause_for_model = false);
  // `live`'s rows, their end recorded (`record`) as run `record_run`'s in
  // this connection's history, or in that of `async_run`.
  std::unique_ptr<AnswerStream> Stream(std::unique_ptr<LiveQuery> live, int64_t record_run,
                                       RowsRecord record,
                                       std::shared_ptr<AsyncRun> async_run = nullptr);
  // A kept answer's verified SQL, checked and run again (RunVerified) with
  // `probe_rows` read first; a failure's message begins with `refused` when
  // the check failed, with `failed` when the run did.
  Result<std::unique_ptr<LiveQuery>> RunAgain(const std::string& sql, size_t probe_rows,
                                              const char* refused, const char* failed);

  // Ok, or the QUERYPILOT_* variables whose values could not be used: every
  // ask and explanation fails with them before any model call.
  Status CheckEnvironment() const;
  // {"in_use": ..., "problems": [...]} as JSON text: see SettingsJson().
  std::string ConfigCheckJson() const;

  sqlite3* db_;
  // Everything else the session holds (settings, history, caches, the
  // model's transport, kept answers): defined in session.cpp.
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace querypilot
