#include "eval/report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "agent/base/confidence.h"
#include "agent/base/text.h"
#include "agent/providers/url.h"
#include "agent/quality/findings.h"

namespace querypilot::eval {
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::lround(p / 100.0 * (v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

std::string Pct(double v) {
  return fmt::format("{:.1f}%", v);
}

ordered_json CountsToJson(const std::map<std::string, Summary::Count>& m, bool prompts,
                          bool user = false) {
  ordered_json out = ordered_json::object();
  for (const auto& [k, c] : m) {
    ordered_json e = {{"n", c.n}, {"first_ok", c.first_ok}, {"final_ok", c.final_ok}};
    if (user) {
      e["user_ok"] = c.user_ok;
      e["mean_confidence"] = c.n ? c.confidence_sum / static_cast<double>(c.n) : 0.0;
    }
    if (prompts) {
      e["prompt_chars_mean"] = c.prompt_chars;
      e["prompt_chars_max"] = c.prompt_chars_max;
    }
    out[k] = e;
  }
  return out;
}

std::map<std::string, Summary::Count> CountsFromJson(const json& j) {
  std::map<std::string, Summary::Count> out;
  if (!j.is_object()) return out;
  for (const auto& [k, e] : j.items()) {
    Summary::Count c;
    c.n = e.value("n", size_t{0});
    c.first_ok = e.value("first_ok", size_t{0});
    c.final_ok = e.value("final_ok", size_t{0});
    c.user_ok = e.value("user_ok", size_t{0});
    c.confidence_sum = e.value("mean_confidence", 0.0) * static_cast<double>(c.n);
    c.prompt_chars = e.value("prompt_chars_mean", 0.0);
    c.prompt_chars_max = e.value("prompt_chars_max", int64_t{0});
    out[k] = c;
  }
  return out;
}

bool ContainsIgnoreCase(std::string_view hay, std::string_view needle) {
  return text::Lower(hay).find(text::Lower(needle)) != std::string::npos;
}

void CountReflection(const QuestionResult& q, Summary& s) {
  if (q.attempt_scores.empty()) return;
  const AttemptScore& a = q.attempt_scores.front();
  if (!a.error_type.empty() || a.sql.empty()) return;
  const bool right = a.verdict.set_ok, right_tol = a.verdict.tolerant_ok;
  ++(right ? s.ran_right : s.ran_wrong);
  ++(right_tol ? s.ran_right_tol : s.ran_wrong_tol);
  if (a.flagged) {
    ++(right ? s.flagged_right : s.flagged_wrong);
    ++(right_tol ? s.flagged_right_tol : s.flagged_wrong_tol);
    std::set<std::string> kinds(a.critical.begin(), a.critical.end());
    for (const auto& k : kinds) {
      ++s.by_finding[k].n;
      s.by_finding[k].first_ok += right;
    }
  }
  for (const GroundingFinding& g : a.grounding) {
    if (FindingNamed(g.kind) == Finding::kValueNotFound) {
      ++s.literals_not_found;
      s.not_found_gold_value +=
          std::any_of(g.values.begin(), g.values.end(), [&](const std::string& v) {
            return std::find(q.gold_literals.begin(), q.gold_literals.end(), v) !=
                   q.gold_literals.end();
          });
    } else if (FindingNamed(g.kind) == Finding::kValueElsewhere) {
      ++s.literals_elsewhere;
      s.elsewhere_gold_column +=
          std::any_of(g.values.begin(), g.values.end(), [&](const std::string& place) {
            size_t dot = place.rfind('.');
            return ContainsIgnoreCase(q.gold_sql,
                                      place.substr(dot == std::string::npos ? 0 : dot + 1));
          });
    }
  }
}

}  // namespace

Summary Summarise(const RunOutput& run) {
  Summary s;
  s.name = run.spec.name;
  s.provider = run.provider;
  s.max_attempts = run.spec.max_attempts;
  s.tokens_estimated = run.tokens_estimated;
  s.without_prediction = run.without_prediction;
  s.unmatched_predictions = run.unmatched_predictions;
  s.prompt_drift = run.prompt_drift;
  std::vector<double> latencies;
  double attempts = 0, calls = 0, tokens = 0, chars = 0;
  size_t with_tokens = 0, with_chars = 0;
  s.accuracy_by_attempt.assign(std::max(1, run.spec.max_attempts), 0);
  for (const QuestionResult& q : run.questions) {
    ++s.by_status[q.status.empty() ? "no_run" : q.status];
    if (q.gold_failed) {
      ++s.gold_failed;
      continue;
    }
    ++s.questions;
    const bool first = q.FirstOk(), final = q.FinalOk();
    if (q.status == "ok") {
      Summary::Count& band = s.by_confidence[std::string(ConfidenceBandOf(q.confidence))];
      ++band.n;
      band.first_ok += first;
      band.final_ok += final;
      band.user_ok += q.FinalVerdict().user_ok;
      band.confidence_sum += q.confidence;
      if (!q.samples_verdict.empty()) {
        Summary::Count& by = s.by_samples[q.samples_verdict];
        ++by.n;
        by.first_ok += first;
        by.final_ok += final;
        by.user_ok += q.FinalVerdict().user_ok;
      }
    }
    const Verdict v = q.FinalVerdict();
    s.first_ok += first;
    s.final_ok += final;
    s.final_set += v.set_ok;
    s.final_bag += v.bag_ok;
    s.final_tolerant += v.tolerant_ok;
    if (!first) {
      ++s.first_failures;
      s.corrected += final;
    }
    s.mis_repairs += first && !final;
    s.rows_inconsistent += !q.rows_consistent;
    for (size_t k = 0; k < s.accuracy_by_attempt.size(); ++k) {
      s.accuracy_by_attempt[k] += q.OkAfter(static_cast<int>(k + 1));
    }
    attempts += q.attempts;
    calls += q.llm_calls;
    if (q.prompt_tokens >= 0) {
      tokens += q.prompt_tokens + std::max<int64_t>(0, q.completion_tokens);
      ++with_tokens;
    }
    if (q.prompt_chars >= 0) {
      chars += q.prompt_chars;
      ++with_chars;
    }
    latencies.push_back(q.latency_ms);
    for (auto* m : {&s.by_outcome[q.FirstOutcome()], &s.by_database[q.db_id]}) {
      ++m->n;
      m->first_ok += first;
      m->final_ok += final;
    }
    if (q.prompt_chars >= 0) {
      Summary::Count& d = s.by_database[q.db_id];
      d.prompt_chars += q.prompt_chars;
      d.prompt_chars_max = std::max(d.prompt_chars_max, q.prompt_chars);
    }
    CountReflection(q, s);
    if (q.named_literals > 0) {
      ++s.questions_naming_values;
      s.questions_hinted += q.hinted_literals == q.named_literals;
    }
    s.value_hints += q.value_hints;
    if (!q.difficulty.empty()) {
      Summary::Count& d = s.by_difficulty[q.difficulty];
      ++d.n;
      d.first_ok += first;
      d.final_ok += final;
    }
  }
  for (auto& [db, c] : s.by_database) {
    if (c.n) c.prompt_chars /= c.n;
  }
  if (s.questions) {
    s.avg_attempts = attempts / s.questions;
    s.llm_calls = calls / s.questions;
    for (double& a : s.accuracy_by_attempt) a = 100.0 * a / s.questions;
    s.value_hints /= s.questions;
  }
  if (with_tokens) s.tokens = tokens / with_tokens;
  if (with_chars) s.prompt_chars = chars / with_chars;
  s.latency_p50 = Percentile(latencies, 50);
  s.latency_p95 = Percentile(latencies, 95);
  return s;
}

namespace {

// Every plain field of Summary with its JSON name, written and read alike.
struct CountField {
  const char* name;
  size_t Summary::*member;
};
constexpr CountField kCountFields[] = {
    {"questions", &Summary::questions},
    {"gold_failed", &Summary::gold_failed},
    {"final_ok", &Summary::final_ok},
    {"first_ok", &Summary::first_ok},
    {"final_set", &Summary::final_set},
    {"final_bag", &Summary::final_bag},
    {"final_tolerant", &Summary::final_tolerant},
    {"first_failures", &Summary::first_failures},
    {"corrected", &Summary::corrected},
    {"mis_repairs", &Summary::mis_repairs},
    {"rows_inconsistent", &Summary::rows_inconsistent},
    {"without_prediction", &Summary::without_prediction},
    {"unmatched_predictions", &Summary::unmatched_predictions},
    {"prompt_drift", &Summary::prompt_drift},
    {"first_ran_wrong", &Summary::ran_wrong},
    {"first_ran_right", &Summary::ran_right},
    {"flagged_wrong", &Summary::flagged_wrong},
    {"flagged_right", &Summary::flagged_right},
    {"first_ran_wrong_tolerant", &Summary::ran_wrong_tol},
    {"first_ran_right_tolerant", &Summary::ran_right_tol},
    {"flagged_wrong_tolerant", &Summary::flagged_wrong_tol},
    {"flagged_right_tolerant", &Summary::flagged_right_tol},
    {"literals_not_found", &Summary::literals_not_found},
    {"not_found_gold_value", &Summary::not_found_gold_value},
    {"literals_elsewhere", &Summary::literals_elsewhere},
    {"elsewhere_gold_column", &Summary::elsewhere_gold_column},
    {"questions_naming_values", &Summary::questions_naming_values},
    {"questions_hinted", &Summary::questions_hinted},
};
struct NumberField {
  const char* name;
  double Summary::*member;
  double missing;  // when a file lacks it
};
constexpr NumberField kNumberFields[] = {
    {"avg_attempts", &Summary::avg_attempts, 0},
    {"llm_calls_per_question", &Summary::llm_calls, 0},
    {"tokens_per_question", &Summary::tokens, -1},
    {"prompt_chars_mean", &Summary::prompt_chars, -1},
    {"latency_ms_p50", &Summary::latency_p50, 0},
    {"latency_ms_p95", &Summary::latency_p95, 0},
    {"value_hints_per_question", &Summary::value_hints, 0},
};

}  // namespace

ordered_json SummaryToJson(const Summary& s) {
  ordered_json j;
  j["name"] = s.name;
  j["provider"] = s.provider;
  j["max_attempts"] = s.max_attempts;
  for (const CountField& f : kCountFields) j[f.name] = s.*f.member;
  for (const NumberField& f : kNumberFields) j[f.name] = s.*f.member;
  j["tokens_estimated"] = s.tokens_estimated;
  // Derived, for readers of the file; not read back.
  j["final_accuracy"] = s.Rate(s.final_ok);
  j["first_attempt_accuracy"] = s.Rate(s.first_ok);
  j["final_set_accuracy"] = s.Rate(s.final_set);
  j["final_bag_accuracy"] = s.Rate(s.final_bag);
  j["final_float_tolerant_accuracy"] = s.Rate(s.final_tolerant);
  j["correction_effectiveness"] = s.CorrectionEffectiveness();
  j["accuracy_by_attempt"] = s.accuracy_by_attempt;
  j["by_first_attempt_outcome"] = CountsToJson(s.by_outcome, false);
  j["by_difficulty"] = CountsToJson(s.by_difficulty, false);
  j["by_database"] = CountsToJson(s.by_database, true);
  j["by_status"] = s.by_status;
  j["reflection_recall"] = Summary::Ratio(s.flagged_wrong, s.ran_wrong);
  j["reflection_precision"] = Summary::Ratio(s.flagged_wrong, s.flagged_wrong + s.flagged_right);
  j["right_sent_back"] = Summary::Ratio(s.flagged_right, s.ran_right);
  j["by_finding"] = CountsToJson(s.by_finding, false);
  j["by_confidence"] = CountsToJson(s.by_confidence, false, true);
  if (!s.by_samples.empty()) j["by_samples"] = CountsToJson(s.by_samples, false, true);
  return j;
}

Summary SummaryFromJson(const json& j) {
  Summary s;
  s.name = j.value("name", "");
  s.provider = j.value("provider", "");
  s.max_attempts = j.value("max_attempts", 0);
  for (const CountField& f : kCountFields) s.*f.member = j.value(f.name, size_t{0});
  for (const NumberField& f : kNumberFields) s.*f.member = j.value(f.name, f.missing);
  s.tokens_estimated = j.value("tokens_estimated", false);
  if (j.contains("accuracy_by_attempt")) {
    s.accuracy_by_attempt = j["accuracy_by_attempt"].get<std::vector<double>>();
  }
  s.by_outcome = CountsFromJson(j.value("by_first_attempt_outcome", json::object()));
  s.by_difficulty = CountsFromJson(j.value("by_difficulty", json::object()));
  s.by_database = CountsFromJson(j.value("by_database", json::object()));
  s.by_finding = CountsFromJson(j.value("by_finding", json::object()));
  return s;
}

ordered_json EvalRunToReportJson(const RunOutput& run, const Summary& s) {
  ordered_json j;
  j["name"] = run.spec.name;
  j["provider"] = run.provider;
  j["prediction_file"] = run.spec.replay ? run.spec.replay->path : "";
  j["max_attempts"] = run.spec.max_attempts;
  j["timeout_ms"] = run.spec.timeout_ms;
  j["settings"] = ordered_json::object();
  // As agent_config() shows them: a key never, a base URL without its credentials.
  for (const auto& [k, v] : run.spec.settings) {
    j["settings"][k] = k == "api_key"    ? std::string(v.empty() ? "unset" : "set")
                       : k == "base_url" ? RedactUrl(v)
                                         : v;
  }
  j["wall_seconds"] = run.wall_seconds;
  j["summary"] = SummaryToJson(s);
  ordered_json questions = ordered_json::array();
  for (const QuestionResult& q : run.questions) {
    ordered_json e;
    e["id"] = q.id;
    e["dataset"] = q.dataset;
    e["db_id"] = q.db_id;
    e["difficulty"] = q.difficulty;
    e["scoring"] = q.scoring;
    e["status"] = q.status;
    e["error"] = q.error;
    e["first_ok"] = q.FirstOk();
    e["final_ok"] = q.FinalOk();
    Verdict v = q.FinalVerdict();
    e["final_set_ok"] = v.set_ok;
    e["final_bag_ok"] = v.bag_ok;
    e["final_tolerant_ok"] = v.tolerant_ok;
    e["final_user_ok"] = v.user_ok;
    e["first_outcome"] = q.FirstOutcome();
    e["confidence"] = q.confidence < 0 ? ordered_json() : ordered_json(q.confidence);
    if (!q.samples_verdict.empty()) e["samples_verdict"] = q.samples_verdict;
    if (!q.samples.empty()) e["samples"] = ordered_json::parse(q.samples, nullptr, false);
    if (!q.review.empty()) e["review"] = q.review;
    if (q.review_requests > 0) {
      e["review_requests"] = q.review_requests;
      e["review_missing"] = q.review_missing;
    }
    e["answer_sql"] = q.answer_sql;
    e["gold_failed"] = q.gold_failed;
    e["attempts"] = q.attempts;
    e["llm_calls"] = q.llm_calls;
    e["prompt_tokens"] = q.prompt_tokens;
    e["completion_tokens"] = q.completion_tokens;
    e["prompt_chars"] = q.prompt_chars;
    e["latency_ms"] = q.latency_ms;
    e["llm_ms"] = q.llm_ms;
    e["ask_rows"] = q.ask_rows;
    e["rows_consistent"] = q.rows_consistent;
    e["answer_attempt"] = q.answer_attempt;
    e["duration_ms"] = q.duration_ms;
    e["node_ms_sum"] = q.node_ms_sum;
    e["advice"] = q.advice;
    e["named_literals"] = q.named_literals;
    e["hinted_literals"] = q.hinted_literals;
    e["value_hints"] = q.value_hints;
    ordered_json attempts = ordered_json::array();
    for (const AttemptScore& a : q.attempt_scores) {
      ordered_json grounding = ordered_json::array();
      for (const GroundingFinding& g : a.grounding) {
        grounding.push_back(
            {{"kind", g.kind}, {"literal", g.literal}, {"column", g.column}, {"values", g.values}});
      }
      attempts.push_back({{"attempt", a.attempt},
                          {"sql", a.sql},
                          {"error_type", a.error_type},
                          {"set_ok", a.verdict.set_ok},
                          {"bag_ok", a.verdict.bag_ok},
                          {"tolerant_ok", a.verdict.tolerant_ok},
                          {"user_ok", a.verdict.user_ok},
                          {"flagged", a.flagged},
                          {"critical", a.critical},
                          {"strategy", a.strategy},
                          {"grounding", grounding}});
    }
    e["attempt_scores"] = attempts;
    questions.push_back(e);
  }
  j["questions"] = questions;
  return j;
}

void PrintTable(std::ostream& out, const std::vector<Summary>& runs) {
  size_t w = 3;
  for (const Summary& s : runs) w = std::max(w, s.name.size());
  fmt::print(out,
             "{:<{}}  {:>4}  {:>6}  {:>6}  {:>9}  {:>7}  {:>6}  {:>6}  {:>6}  {:>8}  {:>7}  {:>8}  "
             "{:>7}  {:>7}\n",
             "run", w, "n", "final", "first", "corrected", "mis-rep", "set", "bag", "~float",
             "attempts", "calls/q", "tokens/q", "p50 ms", "p95 ms");
  for (const Summary& s : runs) {
    std::string tokens =
        s.tokens < 0 ? "n/a" : fmt::format("{}{:.0f}", s.tokens_estimated ? "~" : "", s.tokens);
    fmt::print(out,
               "{:<{}}  {:>4}  {:>6}  {:>6}  {:>9}  {:>7}  {:>6}  {:>6}  {:>6}  {:>8.2f}  {:>7.2f} "
               " {:>8}  {:>7.1f}  {:>7.1f}\n",
               s.name, w, s.questions, Pct(s.Rate(s.final_ok)), Pct(s.Rate(s.first_ok)),
               fmt::format("{}/{}", s.corrected, s.first_failures), s.mis_repairs,
               Pct(s.Rate(s.final_set)), Pct(s.Rate(s.final_bag)), Pct(s.Rate(s.final_tolerant)),
               s.avg_attempts, s.llm_calls, tokens, s.latency_p50, s.latency_p95);
  }
  fmt::print(
      out,
      "\nfinal/first: right with the dataset's own comparison (BIRD: set, Spider: bag, "
      "ordered when the gold SQL has ORDER BY); set/bag/~float: the final answers under "
      "each comparison (~float: set, floats to 9 digits); corrected: first-attempt "
      "failures that ended right; mis-rep: right first, wrong at the end{}.\n",
      std::any_of(runs.begin(), runs.end(), [](const Summary& s) { return s.tokens_estimated; })
          ? "; ~tokens: estimated as characters / 4 (the replay model counts no tokens)"
          : "");
  for (const Summary& s : runs) {
    fmt::print(out, "\n{} ({}, at most {} attempt{})\n", s.name, s.provider, s.max_attempts,
               s.max_attempts == 1 ? "" : "s");
    std::string line;
    for (const auto& [k, c] : s.by_outcome) {
      line += fmt::format("{}{} {}", line.empty() ? "" : " · ", k, c.n);
      if (k != "correct") line += fmt::format(" ({} ended right)", c.final_ok);
    }
    fmt::print(out, "  first attempt: {}\n", line);
    fmt::print(out, "  accuracy after k attempts:");
    for (size_t k = 0; k < s.accuracy_by_attempt.size(); ++k) {
      fmt::print(out, " {}: {}", k + 1, Pct(s.accuracy_by_attempt[k]));
    }
    fmt::print(out, "\n");
    if (!s.by_difficulty.empty()) {
      line.clear();
      for (const auto& [k, c] : s.by_difficulty) {
        line += fmt::format("{}{} {}: {} -> {}", line.empty() ? "" : " · ", k, c.n,
                            Pct(100.0 * c.first_ok / c.n), Pct(100.0 * c.final_ok / c.n));
      }
      fmt::print(out, "  by difficulty (first -> final): {}\n", line);
    }
    for (const auto& [db, c] : s.by_database) {
      fmt::print(out, "  {}: {} questions, final {}", db, c.n, Pct(100.0 * c.final_ok / c.n));
      if (c.prompt_chars > 0) {
        fmt::print(out, "; first prompt {:.0f} chars (~{:.0f} tokens), at most {}", c.prompt_chars,
                   c.prompt_chars / 4, c.prompt_chars_max);
      }
      fmt::print(out, "\n");
    }
    line.clear();
    for (const auto& [k, n] : s.by_status)
      line += fmt::format("{}{} {}", line.empty() ? "" : " · ", k, n);
    fmt::print(out, "  runs: {}\n", line);
    if (s.without_prediction || s.unmatched_predictions) {
      fmt::print(
          out, "  not scored: {} questions have no prediction; {} predictions match no question\n",
          s.without_prediction, s.unmatched_predictions);
    }
    if (s.prompt_drift) {
      fmt::print(out,
                 "  WARNING: for {} questions the prompt's rules differ from those the recorded "
                 "replies answered: record again (shared/tools/model_bridge.py)\n",
                 s.prompt_drift);
    }
    if (s.gold_failed)
      fmt::print(out, "  not scored: the gold SQL failed for {} questions\n", s.gold_failed);
    if (s.rows_inconsistent) {
      fmt::print(out,
                 "  WARNING: ask() returned a different row count from its SQL for {} questions\n",
                 s.rows_inconsistent);
    }
  }
}

void PrintCalibration(std::ostream& out, const std::vector<Summary>& runs) {
  bool any = false;
  for (const Summary& s : runs) any = any || !s.by_confidence.empty();
  if (!any) return;
  out << "\nCandidates and confidence: accuracy of the first reading and of the answer returned "
         "(the dataset's comparison), and per confidence band the share of answers right, the "
         "dataset's comparison / as a user compares (columns in any order, one extra column), "
         "of how many, and (in brackets) the mean confidence stated:\n";
  out << fmt::format("{:<28} {:>6} {:>8} {:>9}", "run", "n", "first", "returned");
  // The bands of the confidence table (agent/base/confidence.h).
  std::vector<std::string> bands;
  for (const ConfidenceBand& b : ConfidenceBands()) bands.emplace_back(b.name);
  for (const std::string& b : bands) out << fmt::format(" {:>23}", "conf " + b);
  out << "\n";
  Summary pooled;
  pooled.name = "all runs";
  auto row = [&](const Summary& s) {
    out << fmt::format("{:<28} {:>6} {:>8} {:>9}", s.name.substr(0, 28), s.questions,
                       Pct(s.Rate(s.first_ok)), Pct(s.Rate(s.final_ok)));
    for (const std::string& b : bands) {
      auto it = s.by_confidence.find(b);
      if (it == s.by_confidence.end() || it->second.n == 0) {
        out << fmt::format(" {:>23}", "-");
      } else {
        const Summary::Count& c = it->second;
        out << fmt::format(
            " {:>23}", fmt::format("{:.0f}/{:.0f}% of {} ({:.0f})", Summary::Ratio(c.final_ok, c.n),
                                   Summary::Ratio(c.user_ok, c.n), c.n,
                                   c.confidence_sum / static_cast<double>(c.n)));
      }
    }
    out << "\n";
  };
  for (const Summary& s : runs) {
    row(s);
    pooled.questions += s.questions;
    pooled.first_ok += s.first_ok;
    pooled.final_ok += s.final_ok;
    for (const auto& [band, c] : s.by_confidence) {
      Summary::Count& p = pooled.by_confidence[band];
      p.n += c.n;
      p.first_ok += c.first_ok;
      p.final_ok += c.final_ok;
      p.user_ok += c.user_ok;
      p.confidence_sum += c.confidence_sum;
    }
  }
  if (runs.size() > 1) row(pooled);
  // What independent samples said of the answers, pooled over the runs.
  std::map<std::string, Summary::Count> samples;
  for (const Summary& s : runs) {
    for (const auto& [verdict, c] : s.by_samples) {
      Summary::Count& p = samples[verdict];
      p.n += c.n;
      p.final_ok += c.final_ok;
      p.user_ok += c.user_ok;
    }
  }
  if (samples.empty()) return;
  out << "Samples (all runs): answers by what the independent samples said, right by the "
         "dataset's comparison / as a user compares:\n";
  for (const auto& [verdict, c] : samples) {
    out << fmt::format("  {:<36} {:>5} answers, {:.0f}/{:.0f}% right\n", verdict, c.n,
                       Summary::Ratio(c.final_ok, c.n), Summary::Ratio(c.user_ok, c.n));
  }
}

void PrintReflectionTable(std::ostream& out, const std::vector<Summary>& runs) {
  if (runs.empty()) return;
  int fewest = runs.front().max_attempts;
  for (const Summary& s : runs) fewest = std::min(fewest, s.max_attempts);
  std::vector<Summary> rows;
  Summary all, gpt4o;
  all.name = "all files";
  gpt4o.name = "GPT-4o files";
  static constexpr size_t Summary::*kCounts[] = {&Summary::ran_wrong,
                                                 &Summary::ran_right,
                                                 &Summary::flagged_wrong,
                                                 &Summary::flagged_right,
                                                 &Summary::ran_wrong_tol,
                                                 &Summary::ran_right_tol,
                                                 &Summary::flagged_wrong_tol,
                                                 &Summary::flagged_right_tol,
                                                 &Summary::literals_not_found,
                                                 &Summary::not_found_gold_value,
                                                 &Summary::literals_elsewhere,
                                                 &Summary::elsewhere_gold_column,
                                                 &Summary::questions_naming_values,
                                                 &Summary::questions_hinted};
  size_t gpt4o_runs = 0;
  for (const Summary& s : runs) {
    if (s.max_attempts != fewest) continue;
    rows.push_back(s);
    const bool is_4o = s.name.find("4o") != std::string::npos;
    gpt4o_runs += is_4o;
    for (Summary* t : {&all, &gpt4o}) {
      if (t == &gpt4o && !is_4o) continue;
      for (auto member : kCounts) t->*member += s.*member;
      for (const auto& [k, c] : s.by_finding) {
        t->by_finding[k].n += c.n;
        t->by_finding[k].first_ok += c.first_ok;
      }
    }
  }
  if (rows.size() > 1) rows.push_back(all);
  if (gpt4o_runs > 0 && gpt4o_runs < rows.size() - 1) rows.push_back(gpt4o);
  size_t w = 9;
  for (const Summary& s : rows) w = std::max(w, s.name.size());
  fmt::print(out, "\nreflection on first attempts that ran (set comparison | float-tolerant)\n");
  fmt::print(out, "{:<{}}  {:>5}  {:>7}  {:>18}  {:>18}  {:>18}  {:>17}  {:>17}\n", "run", w,
             "wrong", "flagged", "recall", "precision", "right sent back", "grounded literal",
             "value hinted");
  for (const Summary& s : rows) {
    auto cell = [](size_t a, size_t b) {
      return fmt::format("{}/{} {:.1f}%", a, b, Summary::Ratio(a, b));
    };
    fmt::print(
        out, "{:<{}}  {:>5}  {:>7}  {:>18}  {:>18}  {:>18}  {:>17}  {:>17}\n", s.name, w,
        s.ran_wrong, s.flagged_wrong + s.flagged_right,
        fmt::format("{:.1f}% | {:.1f}%", Summary::Ratio(s.flagged_wrong, s.ran_wrong),
                    Summary::Ratio(s.flagged_wrong_tol, s.ran_wrong_tol)),
        fmt::format("{:.1f}% | {:.1f}%",
                    Summary::Ratio(s.flagged_wrong, s.flagged_wrong + s.flagged_right),
                    Summary::Ratio(s.flagged_wrong_tol, s.flagged_wrong_tol + s.flagged_right_tol)),
        cell(s.flagged_right, s.ran_right),
        fmt::format("{}/{} gold", s.not_found_gold_value, s.literals_not_found),
        cell(s.questions_hinted, s.questions_naming_values));
  }
  const Summary& total =
      rows.back().name == "GPT-4o files" && rows.size() > 2 ? rows[rows.size() - 2] : rows.back();
  std::string line;
  for (const auto& [k, c] : total.by_finding) {
    line +=
        fmt::format("{}{} {} ({} on right answers)", line.empty() ? "" : " · ", k, c.n, c.first_ok);
  }
  fmt::print(out, "  flags by finding ({}): {}\n", total.name, line.empty() ? "none" : line);
  fmt::print(out,
             "  grounding ({}): {} literals absent from their column with near values, the gold "
             "SQL uses a proposed value for {}; {} found only in other columns, the gold SQL "
             "uses one of them for {}\n",
             total.name, total.literals_not_found, total.not_found_gold_value,
             total.literals_elsewhere, total.elsewhere_gold_column);
}

std::string ChartSvg(const std::vector<Summary>& runs) {
  const int group = 64, left = 60, top = 40, plot_h = 220, gap = 150;
  size_t max_k = 1;
  double max_calls = 1, max_tokens = 1;
  for (const Summary& s : runs) {
    max_k = std::max(max_k, s.accuracy_by_attempt.size());
    max_calls = std::max(max_calls, s.llm_calls);
    max_tokens = std::max(max_tokens, s.tokens);
  }
  const int width = std::max(760, left + 100 + group * static_cast<int>(runs.size()));
  const int height = top + 2 * (plot_h + gap) + 20;
  const char* colours[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
                           "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b"};
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      width, height);
  auto axis = [&](int y0, const std::string& title, double max, const std::string& unit) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                       left, y0 - 16, text::EscapeMarkup(title));
    for (int t = 0; t <= 4; ++t) {
      int y = y0 + plot_h - t * plot_h / 4;
      svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n", left,
                         width - 20, y, y);
      svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.{}f}{}</text>\n", left - 4,
                         y + 4, max * t / 4, max < 10 ? 2 : 0, unit);
    }
  };
  auto value = [&](int x, int y, const std::string& text) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\">{}</text>\n",
                       x, y, text::EscapeMarkup(text));
  };
  auto label = [&](int x, int y0, const std::string& name) {
    svg +=
        fmt::format("<text transform=\"translate({},{}) rotate(40)\" font-size=\"10\">{}</text>\n",
                    x, y0 + plot_h + 12, text::EscapeMarkup(name));
  };
  // Panel 1: accuracy after at most k attempts.
  int y0 = top;
  axis(y0, "Execution accuracy after at most k attempts (dataset's own comparison)", 100, "%");
  const int bar = std::max(4, (group - 12) / static_cast<int>(max_k));
  for (size_t i = 0; i < runs.size(); ++i) {
    int x = left + 8 + group * static_cast<int>(i);
    for (size_t k = 0; k < runs[i].accuracy_by_attempt.size(); ++k) {
      double v = runs[i].accuracy_by_attempt[k];
      int h = static_cast<int>(plot_h * v / 100.0);
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} k={}: "
          "{:.1f}%</title></rect>\n",
          x + bar * static_cast<int>(k), y0 + plot_h - h, bar - 1, h, colours[k % 10],
          text::EscapeMarkup(runs[i].name), k + 1, v);
      value(x + bar * static_cast<int>(k) + bar / 2, y0 + plot_h - h - 3, fmt::format("{:.0f}", v));
    }
    label(x, y0, runs[i].name);
  }
  for (size_t k = 0; k < max_k; ++k) {
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">k = {}</text>\n",
        width - 80, y0 + 10 + 16 * static_cast<int>(k), colours[k % 10], width - 66,
        y0 + 19 + 16 * static_cast<int>(k), k + 1);
  }
  // Panel 2: cost per question.
  y0 = top + plot_h + gap;
  axis(y0, "Cost per question: LLM calls (blue, scale on the left) and tokens (orange)", max_calls,
       "");
  for (size_t i = 0; i < runs.size(); ++i) {
    int x = left + 8 + group * static_cast<int>(i);
    int hc = static_cast<int>(plot_h * runs[i].llm_calls / max_calls);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"{}\" fill=\"{}\"><title>{}: {:.2f} "
        "calls</title></rect>\n",
        x, y0 + plot_h - hc, hc, colours[0], text::EscapeMarkup(runs[i].name), runs[i].llm_calls);
    value(x + 10, y0 + plot_h - hc - 3, fmt::format("{:.2f}", runs[i].llm_calls));
    if (runs[i].tokens >= 0) {
      int ht = static_cast<int>(plot_h * runs[i].tokens / max_tokens);
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"{}\" fill=\"{}\"><title>{}: {:.0f} "
          "tokens{}</title></rect>\n",
          x + 22, y0 + plot_h - ht, ht, colours[1], text::EscapeMarkup(runs[i].name),
          runs[i].tokens, runs[i].tokens_estimated ? " (estimated)" : "");
      value(x + 32, y0 + plot_h - ht - 3,
            fmt::format("{}{:.0f}", runs[i].tokens_estimated ? "~" : "", runs[i].tokens));
    }
    label(x, y0, runs[i].name);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">token bars: full height = {:.0f} "
      "tokens{}</text>\n",
      width - 20, y0 - 4, max_tokens,
      std::any_of(runs.begin(), runs.end(), [](const Summary& s) { return s.tokens_estimated; })
          ? " (~: estimated, characters / 4)"
          : "");
  svg += "</svg>\n";
  return svg;
}

void PrintComparison(std::ostream& out, const json& a, const json& b) {
  const json& ra = a.at("runs");
  const json& rb = b.at("runs");
  for (size_t i = 0; i < ra.size(); ++i) {
    const json* other = nullptr;
    for (const auto& r : rb) {
      if (r.value("name", "") == ra[i].value("name", "")) other = &r;
    }
    if (!other && i < rb.size()) other = &rb[i];
    if (!other) break;
    Summary x = SummaryFromJson(ra[i].at("summary"));
    Summary y = SummaryFromJson(other->at("summary"));
    std::string hx = fmt::format("A: {} (max {})", x.name, x.max_attempts);
    std::string hy = fmt::format("B: {} (max {})", y.name, y.max_attempts);
    size_t w = std::max<size_t>({hx.size(), hy.size(), 12});
    fmt::print(out, "{:<26}  {:>{}}  {:>{}}  {:>8}\n", "", hx, w, hy, w, "B - A");
    auto row = [&](const char* label, double va, double vb, const char* unit, int digits) {
      fmt::print(out, "{:<26}  {:>{}}  {:>{}}  {:>+8.{}f}\n", label,
                 fmt::format("{:.{}f}{}", va, digits, unit), w,
                 fmt::format("{:.{}f}{}", vb, digits, unit), w, vb - va, digits);
    };
    row("questions", x.questions, y.questions, "", 0);
    row("final accuracy", x.Rate(x.final_ok), y.Rate(y.final_ok), "%", 1);
    row("first-attempt accuracy", x.Rate(x.first_ok), y.Rate(y.first_ok), "%", 1);
    row("final, set", x.Rate(x.final_set), y.Rate(y.final_set), "%", 1);
    row("final, bag", x.Rate(x.final_bag), y.Rate(y.final_bag), "%", 1);
    row("final, ~float", x.Rate(x.final_tolerant), y.Rate(y.final_tolerant), "%", 1);
    row("correction effectiveness", x.CorrectionEffectiveness(), y.CorrectionEffectiveness(), "%",
        1);
    row("mis-repairs", x.mis_repairs, y.mis_repairs, "", 0);
    row("average attempts", x.avg_attempts, y.avg_attempts, "", 2);
    row("LLM calls per question", x.llm_calls, y.llm_calls, "", 2);
    row("tokens per question", x.tokens, y.tokens, "", 0);
    row("latency p50 (ms)", x.latency_p50, y.latency_p50, "", 1);
    row("latency p95 (ms)", x.latency_p95, y.latency_p95, "", 1);
    std::map<std::string, bool> right_a;
    for (const auto& q : ra[i].at("questions"))
      right_a[q.value("id", "")] = q.value("final_ok", false);
    std::vector<std::string> fixed, broken;
    for (const auto& q : other->at("questions")) {
      auto it = right_a.find(q.value("id", ""));
      if (it == right_a.end()) continue;
      bool rb_ok = q.value("final_ok", false);
      if (rb_ok && !it->second) fixed.push_back(it->first);
      if (!rb_ok && it->second) broken.push_back(it->first);
    }
    auto list = [&](const char* label, const std::vector<std::string>& ids) {
      fmt::print(out, "{} ({}): {}\n", label, ids.size(),
                 ids.empty() ? "none" : fmt::format("{}", fmt::join(ids, ", ")));
    };
    list("right only in B", fixed);
    list("right only in A", broken);
    fmt::print(out, "\n");
  }
}

}  // namespace querypilot::eval
