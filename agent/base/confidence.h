// The confidence of an answer as data: one row per signal (where the number
// starts: exactly one applies) and per adjustment (what the answer's
// findings, its attempt and a verified example do to it), each with its
// number and the words its reason uses; the bands agent_metrics and the
// evaluation count answers in; and the threshold below which an answer says
// it is low. The run (agent/quality/agreement.h's Confidence), agent_metrics,
// querypilot-eval's report and agent_config('confidence') all read these
// rows: re-setting a weight is a change of this table only. README's "How
// sure an answer is" restates it, and tests/e2e/test_readme.py holds the two
// together.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace querypilot {

// In the order the rules apply: the signals, then the adjustments.
enum class ConfidenceRule {
  // Signals: how the readings of the first reply agree with the answer.
  kOneReading,       // the model gave one reading
  kAllAgree,         // every reading that ran gives the answer
  kMostAgree,        // more readings give it than any other answer
  kTooBigToCompare,  // no other reading could be compared with it
  kNoOtherAgrees,    // no other reading gives it
  // Signals of independent samples (the `samples` setting), which take the
  // place of the readings' where two or more samples compared.
  kSamplesAllAgree,       // every sample gives the answer
  kSamplesMostAgree,      // two or more give it, not all
  kSamplesNoOtherAgrees,  // at most one sample (the answer's own) gives it
  // Adjustments.
  kCriticalFinding,    // a critical finding on the answer
  kHollowNote,         // a note explains the answer away (FindingRow::hollow)
  kOtherNote,          // each other note that bears on it
  kFromCorrection,     // the answer came from a correction, not the first reply
  kVerifiedExample,    // its SQL is a verified example's
  kReviewAccepted,     // the model's review accepted it (`review` 1)
  kReviewNotAccepted,  // no review accepted an answer: the first is returned
};

enum class RuleEffect {
  kStart,  // the number starts here
  kCap,    // the number is at most this
  kAdd,    // this is added (negative: taken), `most` times at most
};

struct ConfidenceRow {
  ConfidenceRule rule;
  std::string_view name;  // in agent_config('confidence') and the README
  RuleEffect effect;
  int number;
  int most;                 // kAdd: how many times at most (each other note); 1 otherwise
  std::string_view reason;  // the words the answer's reason uses when the row applies
};

// Every row, in the order of enum ConfidenceRule.
const std::vector<ConfidenceRow>& ConfidenceRows();

// The row of `rule`. Never fails: every rule has a row.
const ConfidenceRow& ConfidenceRowOf(ConfidenceRule rule);

// An answer whose confidence is below this says so: its reason starts with
// "low: ".
inline constexpr int kLowConfidenceBelow = 50;

// A band answers are counted in (agent_metrics' confidence:<name>, the
// evaluation's table): from and to inclusive.
struct ConfidenceBand {
  std::string_view name;
  int from;
  int to;
};

// The bands, lowest first; together they cover 0 to 100 once.
const std::vector<ConfidenceBand>& ConfidenceBands();

// The name of the band `confidence` falls in; "none" below 0 (no answer).
std::string_view ConfidenceBandOf(int confidence);

// The table as JSON, for agent_config('confidence'): {"rows": [{"name",
// "effect" ("start" | "cap" | "add"), "number", "most", "reason"}, ...],
// "bands": [{"name", "from", "to"}, ...], "low_below": 50}.
std::string ConfidenceJson();

}  // namespace querypilot
