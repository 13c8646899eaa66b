#include "agent/memory/metrics.h"

#include <gtest/gtest.h>

#include <map>

namespace querypilot {
namespace {

std::map<std::string, std::optional<double>> ByName(const std::vector<MetricRecord>& m) {
  std::map<std::string, std::optional<double>> out;
  for (const auto& r : m) out[r.metric] = r.value;
  return out;
}

TEST(Metrics, FromRunsAndAttempts) {
  auto run = [](int64_t id, const char* status, int attempts, int answer, int calls,
                int64_t cached = 0) {
    RunRecord r;
    r.id = id;
    r.status = RunStatusFromName(status);
    r.attempts = attempts;
    r.answer_attempt = answer;
    r.llm_calls = calls;
    r.prompt_tokens = 100 * calls;
    r.completion_tokens = cached ? -1 : 10;
    r.duration_ms = 10;
    r.cached_from = cached;
    return r;
  };
  std::vector<RunRecord> runs = {
      run(1, "ok", 1, 1, 1),      // first attempt
      run(2, "ok", 2, 2, 2),      // corrected
      run(3, "failed", 3, 0, 3),  // corrections did not help
      run(4, "ok", 1, 1, 0, 1),   // from the cache
      run(5, "not_configured", 0, 0, 0),
  };
  std::vector<AttemptRecord> attempts(4);
  attempts[0].error_type = "column_not_found";
  attempts[1].error_type = "column_not_found";
  attempts[2].error_type = "syntax_error";
  auto m = ByName(ComputeMetrics(runs, attempts));
  EXPECT_EQ(m["runs"], 5);
  EXPECT_EQ(m["answered"], 3);
  EXPECT_DOUBLE_EQ(*m["overall_success_rate"], 0.6);
  EXPECT_DOUBLE_EQ(*m["first_attempt_success_rate"], 1.0 / 3);
  EXPECT_EQ(m["corrected_runs"], 2);
  EXPECT_DOUBLE_EQ(*m["correction_effectiveness"], 0.5);
  EXPECT_DOUBLE_EQ(*m["avg_attempts"], 2.0);
  EXPECT_EQ(m["cached_runs"], 1);
  EXPECT_EQ(m["llm_calls"], 6);
  EXPECT_DOUBLE_EQ(*m["llm_calls_per_run"], 1.2);
  EXPECT_EQ(m["prompt_tokens"], 600);
  EXPECT_EQ(m["completion_tokens"], 40);
  EXPECT_EQ(m["status:ok"], 3);
  EXPECT_EQ(m["status:failed"], 1);
  EXPECT_EQ(m["error:column_not_found"], 2);
  EXPECT_EQ(m["error:syntax_error"], 1);
}

TEST(Metrics, CountsAreCountsAndRatesAreMeasures) {
  RunRecord r;
  r.id = 1;
  r.status = RunStatus::kOk;
  r.attempts = 1;
  r.answer_attempt = 1;
  r.llm_calls = 1;
  r.node_times = {{"generate", 3.0}};
  AttemptRecord a;
  a.error_type = "syntax_error";
  std::map<std::string, MetricKind> kinds;
  for (const auto& m : ComputeMetrics({r}, {a})) kinds[m.metric] = m.kind;
  for (const char* count :
       {"runs", "answered", "corrected_runs", "cached_runs", "stood_by", "llm_calls",
        "prompt_tokens", "completion_tokens", "status:ok", "error:syntax_error"}) {
    EXPECT_EQ(kinds.at(count), MetricKind::kCount) << count;
  }
  for (const char* measure :
       {"overall_success_rate", "first_attempt_success_rate", "correction_effectiveness",
        "avg_attempts", "llm_calls_per_run", "avg_duration_ms", "node_ms:generate"}) {
    EXPECT_EQ(kinds.at(measure), MetricKind::kMeasure) << measure;
  }
}

TEST(Metrics, AnswersAreCountedPerConfidenceBand) {
  std::vector<RunRecord> runs;
  for (std::optional<int64_t> c :
       {std::optional<int64_t>(90), std::optional<int64_t>(80), std::optional<int64_t>(79),
        std::optional<int64_t>(30), std::optional<int64_t>()}) {
    RunRecord r;
    r.id = static_cast<int64_t>(runs.size()) + 1;
    r.confidence = c;
    runs.push_back(r);
  }
  std::map<std::string, std::optional<double>> got;
  std::map<std::string, MetricKind> kinds;
  for (const auto& m : ComputeMetrics(runs, {})) {
    got[m.metric] = m.value;
    kinds[m.metric] = m.kind;
  }
  EXPECT_EQ(got.at("confidence:80-100"), 2.0);
  EXPECT_EQ(got.at("confidence:60-79"), 1.0);
  EXPECT_EQ(got.at("confidence:40-59"), 0.0);
  EXPECT_EQ(got.at("confidence:0-39"), 1.0);
  EXPECT_EQ(kinds.at("confidence:0-39"), MetricKind::kCount);
}

TEST(Metrics, NoRunsMeansNoRates) {
  auto m = ByName(ComputeMetrics({}, {}));
  EXPECT_EQ(m["runs"], 0);
  EXPECT_FALSE(m["overall_success_rate"].has_value());
  EXPECT_FALSE(m["correction_effectiveness"].has_value());
}

}  // namespace
}  // namespace querypilot
