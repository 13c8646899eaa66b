// The agent: one ask() from question to checked, running SQL.
//
// A run is an explicit state machine. Each node is a named function over one
// RunState; every transition is in Agent::NextNode(), readable top to bottom:
//
//   cache         -> load_schema; finish with a kept answer or an error
//   load_schema   -> generate; finish on an error
//   generate      -> extract; reflect on an error
//   extract       -> critic; analyse on an error
//   critic        -> execute; analyse when it refuses the query
//   execute       -> check_result; analyse on an error
//   check_result  -> candidates while other queries wait, else reflect
//   analyse       -> candidates while other queries wait, else reflect
//   candidates    -> reflect
//   reflect       -> correct (should_refine, attempts left), review (the `review`
//                    setting), else finish; finish when the connection stopped
//   correct       -> generate
//   review        -> generate once when it sends the query back, else finish
//
// check_result looks at a result that ran (result_check.h) and, when it is
// empty or counts nothing, at the query's literals (grounding.h).
// candidates runs the other queries a first reply held (the `candidates`
// setting), each checked and run as the first was, and picks the answer
// (agent/quality/candidates.h); reflect then judges the answer picked.
// review (the `review` setting) has a model read an answer reflect accepted
// (agent/quality/review.h): not accepted, the query goes back once, and the
// correction replaces the answer only when its own review accepts it.
//
// Guards: at most max_attempts generations; stop when the model repeats a
// query (normalised); stop on errors a new query cannot fix (refused SQL,
// provider failures, interruption). An answer is never lost to a retry: when
// a retry was asked for because a result looked wrong, and the retries end
// in an error or with no fewer critical findings, the run returns the
// earlier result.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/config.h"
#include "agent/knowledge/descriptions.h"
#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "agent/memory/answer_cache.h"
#include "agent/memory/history.h"
#include "agent/model_calls.h"
#include "agent/providers/llm.h"
#include "agent/quality/agreement.h"
#include "agent/quality/performance.h"
#include "agent/quality/reflect.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"
#include "agent/sql/read_connection.h"

struct sqlite3;

namespace querypilot {

// What a run needs from its connection. Nothing here is owned by the run.
struct AgentContext {
  sqlite3* db = nullptr;
  // `db` and how the SQL QueryPilot runs there is checked: the session's
  // HostCheck (agent/sql/check_connection.h). Left unset, every SQL is
  // refused.
  SqlTarget sql;
  // What is read before the model answers (the schema and its samples, the
  // value index, the answer cache's schema check) is read here: a read-only
  // connection to the same files (agent/sql/read_connection.h), or null for
  // `db` itself. A paused run taken up again compares its prompt's schema
  // with the host's rules here (Agent::ApplyHostRulesNow).
  sqlite3* read_db = nullptr;
  // Those reads as one read transaction on `read_db`; ended as soon as the
  // last of them is done. Null with no `read_db`.
  PreModelReads* pre_model_reads = nullptr;
  const Config* config = nullptr;
  LlmClient* llm = nullptr;  // null when `llm_status` says why there is none
  Status llm_status;
  std::string provider_name;  // for the history record
  std::string model;
  SchemaCache* schema_cache = nullptr;
  ValueIndexCache* value_index = nullptr;  // null: no value hints
  AnswerCache* answer_cache = nullptr;     // null: every question asks the model
  History* history = nullptr;
  // The user's descriptions of tables and columns (agent_describe).
  std::vector<Description> descriptions;
  // The run stops before each generation's model call instead of making it
  // and before each review's (ask_start/ask_result, agent/answers/async_runs.h):
  // Agent::Advance returns and the call is made elsewhere. `llm` may then be
  // null; another call (candidate_select's pick) is not made, and the pick
  // by the checks stands.
  bool pause_for_model = false;
};

// The limits the settings put on running the model's SQL (sql_timeout_ms,
// max_rows, progress_handler), for every place that runs it.
ExecutionLimits QueryLimits(const Config& config);

// How QueryPilot's own lookups (value index, grounding) stop at their budget:
// the progress handler where the settings allow it and the host has one,
// else between steps; never by interrupting the connection.
StopMethod LookupStop(const Config& config);

// How the value index is read and kept (value_index_file,
// value_index_background, value_index_wait_ms, value_index_ask_ms), for the
// asks and agent_index() alike.
ValueIndexOptions IndexOptions(const Config& config);

// The outcome of a run.
struct RunResult {
  int64_t run_id = 0;
  RunStatus status = RunStatus::kFailed;
  Status error;     // OK when status is kOk
  std::string sql;  // the accepted SQL (or the last one tried)
  int attempts = 0;
  int answer_attempt = 0;             // the attempt whose rows are returned; 0 when none
  std::optional<int64_t> confidence;  // agent_runs.confidence; none without an answer
  std::string confidence_reason;      // agent_runs.confidence_reason; "" without an answer
  // On success: the accepted query, its first rows already read.
  std::unique_ptr<LiveQuery> query;
  // An answer with no rows that QueryPilot doubts (a critical finding
  // standing, or a review not accepting it): why (EmptyAnswerDoubt,
  // agent/quality/review.h); "" otherwise.
  std::string doubt;

  // The message ask() shows when the run failed, naming the run.
  std::string UserMessage() const;
  // The error ask() gives for a doubtful empty answer (`doubt` set, the
  // setting empty_doubtful 'error'): why, its confidence, the run and how
  // to have the empty result instead.
  std::string DoubtMessage() const;
};

enum class Node {
  kCache,
  kLoadSchema,
  kGenerate,
  kExtract,
  kCritic,
  kExecute,
  kCheckResult,
  kCandidates,
  kAnalyse,
  kReflect,
  kReview,
  kCorrect,
  kFinish,
};

// The node's name, from its row in the node table (Agent::kNodes): the key
// of its time in agent_runs.node_times; "?" for a value with no row.
std::string_view NodeName(Node node);
// How many rows the node table has.
size_t NodeCount();

class Agent {
 public:
  // One run's state, from its question to its record: defined in
  // agent/run/run_state.h, for the agent's own files; opaque elsewhere.
  struct RunState;
  struct RunStateDeleter {
    void operator()(RunState* s) const;
  };
  using RunStatePtr = std::unique_ptr<RunState, RunStateDeleter>;

  explicit Agent(const AgentContext& ctx) : ctx_(ctx) {}

  // Runs the state machine for `question` and records the run in history.
  RunResult Run(std::string_view question);

  // The same run in steps, for a model call made elsewhere
  // (AgentContext::pause_for_model): Begin makes the run `run_id` (a fresh
  // id of the history it is recorded in) and Advance runs it from where it stopped, until it
  // ends (its result, recorded in history as Run records it) or until a
  // generation's or a review's model call (nullopt: AwaitedCall says what to send, and
  // GiveReply hands the reply back before the next Advance). A run stopped
  // there holds no statement of any connection: a result kept for a later
  // comparison is closed and run again if it is the answer. Each Advance may
  // run on another connection of the same database (its AgentContext).
  static RunStatePtr Begin(int64_t run_id, std::string_view question);
  std::optional<RunResult> Advance(RunState& s);
  static int64_t RunIdOf(const RunState& s);
  static const ChatRequest& AwaitedCall(const RunState& s);
  static void GiveReply(RunState& s, Result<ChatReply> reply);
  // The run's record as agent_runs shows it while it waits: its question,
  // id, time and attempts so far, with `status`.
  static RunRecord PendingRecord(const RunState& s, RunStatus status);
  static std::vector<AttemptRecord> AttemptsSoFar(const RunState& s);

  // The messages the first model call of Run(question) would send, read as
  // Run reads them (the schema, its samples, the value hints, the
  // descriptions, the examples and the session's turns), with no model call,
  // no answer cache lookup and nothing recorded. Needs no model.
  Result<std::vector<ChatMessage>> FirstMessages(std::string_view question);

 private:
  void Cache(RunState& s);
  void LoadSchema(RunState& s);
  // LoadSchema's reading: s.messages made the system prompt and the question.
  void BuildFirstMessages(RunState& s, bool check_every_table = false);
  // The conversation's first two messages, from what the run read (its
  // schema, linked again to the question; its value hints and examples):
  // made, or put in place of those it has. The sample rows of the tables
  // the prompt shows are read first where they are not yet (SamplesToRead,
  // ReadSamples); kInterrupted when the host's interrupt stopped that.
  Status WriteFirstMessages(RunState& s);
  // Reads the sample rows of tables `tables` of s.schema (their indexes; all
  // whose samples are pending when `all`), through the connection's
  // SchemaCache, and makes s.schema again from them as BuildFirstMessages
  // made it (s.ruled_schema, then WithAskTablesQualified and
  // WithDescriptions); s.linked.kept points into the new schema.
  // kInterrupted when the host's interrupt stopped a read.
  Status ReadSamples(RunState& s, std::vector<size_t> tables, bool all = false);
  // A paused run taken up again (Advance after GiveReply): the schema its
  // prompt shows is checked against the host's rules as they are now, on
  // this context's connection; a column they deny or blank now leaves the
  // conversation's first messages with its samples and value hints, and so
  // does a table they leave nothing of. Stopped by the host's interrupt, the
  // run ends as interrupted.
  void ApplyHostRulesNow(RunState& s);
  // Every table of the run's schema under the host's rules now, as
  // ApplyHostRulesNow; what they leave out now leaves the schema and the
  // first messages. kInterrupted (the host's interrupt) changes nothing.
  Status RuleWholeSchema(RunState& s);
  void Generate(RunState& s);
  // A generation's request, its attempt record started.
  ChatRequest GenerationRequest(RunState& s);
  void Extract(RunState& s);
  void Critic(RunState& s);
  void Execute(RunState& s);
  void CheckResult(RunState& s);
  void Candidates(RunState& s);
  void Analyse(RunState& s);
  void Reflect(RunState& s);
  // The model's review of an answer the rule checks accepted (the `review`
  // setting, agent/quality/review.h): one call, recorded in the attempt's
  // reflection. Not accepted, with should_refine and attempts left, the
  // answer is held and the query sent back once with the review's issues;
  // the correction is reviewed again and replaces it only when accepted. A
  // reply that is not the record changes nothing.
  void Review(RunState& s);
  // Whether the answer in `s` is one the review reads: review 1, a model to
  // call (here, or on a worker for a run paused for its model), an answer
  // that ran and the rule checks accepted, not a cached one, at most two
  // reviews a run.
  bool ShouldReview(const RunState& s) const;
  // The review's request for the answer in `s` (its rows read already).
  ChatRequest ReviewRequest(RunState& s);
  // The reply to `req`: the one given to a paused run (GiveReply), or a
  // call made now; its cost added to `*cost` and to the run's.
  Result<ChatReply> ModelReply(RunState& s, const ChatRequest& req, CallCost* cost);
  void Correct(RunState& s);
  std::string WidenSchema(RunState& s);
  // The findings on a result that ran (result_check.h, value grounding, slow
  // scans), for the current attempt's query or a candidate's.
  std::vector<ReflectionIssue> ResultFindings(RunState& s, const std::string& sql,
                                              const LiveQuery& query, double exec_ms,
                                              const std::vector<SlowScan>& scans);
  // One more model call that picks among candidates that disagree
  // (candidate_select): `prompt` (SelectionPrompt, candidates.h) to the
  // model; its reply, or nullopt when the call failed.
  std::optional<std::string> SelectionCall(RunState& s, const std::string& prompt);
  bool StoppedConnection(const Status& error) const;
  // Every reply to the first prompt (the `samples` setting) judged against
  // the answer `out` returns (agent/quality/sample_runs.h), and with three
  // or more their vote: a result most of them give replaces the answer
  // (`issues`: the findings on it) when it has no more critical findings
  // (then in `*voted_issues`), and true is returned.
  bool FinishSamples(RunState& s, RunResult& out, const std::vector<ReflectionIssue>& issues,
                     std::vector<ReflectionIssue>* voted_issues);
  RunResult Finish(RunState& s);
  // How sure the answer returned is (candidates.h), for agent_runs.
  ConfidenceVerdict AnswerConfidence(const RunState& s, const RunResult& out,
                                     const std::vector<ReflectionIssue>& issues, bool voted) const;

  // Every transition of the machine.
  Node NextNode(Node done, const RunState& s) const;

  // The node table: one row per node, in the enum's order: its name and the
  // member function that runs it (none for kFinish, which ends the loop and
  // runs as Finish()). Adding a node is a row here, its enum value, its
  // function and its transitions in NextNode().
  struct NodeRow {
    Node node;
    std::string_view name;
    void (Agent::*run)(RunState& s);
  };
  static const NodeRow kNodes[];
  // The node's row; null for a value with none (agent_test checks there is
  // none).
  static const NodeRow* NodeOf(Node node);
  friend std::string_view NodeName(Node node);
  friend size_t NodeCount();

  // The connection the reads before a model call go to (AgentContext::read_db).
  sqlite3* ReadDb() const { return ctx_.read_db ? ctx_.read_db : ctx_.db; }
  const AgentContext& ctx_;
};

}  // namespace querypilot
