// Reports: the figures of an evaluation run, as a terminal table, as JSON and
// as an SVG chart, and two runs side by side.
//
// Definitions (each over the questions scored, with the dataset's own
// comparison unless a column says otherwise):
//   final accuracy        the answer ask() returned is right
//   first-attempt         the first SQL generated is right (no correction)
//   corrected             first attempt wrong, final answer right
//   correction effect.    corrected / first-attempt failures
//   mis-repairs           first attempt right, final answer wrong
//   accuracy by attempt   right after at most k attempts
// Reflection, over first attempts that ran without error, scored with the
// set comparison (and again with the float-tolerant one):
//   recall                flagged wrong answers / wrong answers
//   precision             flagged wrong answers / all flagged answers
//   right sent back       flagged right answers / right answers (mis-repair risk)
// Value grounding, over first attempts: literals found absent from their
// column, and how often a proposed value is one the gold SQL uses.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "eval/runner.h"

namespace querypilot::eval {

struct Summary {
  std::string name;
  std::string provider;
  int max_attempts = 0;
  size_t questions = 0;    // scored
  size_t gold_failed = 0;  // not scored: the gold SQL failed
  size_t final_ok = 0, first_ok = 0;
  size_t final_set = 0, final_bag = 0, final_tolerant = 0;
  size_t first_failures = 0, corrected = 0, mis_repairs = 0;
  size_t rows_inconsistent = 0;
  double avg_attempts = 0, llm_calls = 0;
  double tokens = -1;  // per question; -1 when the provider reported none
  bool tokens_estimated = false;
  double prompt_chars = -1;  // mean first-prompt size, replay only
  double latency_p50 = 0, latency_p95 = 0;
  std::vector<double> accuracy_by_attempt;  // [k-1]: right after at most k attempts
  struct Count {
    size_t n = 0, first_ok = 0, final_ok = 0;
    size_t user_ok = 0;         // final answers right as a user compares (Verdict::user_ok)
    double confidence_sum = 0;  // the confidences stated (by_confidence), for their mean
    double prompt_chars = 0;    // mean, by database
    int64_t prompt_chars_max = 0;
  };
  std::map<std::string, Count> by_outcome;     // attempt 1's outcome
  std::map<std::string, Count> by_difficulty;  // where the dataset has it
  std::map<std::string, Count> by_database;
  std::map<std::string, size_t> by_status;  // agent_runs.status
  // agent_runs.confidence by band ("0-39", "40-59", "60-79", "80-100",
  // "none"): answers, and how many were right (final_ok).
  std::map<std::string, Count> by_confidence;
  // Answers by what their independent samples said (agent_runs.samples'
  // verdict, with the samples setting above 1), and how many were right.
  std::map<std::string, Count> by_samples;
  // Reflection on first attempts that ran; _tol: with the float-tolerant comparison.
  size_t ran_wrong = 0, ran_right = 0, flagged_wrong = 0, flagged_right = 0;
  size_t ran_wrong_tol = 0, ran_right_tol = 0, flagged_wrong_tol = 0, flagged_right_tol = 0;
  std::map<std::string, Count> by_finding;  // critical kind: n flags, first_ok of them right
  // Value grounding on first attempts.
  size_t literals_not_found = 0, not_found_gold_value = 0;
  size_t literals_elsewhere = 0, elsewhere_gold_column = 0;
  // Value hints (replay): questions whose gold SQL uses a text literal the
  // question names; those whose first prompt hints every such literal.
  size_t questions_naming_values = 0, questions_hinted = 0;
  double value_hints = 0;  // hint lines per question
  size_t without_prediction = 0, unmatched_predictions = 0, prompt_drift = 0;

  double Rate(size_t k) const { return questions ? 100.0 * k / questions : 0; }
  double CorrectionEffectiveness() const {
    return first_failures ? 100.0 * corrected / first_failures : 0;
  }
  // Percent, 0 when there is nothing to divide by.
  static double Ratio(size_t a, size_t b) { return b ? 100.0 * a / b : 0; }
};

Summary Summarise(const RunOutput& run);

nlohmann::ordered_json SummaryToJson(const Summary& s);
Summary SummaryFromJson(const nlohmann::json& j);
// One eval run as the report file writes it: spec, summary and every
// question with its attempts. (Not the history file's RunToJson, history.h.)
nlohmann::ordered_json EvalRunToReportJson(const RunOutput& run, const Summary& s);

// One line per run, then each run's breakdowns.
void PrintTable(std::ostream& out, const std::vector<Summary>& runs);

// Reflection and grounding on first attempts: one line per run with the
// fewest attempts (attempt 1 is the same in every run of a file), then the
// totals over those runs and over the runs whose name contains "4o".
void PrintReflectionTable(std::ostream& out, const std::vector<Summary>& runs);

// The first reading's accuracy against the answer returned, and how often
// answers were right per confidence band: each run, then all runs pooled.
void PrintCalibration(std::ostream& out, const std::vector<Summary>& runs);

// An SVG with two panels: accuracy after 1..N attempts per run, and LLM calls
// and tokens per question per run.
std::string ChartSvg(const std::vector<Summary>& runs);

// Two evaluation JSON files side by side: each metric with its difference,
// then the questions one got right and the other wrong. Runs are paired by
// name, or by position when names differ.
void PrintComparison(std::ostream& out, const nlohmann::json& a, const nlohmann::json& b);

}  // namespace querypilot::eval
