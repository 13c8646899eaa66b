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
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "agent/base/secrets.h"
#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/base/value.h"

namespace querypilot {

// Milliseconds per node of the state machine, in the order first entered;
// "node/part" entries are parts of a node, already counted in it.
using NodeTimes = std::vector<std::pair<std::string, double>>;

struct AttemptRecord {
  int64_t run_id = 0;
  int attempt = 0;  // 1-based
  std::string sql;
  std::string error_type;
  std::string error;
  std::string hint;
  std::string strategy;
  std::string diff;
  std::string reply;
  std::string reflection;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  double llm_ms = 0;
  double exec_ms = 0;
  std::string model;
  // The model repeated the query of this earlier attempt, whose result had
  // been sent back for a check: it stands by that answer (not an error);
  // 0: it did not.
  int stood_by = 0;
};

struct RunRecord {
  int64_t id = 0;
  std::string question;
  RunStatus status = RunStatus::kFailed;
  std::string sql;
  int attempts = 0;
  std::string error;
  std::string error_type;
  std::string reflection;
  int answer_attempt = 0;       // 0 when none
  std::optional<int64_t> rows;  // once known
  bool truncated = false;
  std::string provider;
  std::string model;
  int llm_calls = 0;
  double duration_ms = 0;
  double llm_ms = 0;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  std::string created_at;
  std::vector<std::string> clarifications;
  std::vector<int64_t> examples;
  std::string feedback;
  std::string explanation;
  std::string session;
  std::string standalone;
  int64_t cached_from = 0;  // 0: none
  // Each node is timed from the end of the one before, so the nodes add up
  // to duration_ms.
  NodeTimes node_times;
  std::vector<std::string> advice;  // QueryPilot never runs them
  int stood_by = 0;                 // 0: none
  // 0..100 once the run has an answer (agreement.h's Confidence).
  std::optional<int64_t> confidence;
  // JSON array, one object per candidate query of the first reply, when it
  // held more than one: its SQL, whether it ran, its row count and first
  // rows, whether it gave the returned answer, and why it was not returned.
  std::string alternatives;
  // JSON object, when the first generation asked for samples: how many
  // replies came, how many gave the answer, the verdict and its reason, and
  // each reply's first reading (agent/quality/samples.h).
  std::string samples;
  // What the model's review said of the answer (agent/quality/review.h's
  // ReviewOutcomeName): accepted, not accepted, not reviewed, unreadable.
  std::string review;
  // Set by History when a write fails, cleared when a later write of the run
  // succeeds; never in the file itself (a record the file holds was kept).
  std::string not_kept;
  // Reads for the prompt stopped before their end, and by what
  // (Schema::stopped_reads, or the host's interrupt).
  std::vector<std::string> stopped_reads;
  // Why the confidence is what it is: the rows of the confidence table
  // (agent/base/confidence.h) that applied, "low: ..." below its threshold.
  std::string confidence_reason;
};

// How agent_runs and agent_attempts show a field. The history file's JSON
// holds the value itself, whatever its column shows.
enum class ShownAs {
  // A number or a text as it is ("" stays ""), a bool as 0 or 1, a status
  // by its name; an optional number NULL while it has none.
  kAsIs,
  // A text NULL when ""; a list NULL when empty, else JSON (SQLite's subtype
  // 'J'): an array, or for node times an object of milliseconds per node in
  // the order they ran, to the microsecond.
  kNullIfEmpty,
  kNullUnlessPositive,  // a run or attempt number: NULL for 0 (none)
  kNullIfNegative,      // a count a provider may not report (-1): NULL
  kLines,               // a list of texts, one a line; NULL when empty
};

// One field of a run or an attempt, and every name it has. The history keeps
// it in `member`; agent_runs (agent_attempts) shows it as the column
// `column`, in the order of the table below, typed by its member (DeclaredType)
// and shown as `shown` says (ShowField); the history file's JSON (RunToJson,
// RunFromJson) holds it under `file_key`, or under `column` when that is
// empty, unless `in_file` is false.
template <typename Record>
struct RecordField {
  using Member = std::variant<int Record::*, int64_t Record::*, bool Record::*, double Record::*,
                              std::string Record::*, RunStatus Record::*,
                              std::optional<int64_t> Record::*, std::vector<std::string> Record::*,
                              std::vector<int64_t> Record::*, NodeTimes Record::*>;
  std::string_view column;
  Member member;
  ShownAs shown;
  std::string_view doc;            // what the column holds, for whoever reads this table
  std::string_view file_key = {};  // an older name the history file keeps; "" = `column`
  bool in_file = true;

  constexpr std::string_view key() const { return file_key.empty() ? column : file_key; }
};

// The columns of agent_runs, in order: SQL written against agent_runs reads
// them by these names, and history files by their keys; rename none.
inline constexpr RecordField<RunRecord> kRunFields[] = {
    {"id", &RunRecord::id, ShownAs::kAsIs,
     "the run's number in this history (1, 2, ...; never reused)"},
    {"question", &RunRecord::question, ShownAs::kAsIs, "the question as asked"},
    {"status", &RunRecord::status, ShownAs::kAsIs, "ok, failed, refused, ... (RunStatusName)"},
    {"sql", &RunRecord::sql, ShownAs::kNullIfEmpty,
     "the final SQL: the one answered with, or the last tried"},
    {"attempts", &RunRecord::attempts, ShownAs::kAsIs, "attempts made"},
    {"error", &RunRecord::error, ShownAs::kNullIfEmpty,
     "why it failed: the first real cause, then the retries"},
    {"error_type", &RunRecord::error_type, ShownAs::kNullIfEmpty, "that cause's ErrorKind name"},
    {"reflection", &RunRecord::reflection, ShownAs::kNullIfEmpty, "JSON of the last reflection"},
    {"answer_attempt", &RunRecord::answer_attempt, ShownAs::kNullUnlessPositive,
     "the attempt whose rows were returned"},
    {"rows", &RunRecord::rows, ShownAs::kAsIs,
     "rows returned to the caller, once it read them all, or those returned before an interrupt "
     "or an error stopped them"},
    {"truncated", &RunRecord::truncated, ShownAs::kAsIs, "1 when max_rows cut the result"},
    {"provider", &RunRecord::provider, ShownAs::kNullIfEmpty, "the provider asked"},
    {"model", &RunRecord::model, ShownAs::kNullIfEmpty, "the model asked"},
    {"llm_calls", &RunRecord::llm_calls, ShownAs::kAsIs,
     "model calls, an explanation's and a model-proposed chart's included"},
    {"duration_ms", &RunRecord::duration_ms, ShownAs::kAsIs, "the run's wall time"},
    {"llm_ms", &RunRecord::llm_ms, ShownAs::kAsIs, "time spent waiting for the model"},
    {"prompt_tokens", &RunRecord::prompt_tokens, ShownAs::kNullIfNegative,
     "as the provider reported them"},
    {"completion_tokens", &RunRecord::completion_tokens, ShownAs::kNullIfNegative,
     "as the provider reported them"},
    {"created_at", &RunRecord::created_at, ShownAs::kAsIs, "when it started, UTC, ISO 8601"},
    {"clarifications", &RunRecord::clarifications, ShownAs::kNullIfEmpty,
     "questions the model asked the user"},
    {"examples", &RunRecord::examples, ShownAs::kNullIfEmpty,
     "runs shown to the model as examples"},
    {"feedback", &RunRecord::feedback, ShownAs::kNullIfEmpty, "good or bad (agent_feedback)"},
    {"explanation", &RunRecord::explanation, ShownAs::kNullIfEmpty,
     "agent_explain()'s text, once asked for"},
    {"session", &RunRecord::session, ShownAs::kNullIfEmpty, "the session it was asked in"},
    {"standalone_question", &RunRecord::standalone, ShownAs::kNullIfEmpty,
     "a follow-up as the model restated it on its own", "standalone"},
    {"cached_from", &RunRecord::cached_from, ShownAs::kNullUnlessPositive,
     "the run whose SQL answered again, with no model call"},
    {"node_times", &RunRecord::node_times, ShownAs::kNullIfEmpty,
     "milliseconds spent in each node"},
    {"advice", &RunRecord::advice, ShownAs::kLines,
     "CREATE INDEX statements that would serve the answer's slow scans "
     "(agent/quality/performance.h)"},
    {"stood_by", &RunRecord::stood_by, ShownAs::kNullUnlessPositive,
     "the attempt whose query the model stood by after its result was sent back, and whose rows "
     "were returned"},
    {"confidence", &RunRecord::confidence, ShownAs::kAsIs,
     "0 to 100: how often answers like this one were right (README: How sure); NULL with no "
     "answer"},
    {"alternatives", &RunRecord::alternatives, ShownAs::kNullIfEmpty,
     "JSON: each candidate query of the first reply, with its rows, whether it agreed with the "
     "answer and why it was not returned"},
    {"not_kept",
     &RunRecord::not_kept,
     ShownAs::kNullIfEmpty,
     "what history_file did not keep of the run, and why: it lasts only as long as the connection",
     {},
     false},
    {"stopped_reads", &RunRecord::stopped_reads, ShownAs::kLines,
     "reads for the prompt stopped before their end and by what (a sample read past its bound or "
     "the length cap, left out of the prompt; the host's interrupt)"},
    {"confidence_reason", &RunRecord::confidence_reason, ShownAs::kNullIfEmpty,
     "why the confidence is what it is: the rows of the confidence table that applied (README: "
     "How sure), starting \"low: \" below 50; NULL with no answer"},
    {"samples", &RunRecord::samples, ShownAs::kNullIfEmpty,
     "JSON, with samples above 1: the replies to the first prompt, how many gave the answer "
     "returned, the verdict and its reason, and each reply's first reading with its rows"},
    {"review", &RunRecord::review, ShownAs::kNullIfEmpty,
     "the model's review of the answer (review 1): accepted, not accepted (the first answer "
     "returned, below 50), unreadable (its reply was not the record: nothing changed) or not "
     "reviewed"},
};

// The columns of agent_attempts, in order; the same rules.
inline constexpr RecordField<AttemptRecord> kAttemptFields[] = {
    {"run_id", &AttemptRecord::run_id, ShownAs::kAsIs, "the run it belongs to"},
    {"attempt", &AttemptRecord::attempt, ShownAs::kAsIs, "1, 2, ... within the run"},
    {"sql", &AttemptRecord::sql, ShownAs::kNullIfEmpty, "the SQL extracted from the reply, if any"},
    {"error_type", &AttemptRecord::error_type, ShownAs::kNullIfEmpty,
     "ErrorKind name; none on success"},
    {"error", &AttemptRecord::error, ShownAs::kNullIfEmpty, "what went wrong"},
    {"hint", &AttemptRecord::hint, ShownAs::kNullIfEmpty, "the hint sent back with the error"},
    {"strategy", &AttemptRecord::strategy, ShownAs::kNullIfEmpty,
     "the correction strategy chosen after it"},
    {"diff", &AttemptRecord::diff, ShownAs::kNullIfEmpty,
     "token diff against the previous attempt's SQL"},
    {"reply", &AttemptRecord::reply, ShownAs::kNullIfEmpty, "the model's raw reply (truncated)"},
    {"reflection", &AttemptRecord::reflection, ShownAs::kNullIfEmpty, "JSON of its reflection"},
    {"prompt_tokens", &AttemptRecord::prompt_tokens, ShownAs::kNullIfNegative,
     "as the provider reported them"},
    {"completion_tokens", &AttemptRecord::completion_tokens, ShownAs::kNullIfNegative,
     "as the provider reported them"},
    {"llm_ms", &AttemptRecord::llm_ms, ShownAs::kAsIs, "time spent waiting for the model"},
    {"exec_ms", &AttemptRecord::exec_ms, ShownAs::kAsIs, "time spent running its SQL"},
    {"model", &AttemptRecord::model, ShownAs::kNullIfEmpty, "the model asked for it"},
    {"stood_by", &AttemptRecord::stood_by, ShownAs::kNullUnlessPositive,
     "the earlier attempt whose query, sent back for a check, the model repeated"},
};

// A field's declared type in its table: INTEGER, REAL or TEXT, from its
// member's type.
template <typename Record>
std::string_view DeclaredType(const RecordField<Record>& field);

// A field's value as its column shows it. `json` is true when the value is
// JSON text (SQLite's subtype 'J', for json_each).
struct ShownValue {
  Value value;
  bool json = false;
};
template <typename Record>
ShownValue ShowField(const RecordField<Record>& field, const Record& record);

// Where a history is kept beyond the connection's memory (history_file).
// Called under the history's lock; must not call back into it. Each write is
// all or nothing, and says why when it is nothing.
class HistorySink {
 public:
  virtual ~HistorySink() = default;
  // Writes the run and, when `attempts` is given, its attempts. With
  // `claim_id`, the run's id was not given by NewRunId (the sink could not be
  // asked then): it is written only if no id at or past it has been given
  // since, and ids given later are larger.
  virtual Status SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts,
                         bool claim_id) = 0;
  virtual Status ForgetRun(int64_t run_id) = 0;  // the run and its attempts
  // A run id no one writing to this sink was given before (every process's
  // connections included), at least `at_least`; ids given later are larger.
  virtual Result<int64_t> NewRunId(int64_t at_least) = 0;
  // Whether another connection (of this process or another) has written to
  // the sink since it was last read; false for a sink no one else writes.
  virtual bool ChangedElsewhere() { return false; }
  // What the sink holds now, as History::Attach takes it; an error changes
  // nothing.
  virtual Status Load(std::vector<RunRecord>* runs, std::vector<AttemptRecord>* attempts) {
    (void)runs;
    (void)attempts;
    return Status::Ok();
  }
};

// A run or attempt as JSON text, and back (for history files): every field
// of kRunFields (kAttemptFields) kept in the file, under its key. Parsing
// fails on anything that is not such an object, or on a field of the wrong
// type; a key it does not know is ignored, and a field missing keeps its
// default.
std::string RunToJson(const RunRecord& run);
std::optional<RunRecord> RunFromJson(std::string_view json);
std::string AttemptToJson(const AttemptRecord& attempt);
std::optional<AttemptRecord> AttemptFromJson(std::string_view json);

class History {
 public:
  // The runs agent_runs shows at most (the history file may keep more,
  // max_history_runs): the oldest are dropped from memory past it.
  static constexpr size_t kMemoryRuns = 1000;

  explicit History(size_t capacity = kMemoryRuns) : capacity_(capacity) {}
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // A fresh run id (1, 2, ...): with a sink, the sink's (HistorySink::NewRunId),
  // so that no other connection or process using it gives the same; when the
  // sink cannot give one (a lock held past its wait), the next id this
  // history knows of, which the run claims in the sink when it is written.
  int64_t NextRunId();
  // A fresh run id no smaller than `at_least` (ids given after it are
  // larger): for ids unique in the process as well (agent/answers/async_runs.h).
  int64_t NextRunIdFrom(int64_t at_least);
  // Every text of a run or attempt the history takes (Add, SetStopped,
  // SetExplanation: each text field of kRunFields and kAttemptFields) is kept
  // and written with every secret it knows taken out (Secrets::Scrub): the
  // secrets of every provider setting the session has used. It knows them
  // from here on; what was kept before stays as it was kept.
  void KnowSecrets(const Secrets& secrets);
  // `text` with the secrets the history knows taken out: for texts shown
  // beside the records (an ask's error, an explanation, a prompt).
  std::string Scrub(std::string_view text) const;
  // Stores a finished run and its attempts; a run of the same id kept
  // before (one still waiting on its model, ask_start) is replaced, with its
  // attempts. What the sink could not write,
  // the run's not_kept says; it is kept in memory all the same. The same
  // holds for SetRows and SetExplanation, and a run not kept is written
  // whole (with its attempts) at its next change.
  void Add(RunRecord run, std::vector<AttemptRecord> attempts);
  // Records how many rows a run returned, once the caller read them all.
  void SetRows(int64_t run_id, int64_t rows, bool truncated);
  // Records that a run's rows ended in `error` after `rows` rows (the host's
  // interrupt, the time budget, a runtime error): its status and error say
  // what stopped it, and it has no confidence, as its answer did not come
  // whole.
  void SetStopped(int64_t run_id, int64_t rows, const Status& error);
  // Records a run's explanation; its model call counts among the run's calls
  // and tokens.
  // Counts one more model call of a run, and its tokens (-1: not known),
  // such as the one agent_chart() made for its chart.
  void AddModelCall(int64_t run_id, int64_t prompt_tokens, int64_t completion_tokens);
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

  // Every run kept, or the one of id `id` (none when there is none).
  std::vector<RunRecord> Runs(std::optional<int64_t> id = std::nullopt) const;
  // Every attempt kept, or those of run `run_id`.
  std::vector<AttemptRecord> Attempts(std::optional<int64_t> run_id = std::nullopt) const;
  // The run kept under `run_id` when it ended with an answer (status ok and
  // its SQL); else InvalidArgument: no such run, or "run N has no
  // `missing` (its status is ...)".
  Result<RunRecord> AnsweredRun(int64_t run_id, std::string_view missing) const;
  // How sure a run kept was of its answer, and why: its confidence,
  // confidence_reason and alternatives, for an answer the cache gives again.
  // Empty values for a run not kept.
  struct Standing {
    std::optional<int64_t> confidence;
    std::string confidence_reason;
    std::string alternatives;
  };
  Standing StandingOf(int64_t run_id) const;
  bool empty() const;
  // True when some run kept is marked good (cheap: no copy).
  bool HasGoodRuns() const;

  // Takes the runs and attempts saved earlier, and writes every change from
  // now on to `sink`. Only for a history with no runs yet (false otherwise).
  bool Attach(std::shared_ptr<HistorySink> sink, std::vector<RunRecord> runs,
              std::vector<AttemptRecord> attempts);
  // Reads the sink again when another connection wrote to it since it was
  // last read (runs another process asked, verdicts, forgettings): runs this
  // history could not write (not_kept) stay as they are here, every other is
  // as the sink holds it. True when it read the sink.
  bool Refresh();
  // With no sink: why none is used where one was meant to be (the default
  // history file could not be made or opened). Each run added from now on
  // says it in not_kept; "" says nothing.
  void SetNoSinkReason(std::string why);
  // Shows a run as `replaced` in memory only: what this
  // connection concludes of a run another may still be writing (a run another
  // process may still be waiting on) is never written over its record.
  void ShowOnly(RunRecord replaced);

  // Lock order: History's methods are called with other locks held (an
  // asynchronous run's, the registry of runs', a session's settings lock),
  // never the other way. Those locks name this one in ACQUIRED_BEFORE, so
  // clang checks the order (-Wthread-safety-beta); it is public for that
  // alone: nothing outside History takes it.
  mutable Mutex mu_;

 private:
  size_t capacity_;
  int64_t next_id_ GUARDED_BY(mu_) = 1;
  std::vector<RunRecord> runs_ GUARDED_BY(mu_);
  std::vector<AttemptRecord> attempts_ GUARDED_BY(mu_);
  std::shared_ptr<HistorySink> sink_ GUARDED_BY(mu_);
  Secrets secrets_ GUARDED_BY(mu_);
  // Ids given while the sink could not give one, until their run is written.
  std::set<int64_t> unclaimed_ GUARDED_BY(mu_);
  std::string no_sink_reason_ GUARDED_BY(mu_);

  // Writes `run` to the sink (whole, with its attempts, when it was not
  // kept before). Ok without a sink.
  Status WriteLocked(const RunRecord& run) REQUIRES(mu_);
  // WriteLocked, and the run's not_kept set (naming `what`) or cleared.
  void SaveRunLocked(RunRecord& run, std::string_view what) REQUIRES(mu_);
};

}  // namespace querypilot
