// Independent samples: the other replies to a run's first prompt (the
// `samples` setting), each written without seeing the others.
//
// A model's own alternatives are other readings on purpose, so their
// disagreeing says little; independent replies that give another answer
// than the one returned say it is likely wrong (measured on recorded live
// replies: eval/recordings/README.md). Each sample's first reading runs as
// an alternative does (agent/sql/verified.h, a share of sql_timeout_ms) and
// its result is compared with the answer returned (agreement.h). Samples
// never change which answer is returned: they only inform the confidence
// and its reason.
#pragma once

#include <cstdint>
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
};

// What the samples say of the answer returned, one row each in kSampleRows.
enum class SampleVerdict {
  kNone,     // fewer than two samples could be compared with it (or none was asked)
  kEvery,    // every sample compared gives it
  kMost,     // more than half give it, not all
  kFew,      // two or more give it, but not more than half (4 or 5 samples)
  kNoOther,  // at most one sample gives it
};

// How a verdict bears on the confidence: the score from agreement among the
// first reply's readings is raised to `floor` before the findings take from
// it, and the score is capped at `cap` after. One row per verdict; the
// confidence, the reason and the documentation read these rows.
struct SampleRow {
  SampleVerdict verdict;
  std::string_view name;  // "every sample gives it"
  int floor;              // 0: none
  int cap;                // 100: none
};

inline constexpr SampleRow kSampleRows[] = {
    {SampleVerdict::kNone, "no sample to compare", 0, 100},
    {SampleVerdict::kEvery, "every sample gives it", 90, 100},
    {SampleVerdict::kMost, "most samples give it", 0, 50},
    {SampleVerdict::kFew, "half the samples or fewer give it", 0, 35},
    {SampleVerdict::kNoOther, "no other sample gives it", 0, 20},
};

const SampleRow& RowOf(SampleVerdict verdict);

// The tally of every reply to the first prompt, the first included.
struct SampleTally {
  int asked = 0;     // replies received (the setting, or fewer where calls failed)
  int compared = 0;  // replies whose result compared with the answer (same or different)
  int agreeing = 0;  // of those, giving the answer returned
  SampleVerdict verdict = SampleVerdict::kNone;
};

// Counts `samples` (every reply to the first prompt, the first first)
// against the answer returned.
SampleTally TallySamples(const std::vector<SampleOutcome>& samples);

// A short reason for a user: "3 of 3 samples give it", "1 of 3 samples
// disagrees: it gives 412 rows". Empty when fewer than two were asked.
std::string SampleReason(const SampleTally& tally, const std::vector<SampleOutcome>& samples);

// agent_runs.samples: {"asked":3,"compared":3,"agreeing":2,"verdict":"most
// samples give it","reason":"...","samples":[{"sql":..,"ran":..,"agrees":..,
// "rows":..} or {"sql":..,"ran":false,"error":..}, ...]}.
std::string SamplesJson(const SampleTally& tally, const std::vector<SampleOutcome>& samples);

}  // namespace querypilot
