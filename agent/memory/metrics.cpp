#include "agent/memory/metrics.h"

#include <algorithm>
#include <map>

#include "agent/base/confidence.h"

namespace querypilot {
namespace {

std::optional<double> Ratio(double a, double b) {
  if (b <= 0) return std::nullopt;
  return a / b;
}

// Counts as rows, most frequent first, then by name.
void AddCounts(const std::map<std::string, int>& counts, const std::string& prefix,
               const std::string& what, std::vector<MetricRecord>* out) {
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, n] : sorted) {
    out->push_back({prefix + name, static_cast<double>(n), what + " " + name, MetricKind::kCount});
  }
}

}  // namespace

std::vector<MetricRecord> ComputeMetrics(const std::vector<RunRecord>& runs,
                                         const std::vector<AttemptRecord>& attempts) {
  double total = static_cast<double>(runs.size());
  double ok = 0, cached = 0, asked = 0, first_ok = 0, corrected = 0, corrected_ok = 0;
  double attempt_sum = 0, llm_calls = 0, prompt = 0, completion = 0, duration = 0;
  std::map<std::string, int> statuses, errors, reviews;
  for (const RunRecord& r : runs) {
    ++statuses[std::string(RunStatusName(r.status))];
    // The model's review (review 1): only runs it read are counted.
    if (!r.review.empty() && r.review != "not reviewed") ++reviews[r.review];
    ok += r.status == RunStatus::kOk;
    llm_calls += r.llm_calls;
    prompt += std::max<int64_t>(r.prompt_tokens, 0);
    completion += std::max<int64_t>(r.completion_tokens, 0);
    duration += r.duration_ms;
    if (r.cached_from > 0) {
      ++cached;
      continue;
    }
    if (r.attempts < 1) continue;  // never reached the model (not configured)
    ++asked;
    attempt_sum += r.attempts;
    first_ok += r.status == RunStatus::kOk && r.answer_attempt == 1;
    if (r.attempts > 1) {
      ++corrected;
      corrected_ok += r.status == RunStatus::kOk && r.answer_attempt > 1;
    }
  }
  int64_t stood_by = 0;
  for (const AttemptRecord& a : attempts) {
    if (!a.error_type.empty()) ++errors[a.error_type];
    stood_by += a.stood_by > 0;
  }
  std::vector<MetricRecord> out = {
      {"runs", total, "asks recorded on this connection", MetricKind::kCount},
      {"answered", ok, "runs that returned rows (status ok)", MetricKind::kCount},
      {"overall_success_rate", Ratio(ok, total), "answered / runs"},
      {"first_attempt_success_rate", Ratio(first_ok, asked),
       "runs answered by their first attempt / runs that asked the model"},
      {"corrected_runs", corrected, "runs that needed more than one attempt", MetricKind::kCount},
      {"correction_effectiveness", Ratio(corrected_ok, corrected),
       "corrected runs answered by a later attempt / corrected runs"},
      {"avg_attempts", Ratio(attempt_sum, asked), "attempts per run that asked the model"},
      {"cached_runs", cached, "runs answered from the answer cache, with no model call",
       MetricKind::kCount},
      {"stood_by", static_cast<double>(stood_by),
       "attempts in which the model repeated a query whose result had been sent back for a check, "
       "standing by that answer (not counted as errors)",
       MetricKind::kCount},
      {"llm_calls", llm_calls, "model calls in all", MetricKind::kCount},
      {"llm_calls_per_run", Ratio(llm_calls, total), "model calls / runs"},
      {"prompt_tokens", prompt, "prompt tokens the providers reported", MetricKind::kCount},
      {"completion_tokens", completion, "completion tokens the providers reported",
       MetricKind::kCount},
      {"avg_duration_ms", Ratio(duration, total), "wall time per run"},
  };
  // Mean time per node, over the runs that went through it.
  std::vector<std::string> nodes;
  std::map<std::string, std::pair<double, int>> node_sums;
  for (const RunRecord& r : runs) {
    for (const auto& [node, ms] : r.node_times) {
      if (node.find('/') != std::string::npos) continue;  // a part of a node
      auto [it, fresh] = node_sums.try_emplace(node, 0.0, 0);
      if (fresh) nodes.push_back(node);
      it->second.first += ms;
      ++it->second.second;
    }
  }
  for (const std::string& node : nodes) {
    const auto& [sum, n] = node_sums[node];
    out.push_back(
        {"node_ms:" + node, sum / n, "mean ms in node " + node + " per run that went through it"});
  }
  // Answers per confidence band (agent/base/confidence.h).
  for (const ConfidenceBand& b : ConfidenceBands()) {
    int64_t n = 0;
    for (const RunRecord& r : runs) {
      n += r.confidence && *r.confidence >= b.from && *r.confidence <= b.to;
    }
    out.push_back({"confidence:" + std::string(b.name), static_cast<double>(n),
                   "answers whose confidence is " + std::string(b.name), MetricKind::kCount});
  }
  AddCounts(statuses, "status:", "runs with status", &out);
  AddCounts(errors, "error:", "attempts that failed with", &out);
  AddCounts(reviews, "review:", "runs whose review said", &out);
  return out;
}

}  // namespace querypilot
