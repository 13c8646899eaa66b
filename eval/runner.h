// The evaluation runner: every question through the real extension.
//
// For each question it opens (once per database) a read-only connection,
// loads querypilot.so into it, sets the provider and limits with
// agent_config(), runs `SELECT row FROM ask(?)` to the end as a user would,
// then reads the run and its attempts back from agent_runs/agent_attempts.
// Each attempt's SQL that ran is scored by executing it, and the gold SQL, on a
// second read-only connection with a time budget. Databases are opened with
// mode=ro, so neither connection can write to them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "eval/dataset.h"
#include "eval/score.h"

namespace querypilot::eval {

class ReviewReplies;

// A value-grounding finding of an attempt's reflection.
struct GroundingFinding {
  std::string kind;  // value_not_found, value_elsewhere, value_missing
  std::string literal;
  std::string column;               // "table.column"
  std::vector<std::string> values;  // real values, or "table.column" places
};

struct AttemptScore {
  int attempt = 0;
  std::string sql;
  std::string error_type;  // "" when it ran
  Verdict verdict;         // all false unless it ran
  // From agent_attempts.reflection.
  bool flagged = false;  // it ran, and the reflection asked for another attempt
  std::string strategy;
  std::vector<std::string> critical;  // kinds of the critical findings
  std::vector<std::string> notes;     // kinds of the warnings: recorded, no model call
  std::vector<GroundingFinding> grounding;
};

struct QuestionResult {
  std::string id;
  std::string dataset;
  std::string db_id;
  std::string difficulty;
  std::string scoring;  // "set" or "bag"
  std::string status;   // agent_runs.status
  std::string error;    // the error ask() raised, "" when it returned rows
  int attempts = 0;
  int llm_calls = 0;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  int64_t prompt_chars = -1;  // replay only: the first request's prompt
  double latency_ms = 0;      // the whole ask() statement, as the client saw it
  double llm_ms = 0;
  int64_t ask_rows = 0;
  bool rows_consistent = true;  // ask() returned as many rows as the final SQL has
  bool gold_failed = false;     // the gold SQL itself failed; not scored
  int answer_attempt = 0;       // agent_runs.answer_attempt; 0 = the last attempt
  double duration_ms = 0;       // agent_runs.duration_ms
  double node_ms_sum = 0;       // the nodes of agent_runs.node_times, added up
  std::string advice;           // agent_runs.advice: CREATE INDEX statements, "" for none
  std::string answer_sql;       // agent_runs.sql of a run that returned rows
  int confidence = -1;          // agent_runs.confidence; -1 when NULL
  std::string samples_verdict;  // agent_runs.samples' verdict; "" with no samples
  std::string samples;          // agent_runs.samples, JSON; "" with no samples
  std::string review;           // agent_runs.review: accepted, not accepted, ...; "" when NULL
  int review_requests = 0;      // replay: review requests, and corrections a review sent back
  int review_missing = 0;       // ... that no recorded reply answered
  Verdict answer_verdict;       // answer_sql against the gold result
  std::string gold_sql;
  std::vector<std::string> gold_literals;  // the text literals of the gold SQL
  // Value hints (replay only): the gold SQL's text literals that the question
  // names (case-insensitive, evidence excluded), and how many of them the
  // first prompt's value hints list exactly.
  int named_literals = 0;
  int hinted_literals = 0;
  int value_hints = 0;  // hint lines in the first prompt
  std::vector<AttemptScore> attempt_scores;

  // Scored with the dataset's own comparison.
  bool FirstOk() const;
  bool FinalOk() const;
  // The attempt whose rows ask() returned (answer_attempt, else the last);
  // null when none. Its SQL may be another candidate of that attempt's
  // reply (answer_sql): FinalVerdict scores answer_sql.
  const AttemptScore* Answer() const;
  // The answer after at most `k` attempts (the k-th, or the last if fewer).
  bool OkAfter(int k) const;
  Verdict FinalVerdict() const;
  // What went wrong first: attempt 1's error type, "wrong_result" when it ran
  // but was wrong, or "correct".
  std::string FirstOutcome() const;
};

struct RunSpec {
  std::string name;
  std::string extension_path;
  int max_attempts = 3;
  int timeout_ms = 30000;
  // agent_config settings applied to every connection, in order.
  std::vector<std::pair<std::string, std::string>> settings;
  const PredictionFile* replay = nullptr;  // answer with these predictions
  size_t limit = 0;                        // at most this many questions; 0 = all
  bool evidence = true;                    // ask with the dataset's evidence as a hint
  // Give each database's own column descriptions (BIRD's
  // <db_id>_description/*.csv) to agent_describe before asking.
  bool descriptions = false;
  // Replay: the recorded replies to review requests (not owned); null: a
  // review request gets HTTP 400.
  ReviewReplies* review_replies = nullptr;
};

struct RunOutput {
  RunSpec spec;
  std::string provider;  // "replay" or the configured provider and model
  bool tokens_estimated = false;
  std::vector<QuestionResult> questions;
  size_t without_prediction = 0;     // questions the prediction file lacks
  size_t unmatched_predictions = 0;  // prediction lines for no dataset question
  // Recorded replies answering a first prompt whose rules (the system text
  // before the schema) differ from those of the prompt they were written for.
  size_t prompt_drift = 0;
  double wall_seconds = 0;
};

// Results of executing SQL, shared across runs (gold SQL and repeated
// predictions are executed once per database).
class ResultCache {
 public:
  ResultCache() = default;
  ~ResultCache();
  ResultCache(const ResultCache&) = delete;
  ResultCache& operator=(const ResultCache&) = delete;

  const QueryResult& Get(const std::string& db_path, const std::string& sql, int timeout_ms);

 private:
  std::map<std::string, struct sqlite3*> connections_;
  std::map<std::pair<std::string, std::string>, QueryResult> results_;
};

using Progress = std::function<void(size_t done, size_t total, size_t correct)>;

// Runs `questions` (those with a prediction, in replay mode) through the
// extension. Fails only when the run cannot start (no extension, no port);
// a question that fails is a scored result.
Result<RunOutput> RunEvaluation(const std::vector<Question>& questions, const RunSpec& spec,
                                ResultCache& cache, const Progress& progress);

}  // namespace querypilot::eval
