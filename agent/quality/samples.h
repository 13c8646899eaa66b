// Independent samples: the other replies to a run's first prompt (the
// `samples` setting), each written without seeing the others.
//
// A model's own alternatives are other readings on purpose, so their
// disagreeing says little; independent replies that give another answer
// than the one returned say it is likely wrong (measured on recorded live
// replies: eval/recordings/README.md). Each sample's first reading runs as
// an alternative does (agent/sql/verified.h, a share of sql_timeout_ms) and
// its result is compared with the answer returned (agreement.h). Samples
// never change which answer is returned: they are the confidence's signal
// (agent/base/confidence.h, the samples_* rows) and say why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/quality/agreement.h"

namespace querypilot {

// One sample as it was judged against the answer returned.
struct SampleOutcome {
  std::string sql;                            // its first reading; "" when the reply held none
  bool ran = false;                           // it ran (or was the same SQL as a result at hand)
  std::string failure;                        // why it did not run, when it did not
  Agreement agreement = Agreement::kUnknown;  // with the answer returned, when it ran
  int64_t rows = -1;                          // its rows, when read whole
  std::string gives;  // what its result gives, as a reason names it (DescribeAnswer)
};

// The tally of every reply to the first prompt, the first included.
struct SampleTally {
  int asked = 0;     // replies received (the setting, or fewer where calls failed)
  int compared = 0;  // replies whose result compared with the answer (same or different)
  int agreeing = 0;  // of those, giving the answer returned
  // The confidence's signal (SamplesRule: every sample, most, no other);
  // nullopt with fewer than two compared.
  std::optional<ConfidenceRule> rule;
};

// Counts `samples` (every reply to the first prompt, the first first)
// against the answer returned.
SampleTally TallySamples(const std::vector<SampleOutcome>& samples);

// A short reason for a user: "3 of 3 samples give it", "1 of 3 samples
// disagrees: it gives 412". Empty when fewer than two were asked.
std::string SampleReason(const SampleTally& tally, const std::vector<SampleOutcome>& samples);

// agent_runs.samples: {"asked":3,"compared":3,"agreeing":2,"verdict":"most
// samples give it" (the confidence row's words; "no sample to compare"),
// "reason":"...","samples":[{"sql":..,"ran":..,"agrees":..,"rows":..,
// "gives":..} or {"sql":..,"ran":false,"error":..}, ...]}.
std::string SamplesJson(const SampleTally& tally, const std::vector<SampleOutcome>& samples);

}  // namespace querypilot
