// Independent samples: the other replies to a run's first prompt (the
// `samples` setting), each written without seeing the others.
//
// A model's own alternatives are other readings on purpose, so their
// disagreeing says little; independent replies that give another answer
// than the one returned say it is likely wrong (measured on recorded live
// replies: eval/recordings/README.md). Each sample's first reading runs as
// an alternative does (agent/sql/verified.h, a share of sql_timeout_ms) and
// its result is compared with the answer returned (agreement.h). They are
// the confidence's signal (agent/base/confidence.h, the samples_* rows) and
// say why; with three or more, they vote (VoteSamples): the result most of
// them give is returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/value.h"
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
  // Its result as far as it was read (copied: no statement is kept), for
  // the vote's comparisons among samples.
  std::vector<std::string> columns;
  std::deque<Row> result;
  bool complete = false;
  bool returned = false;  // the vote returned its result in place of the answer's
  ResultRows View() const { return {&columns, &result, complete}; }
};

// The vote of three or more samples (the `samples` setting at 3 or more).
struct SampleVote {
  // The sample whose result is returned in place of the answer's; nullopt
  // when the answer stands (it has at least as many votes as any other).
  std::optional<size_t> winner;
  int votes = 0;         // the samples giving the result returned
  int answer_votes = 0;  // the samples giving the answer the run chose
  int compared = 0;      // the samples that ran and compared
};

// The fewest samples that vote.
inline constexpr int kSamplesThatVote = 3;

// Votes among `samples` (every reply's outcome, the first first, each
// `agreement` being with the answer the run chose): samples that ran and
// compared (Agreement other than kUnknown) are grouped by the result they
// give (`agrees(i, j)` kSame: samples i and j give the same result, as
// candidates are compared, agreement.h), each group led by its first
// sample. The group with most samples wins, and replaces the answer only
// with more votes than the samples agreeing with it: a tie keeps the answer
// chosen (the first reading's, unless it was corrected), and among other
// groups the earliest. `winner` is then the group's first sample. Fewer
// than kSamplesThatVote samples never vote. Pure.
SampleVote VoteSamples(const std::vector<SampleOutcome>& samples,
                       const std::function<Agreement(size_t, size_t)>& agrees);

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

// The same outcomes judged against the result of sample `winner` (the
// vote's), with `agrees` as VoteSamples takes it: each agreement is then
// with that sample's result, and the winner is marked returned.
void RejudgeAgainst(std::vector<SampleOutcome>* samples, size_t winner,
                    const std::function<Agreement(size_t, size_t)>& agrees);

// A short reason for a user: "3 of 3 samples give it", "1 of 3 samples
// disagrees: it gives 412". Empty when fewer than two were asked.
std::string SampleReason(const SampleTally& tally, const std::vector<SampleOutcome>& samples);

// agent_runs.samples: {"asked":3,"compared":3,"agreeing":2,"verdict":"most
// samples give it" (the confidence row's words; "no sample to compare"),
// "reason":"...","samples":[{"sql":..,"ran":..,"agrees":..,"rows":..,
// "gives":..,"returned":..} or {"sql":..,"ran":false,"error":..}, ...]}; with
// a vote, "vote":{"winner": the sample returned (1 for the first) or null
// when the answer chosen stood, "votes","answer_votes","compared"}.
std::string SamplesJson(const SampleTally& tally, const std::vector<SampleOutcome>& samples,
                        const std::optional<SampleVote>& vote = std::nullopt);

}  // namespace querypilot
