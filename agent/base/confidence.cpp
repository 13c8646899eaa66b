#include "agent/base/confidence.h"

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "agent/base/enum_names.h"

namespace querypilot {

const std::vector<ConfidenceRow>& ConfidenceRows() {
  // The signals are set on recorded live replies to the first prompt
  // (eval/recordings, README: "How sure an answer is"), on spider_dev6 and
  // superhero, and checked on Spider train's half B. There a model's single
  // reading was right 98-99% of the time as a user compares, and its own
  // alternatives disagreeing with it were no sign of a wrong answer (every
  // such answer right): they are other readings written on purpose. What
  // did predict a wrong answer is independent samples that give another
  // answer. The other adjustments (a critical finding, other notes, a
  // correction, an example) were set on published systems' SQL: live replies
  // gave them too few cases to re-set.
  static const std::vector<ConfidenceRow> rows = {
      {ConfidenceRule::kOneReading, "one_reading", RuleEffect::kStart, 90, 1, "one reading"},
      {ConfidenceRule::kAllAgree, "all_agree", RuleEffect::kStart, 92, 1, "every reading gives it"},
      {ConfidenceRule::kMostAgree, "most_agree", RuleEffect::kStart, 82, 1,
       "most readings give it"},
      {ConfidenceRule::kTooBigToCompare, "too_big_to_compare", RuleEffect::kStart, 80, 1,
       "too big to compare with the other readings"},
      {ConfidenceRule::kNoOtherAgrees, "no_other_agrees", RuleEffect::kStart, 80, 1,
       "no other reading gives it"},
      // Independent samples (the samples setting): every sample agreed on
      // every answer of the half the weights are set on (99% right). Most
      // samples giving it is set on spider_dev6 with three published systems
      // as the samples (102 answers, 90% right) and was checked on BIRD's
      // superhero with its four (120 answers, 79% right, not used to set it):
      // as sure as most readings. No other sample giving it was right 27 to
      // 43% of the time there.
      {ConfidenceRule::kSamplesAllAgree, "samples_all_agree", RuleEffect::kStart, 95, 1,
       "every sample gives it"},
      {ConfidenceRule::kSamplesMostAgree, "samples_most_agree", RuleEffect::kStart, 82, 1,
       "most samples give it"},
      {ConfidenceRule::kSamplesNoOtherAgrees, "samples_no_other_agrees", RuleEffect::kStart, 20, 1,
       "no other sample gives it"},
      {ConfidenceRule::kCriticalFinding, "critical_finding", RuleEffect::kCap, 15, 1,
       "a critical finding"},
      // An empty result, a COUNT of 0, an all-NULL column: on the live replies
      // of the half the weights are set on, every such answer was right (12
      // of 12: questions whose answer is empty), so it takes what a note takes.
      {ConfidenceRule::kHollowNote, "hollow_note", RuleEffect::kAdd, -10, 1,
       "a note explains it away"},
      {ConfidenceRule::kOtherNote, "other_note", RuleEffect::kAdd, -10, 2, "a note"},
      {ConfidenceRule::kFromCorrection, "from_correction", RuleEffect::kAdd, -15, 1,
       "found by a correction"},
      {ConfidenceRule::kVerifiedExample, "verified_example", RuleEffect::kAdd, 10, 1,
       "a verified example's SQL"},
      // The model's review (the `review` setting). Its weights are not
      // measured yet: an accepted answer keeps its number (0 until measured),
      // and one no review accepted stays below the low threshold, as the
      // review is the only signal that doubts it.
      {ConfidenceRule::kReviewAccepted, "review_accepted", RuleEffect::kAdd, 0, 1,
       "the model's review accepted it"},
      {ConfidenceRule::kReviewNotAccepted, "review_not_accepted", RuleEffect::kCap, 45, 1,
       "the model's review did not accept it"},
  };
  return rows;
}

const ConfidenceRow& ConfidenceRowOf(ConfidenceRule rule) {
  return ConfidenceRows()[static_cast<size_t>(rule)];
}

const std::vector<ConfidenceBand>& ConfidenceBands() {
  static const std::vector<ConfidenceBand> bands = {
      {"0-39", 0, 39}, {"40-59", 40, 59}, {"60-79", 60, 79}, {"80-100", 80, 100}};
  return bands;
}

std::string_view ConfidenceBandOf(int confidence) {
  for (const ConfidenceBand& b : ConfidenceBands()) {
    if (confidence >= b.from && confidence <= b.to) return b.name;
  }
  return "none";
}

std::string ConfidenceJson() {
  constexpr std::array<std::string_view, 3> kEffectNames = {"start", "cap", "add"};
  static_assert(kEffectNames.size() == static_cast<size_t>(RuleEffect::kAdd) + 1);
  auto effect = [&](RuleEffect e) { return EnumName(kEffectNames, e, "add"); };
  nlohmann::ordered_json out;
  out["rows"] = nlohmann::ordered_json::array();
  for (const ConfidenceRow& row : ConfidenceRows()) {
    out["rows"].push_back({{"name", row.name},
                           {"effect", effect(row.effect)},
                           {"number", row.number},
                           {"most", row.most},
                           {"reason", row.reason}});
  }
  out["bands"] = nlohmann::ordered_json::array();
  for (const ConfidenceBand& b : ConfidenceBands()) {
    out["bands"].push_back({{"name", b.name}, {"from", b.from}, {"to", b.to}});
  }
  out["low_below"] = kLowConfidenceBelow;
  return out.dump();
}

}  // namespace querypilot
