// History: every run and attempt of one connection, in memory.
//
// It is what agent_runs and agent_attempts show. It never touches the user's
// database, so it works on read-only and immutable databases. The oldest
// runs are dropped past `capacity` runs.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"

namespace querypilot {

struct AttemptRecord {
  int64_t run_id = 0;
  int attempt = 0;           // 1-based
  std::string sql;           // what was extracted ("" when nothing was)
  std::string error_type;    // ErrorKind name, "" on success
  std::string error;
  std::string hint;
  std::string strategy;      // correction strategy chosen after this attempt, or ""
  std::string diff;          // token diff against the previous attempt's SQL
  std::string reply;         // the model's raw reply (truncated)
  std::string reflection;    // JSON of this attempt's reflection
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  double llm_ms = 0;
  double exec_ms = 0;
  std::string model;         // the model asked for this attempt ("" when none was)
  // The model repeated the query of this earlier attempt, whose result had
  // been sent back for a check: it stands by that answer (not an error);
  // 0: it did not.
  int stood_by = 0;
};

struct RunRecord {
  int64_t id = 0;
  std::string question;
  RunStatus status = RunStatus::kFailed;
  std::string sql;     // the final SQL (the accepted one, or the last tried)
  int attempts = 0;
  std::string error;   // "" when ok
  std::string error_type;
  std::string reflection;  // JSON of the last reflection
  int answer_attempt = 0;  // the attempt whose rows were returned; 0 when none
  std::string provider;
  std::string model;
  double duration_ms = 0;
  double llm_ms = 0;
  int llm_calls = 0;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  std::optional<int64_t> rows;  // rows returned to the caller, once known
  bool truncated = false;       // max_rows cut the result
  std::string created_at;       // UTC, ISO 8601
  int64_t cached_from = 0;      // the run whose SQL answered again, without a model call; 0: none
  std::vector<std::string> clarifications;  // questions the model asked the user, if any
  std::vector<int64_t> examples;  // runs shown to the model as examples
  std::string feedback;           // "good", "bad" (agent_feedback) or ""
  std::string explanation;        // from agent_explain(), once asked for
  std::string session;            // the session it was asked in ("" = none)
  std::string standalone;         // a follow-up, as the model restated it on its own
  // Milliseconds spent in each node of the state machine, in the order first
  // entered; "node/part" entries are parts of a node, already counted in it.
  // The nodes add up to duration_ms (each is timed from the end of the one
  // before; the JSON column rounds each to the microsecond).
  std::vector<std::pair<std::string, double>> node_times;
  // CREATE INDEX statements that would serve the answer's slow scans
  // (agent/quality/performance.h); QueryPilot never runs them.
  std::vector<std::string> advice;
  // The attempt whose query the model stood by after its result was sent
  // back, and whose result the run returned; 0: none.
  int stood_by = 0;
  // What history_file did not keep of this run, and why ("" when it keeps
  // all of it, or there is none): kept in memory only, it ends with the
  // connection. Set by History when a write fails, cleared when a later
  // write of the run succeeds; never in the file itself (a record the file
  // holds was kept), so not in RunToJson.
  std::string not_kept;
};

// Where a history is kept beyond the connection's memory (history_file).
// Called under the history's lock; must not call back into it. Each write is
// all or nothing, and says why when it is nothing.
class HistorySink {
 public:
  virtual ~HistorySink() = default;
  // Writes the run and, when `attempts` is given, its attempts.
  virtual Status SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts) = 0;
  virtual Status ForgetRun(int64_t run_id) = 0;  // the run and its attempts
};

// A run or attempt as JSON text, and back (for history files). Parsing
// fails on anything that is not such an object.
std::string RunToJson(const RunRecord& run);
std::optional<RunRecord> RunFromJson(std::string_view json);
std::string AttemptToJson(const AttemptRecord& attempt);
std::optional<AttemptRecord> AttemptFromJson(std::string_view json);

class History {
 public:
  explicit History(size_t capacity = 1000) : capacity_(capacity) {}
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // A fresh run id (1, 2, ...).
  int64_t NextRunId();
  // Stores a finished run and its attempts. What the sink could not write,
  // the run's not_kept says; it is kept in memory all the same. The same
  // holds for SetRows and SetExplanation, and a run not kept is written
  // whole (with its attempts) at its next change.
  void Add(RunRecord run, std::vector<AttemptRecord> attempts);
  // Records how many rows a run returned, once the caller read them all.
  void SetRows(int64_t run_id, int64_t rows, bool truncated);
  // Records a run's explanation; its model call counts among the run's calls
  // and tokens.
  void SetExplanation(int64_t run_id, const std::string& text, int64_t prompt_tokens,
                      int64_t completion_tokens);
  // Marks a run "good", "bad" or "" (no verdict). InvalidArgument when no
  // such run is kept; the sink's error when it could not write the verdict,
  // and then the run is unchanged.
  Status SetFeedback(int64_t run_id, const std::string& verdict);
  // Removes a run and its attempts (agent_forget). InvalidArgument when no
  // such run is kept; the sink's error when it could not write the
  // forgetting, and then nothing is removed (memory and file agree).
  Status Forget(int64_t run_id);

  std::vector<RunRecord> Runs() const;
  std::vector<AttemptRecord> Attempts() const;
  bool empty() const;
  // True when some run kept is marked good (cheap: no copy).
  bool HasGoodRuns() const;

  // Takes the runs and attempts saved earlier, and writes every change from
  // now on to `sink`. Only for a history with no runs yet (false otherwise).
  bool Attach(std::shared_ptr<HistorySink> sink, std::vector<RunRecord> runs,
              std::vector<AttemptRecord> attempts);

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  int64_t next_id_ = 1;
  std::vector<RunRecord> runs_;
  std::vector<AttemptRecord> attempts_;
  std::shared_ptr<HistorySink> sink_;

  // Writes `run` to the sink (whole, with its attempts, when it was not
  // kept before). Ok without a sink.
  Status WriteLocked(const RunRecord& run) const;
  // WriteLocked, and the run's not_kept set (naming `what`) or cleared.
  void SaveRunLocked(RunRecord& run, std::string_view what);
};

}  // namespace querypilot
