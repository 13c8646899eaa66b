// Metrics: a connection's history summed up, for agent_metrics.
//
// Pure: a function from the runs and attempts to named figures. Rates are
// fractions from 0 to 1; a figure with nothing to divide by has no value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/memory/history.h"

namespace querypilot {

// What a figure is: a count (of runs, attempts, calls, tokens) is a whole
// number, and agent_metrics gives it as an INTEGER; a rate, a mean or a time
// is a REAL.
enum class MetricKind { kCount, kMeasure };

struct MetricRecord {
  std::string metric;
  std::optional<double> value;
  std::string description;
  MetricKind kind = MetricKind::kMeasure;
};

// In order: runs, answered, overall_success_rate, first_attempt_success_rate,
// corrected_runs, correction_effectiveness, avg_attempts, cached_runs,
// llm_calls, llm_calls_per_run, prompt_tokens, completion_tokens,
// avg_duration_ms, node_ms:<node> per node, confidence:<band> (answers per
// band of agent/base/confidence.h's ConfidenceBands), then status:<status> per run
// status and
// error:<error_type> per attempt error, most frequent first.
std::vector<MetricRecord> ComputeMetrics(const std::vector<RunRecord>& runs,
                                         const std::vector<AttemptRecord>& attempts);

}  // namespace querypilot
