// Candidates: the other queries of a model's first reply (the `candidates`
// setting), each checked and run as the first reading was, the answer picked
// among them (agreement.h), how sure QueryPilot is of the answer it returns,
// and what agent_runs.alternatives shows of them.
//
// The agent calls RunCandidates as one node (agent/run/agent.cpp: candidates)
// and AnswerConfidence and AlternativesJson when it finishes (agent/run/finish.cpp). What needs the
// agent (its result checks, a model call) is handed in as functions, so this
// unit knows nothing of the model or the prompts.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/value.h"
#include "agent/quality/agreement.h"
#include "agent/quality/readings.h"
#include "agent/quality/reflect.h"
#include "agent/sql/executor.h"

struct sqlite3;

namespace querypilot {

// One query of the first reply as it ran, the first reading first: its
// result as far as it was read (copied: no statement is kept open across a
// model call), and what the checks found.
struct Candidate {
  std::string sql;
  bool ran = false;
  std::string failure;  // why it did not run, when it did not
  std::vector<std::string> columns;
  std::deque<Row> rows;
  bool complete = false;
  std::vector<ReflectionIssue> issues;
  Lost lost = Lost::kNot;  // why it was not returned
  bool returned = false;
  // The reading SQLite runs the same program for (0: the first), whose
  // result this one gives without running again.
  std::optional<size_t> same_as;
  bool beside = false;  // it ran beside the host's connection (beside.h)
  ResultRows View() const { return {&columns, &rows, complete}; }
  // Why it was not returned, as agent_runs.alternatives says it ("" when
  // it was, or gave the same answer).
  std::string WhyNot() const;
};

// The first note that explains an answer away (FindingRow::hollow), or null.
const ReflectionIssue* HollowNote(const std::vector<ReflectionIssue>& issues);
size_t CountCritical(const std::vector<ReflectionIssue>& issues);

// How the other readings run and are judged.
struct CandidateRunner {
  sqlite3* db = nullptr;
  // How the readings' SQL is checked for `db` (agent/sql/check_connection.h).
  SqlTarget sql;
  // The limits of an other reading that runs on the host's connection: its
  // share of the time budget, stopped by QueryPilot's progress handler,
  // never by sqlite3_interrupt (it would end the statement that asked, and
  // the answer with it). With StopMethod::kBetweenSteps nothing could stop
  // a step that never ends: such a reading is not run.
  ExecutionLimits limits;
  // The first reading's time in SQLite (ms), and when the other readings
  // were launched: the readings beside are stopped at ReadingsDeadline(),
  // the first reading's end being the moment RunCandidates starts.
  double first_ms = 0;
  int floor_ms = 300;  // readings_wait_ms: the least they get from their start
  std::chrono::steady_clock::time_point launched{};
  // The share of sql_timeout_ms of each reading beside, for the message of
  // one stopped at it.
  int beside_share_ms = 0;
  // The first reading's limits: a reading beside that is picked is read
  // again on the host's connection under them, where its rows stream.
  ExecutionLimits reread;
  // The findings on a result that ran (the agent's check_result).
  std::function<std::vector<ReflectionIssue>(const std::string& sql, const LiveQuery& query,
                                             double exec_ms)>
      check;
  // candidate_select: sends the text SelectionPrompt() wrote to the model
  // and returns its reply, or nullopt when the call failed. Empty: answers
  // still disagreeing are not put to the model.
  std::function<std::optional<std::string>(const std::string& prompt)> ask_model;
};

// The first reading, as the agent's execute and check_result nodes left it.
struct FirstReading {
  std::string sql;
  const LiveQuery* query = nullptr;  // null when it did not run
  std::vector<ReflectionIssue> issues;
  std::string failure;  // when it did not run
};

struct CandidatesResult {
  std::vector<Candidate> candidates;  // the first reading first
  size_t picked = 0;                  // the index of the answer returned
  // The picked reading's query when it is not the first (the first's stays
  // with the caller); null otherwise.
  std::unique_ptr<LiveQuery> query;
  // Reading a picked reading again on the host's connection ran past its
  // budget and the watchdog stopped the connection: it can run no more SQL.
  bool stopped_connection = false;
  double wait_ms = 0;  // waiting for the readings beside
};

// Ends `others` (the reply's other queries, in its order, launched as the
// first reading started: LaunchOtherReadings) and judges them as the first
// reading was: those beside are waited for until ReadingsDeadline(), or
// until the host interrupts the ask,
// then the rest are interrupted; those on the host's connection run now
// under `runner.limits`, or are skipped when nothing could stop them there.
// A query whose program is an earlier one's gives that one's answer. One
// that fails or runs past its time is dropped, not failed. Then picks the
// answer (PickCandidate) and, with `runner.ask_model`, puts answers still
// disagreeing to the model. Never returns an error.
CandidatesResult RunCandidates(const std::string& question, const FirstReading& first,
                               std::vector<OtherReading> others, const CandidateRunner& runner);

// The user message of the selection call: the question, then each
// candidate of `shown` (indexes into `candidates`) with its query and first
// rows, and what to answer.
std::string SelectionPrompt(const std::string& question, const std::vector<Candidate>& candidates,
                            const std::vector<size_t>& shown);

// The candidate a selection reply names (its first digit, 1-based among
// `shown`), or nullopt when it names none of them.
std::optional<size_t> ParseSelection(const std::string& reply, const std::vector<size_t>& shown);

// The answer returned, as far as its confidence depends on it.
struct ReturnedAnswer {
  ResultRows rows;  // its result as read (not yet taken by the caller)
  // The findings on it (its reflection's issues); null: none.
  const std::vector<ReflectionIssue>* issues = nullptr;
  int answer_attempt = 1;       // the attempt it came from
  bool example_reused = false;  // its SQL is a verified example's
  // Independent samples (samples.h's SampleTally): the replies compared with
  // it, the first included, those giving it, and what the first one that
  // disagrees gives (DescribeAnswer).
  int samples = 0;
  int samples_agreeing = 0;
  std::string sample_other_answer;
  bool voted = false;  // the samples' vote chose it (ConfidenceInputs::voted)
  // The model's review of it (review.h) and, not accepted, its reasoning.
  ReviewOutcome review = ReviewOutcome::kNotReviewed;
  std::string review_reasoning;
};

// How sure the answer returned is, and why (JudgeConfidence, agreement.h):
// its findings, its attempt, an example reused, and the agreement of the
// first reply's candidates that ran with it.
ConfidenceVerdict AnswerConfidence(const std::vector<Candidate>& candidates,
                                   const ReturnedAnswer& answer);

// agent_runs.alternatives: a JSON array, one object per candidate in the
// reply's order: {"sql", "ran", ["error"], ["rows", "first_rows",
// "findings"], ["same_as"], "returned", "agrees", ["why_not"]}.
std::string AlternativesJson(const std::vector<Candidate>& candidates);

}  // namespace querypilot
