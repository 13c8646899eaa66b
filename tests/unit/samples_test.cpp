#include "agent/quality/samples.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>

namespace querypilot {
namespace {

SampleOutcome Same(int64_t rows = 3) {
  SampleOutcome o;
  o.sql = "SELECT a";
  o.ran = true;
  o.agreement = Agreement::kSame;
  o.rows = rows;
  return o;
}
SampleOutcome Different(std::string gives) {
  SampleOutcome o = Same(1);
  o.sql = "SELECT b";
  o.agreement = Agreement::kDifferent;
  o.gives = std::move(gives);
  return o;
}
SampleOutcome Unknown() {
  SampleOutcome o = Same(-1);
  o.agreement = Agreement::kUnknown;
  return o;
}
SampleOutcome Failed() {
  SampleOutcome o;
  o.sql = "SELECT nope";
  o.failure = "no such column: nope";
  return o;
}

// The verdict counts every reply's result against the answer returned, the
// first reply's included; what did not run or cannot be compared is left out.
TEST(Samples, VerdictAndReason) {
  using R = ConfidenceRule;
  struct Case {
    const char* name;
    std::vector<SampleOutcome> samples;
    std::optional<R> rule;
    int compared, agreeing;
    const char* reason;
  } cases[] = {
      {"one reply", {Same()}, std::nullopt, 1, 1, ""},
      {"all three agree",
       {Same(), Same(), Same()},
       R::kSamplesAllAgree,
       3,
       3,
       "3 of 3 samples give it"},
      {"one of three differs",
       {Same(), Different("412"), Same()},
       R::kSamplesMostAgree,
       3,
       2,
       "1 of 3 samples disagrees: it gives 412"},
      {"no other gives it",
       {Same(), Different("412"), Different("3 rows")},
       R::kSamplesNoOtherAgrees,
       3,
       1,
       "2 of 3 samples disagree: they give 412, 3 rows"},
      {"one against one",
       {Same(), Different("no rows")},
       R::kSamplesNoOtherAgrees,
       2,
       1,
       "1 of 2 samples disagrees: it gives no rows"},
      {"others failed",
       {Same(), Failed(), Failed()},
       std::nullopt,
       1,
       1,
       "2 samples could not be compared"},
      {"too big to tell",
       {Same(), Unknown(), Same()},
       R::kSamplesAllAgree,
       2,
       2,
       "2 of 2 samples give it"},
      {"two of five",
       {Same(), Same(), Different("2"), Different("2"), Different("5")},
       R::kSamplesMostAgree,
       5,
       2,
       "3 of 5 samples disagree: they give 2, 2, 5"},
      {"the answer came from a correction",
       {Different("7"), Same(), Same()},
       R::kSamplesMostAgree,
       3,
       2,
       "1 of 3 samples disagrees: it gives 7"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const SampleTally t = TallySamples(c.samples);
    EXPECT_EQ(t.asked, static_cast<int>(c.samples.size()));
    EXPECT_TRUE(t.rule == c.rule);
    EXPECT_EQ(t.compared, c.compared);
    EXPECT_EQ(t.agreeing, c.agreeing);
    EXPECT_EQ(SampleReason(t, c.samples), c.reason);
    const nlohmann::json j = nlohmann::json::parse(SamplesJson(t, c.samples));
    EXPECT_EQ(j["asked"], c.samples.size());
    EXPECT_EQ(j["agreeing"], c.agreeing);
    EXPECT_EQ(j["verdict"], c.rule ? std::string(ConfidenceRowOf(*c.rule).reason)
                                   : std::string("no sample to compare"));
    ASSERT_EQ(j["samples"].size(), c.samples.size());
    for (size_t i = 0; i < c.samples.size(); ++i) {
      EXPECT_EQ(j["samples"][i]["ran"], c.samples[i].ran);
      if (!c.samples[i].ran) {
        EXPECT_EQ(j["samples"][i]["error"], c.samples[i].failure);
      }
    }
  }
}

// Where two or more samples compared, they are the confidence's signal in
// place of the readings' agreement, and the reason says so; findings still
// take from it.
TEST(Samples, AreTheSignalWhereTwoOrMoreCompared) {
  using R = ConfidenceRule;
  ConfidenceInputs one;  // one reading, no finding
  const ConfidenceVerdict alone = JudgeConfidence(one);
  ConfidenceInputs contested = one;  // the model's own alternatives disagree
  contested.ran = 3;
  contested.agreeing = 1;
  struct Case {
    const char* name;
    ConfidenceInputs base;
    int samples, agreeing;
    const char* other;
    R rule;
    const char* reason;
  };
  const Case cases[] = {
      {"all agree", one, 3, 3, "", R::kSamplesAllAgree,
       "every sample gives it (3 of 3), no finding"},
      {"all agree, alternatives did not", contested, 3, 3, "", R::kSamplesAllAgree,
       "every sample gives it (3 of 3), no finding"},
      {"most", one, 3, 2, "412", R::kSamplesMostAgree,
       "most samples give it (1 of 3 disagrees; the other gives 412), no finding"},
      {"no other", one, 3, 1, "412", R::kSamplesNoOtherAgrees,
       "no other sample gives it (2 of 3 disagree; another gives 412), no finding"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ConfidenceInputs in = c.base;
    in.samples = c.samples;
    in.samples_agreeing = c.agreeing;
    in.other_answer = c.other;
    const ConfidenceVerdict v = JudgeConfidence(in);
    ASSERT_FALSE(v.applied.empty());
    EXPECT_EQ(v.applied.front(), c.rule);
    EXPECT_EQ(v.score, ConfidenceRowOf(c.rule).number);
    EXPECT_NE(v.reason.find(c.reason), std::string::npos) << v.reason;
  }
  // Every sample agreeing says more than one reading; no other sample, less.
  ConfidenceInputs in = one;
  in.samples = 3;
  in.samples_agreeing = 3;
  EXPECT_GT(JudgeConfidence(in).score, alone.score);
  in.samples_agreeing = 1;
  EXPECT_LT(JudgeConfidence(in).score, kLowConfidenceBelow);
  EXPECT_EQ(JudgeConfidence(in).reason.rfind("low: ", 0), 0u);
  // A critical finding still caps it.
  in.samples_agreeing = 3;
  in.critical = 1;
  EXPECT_LE(JudgeConfidence(in).score, ConfidenceRowOf(R::kCriticalFinding).number);
  // Fewer than two compared: the readings are the signal.
  in = one;
  in.samples = 1;
  in.samples_agreeing = 1;
  EXPECT_EQ(JudgeConfidence(in).applied.front(), R::kOneReading);
}

// The vote: samples grouped by the result they give (here a letter per
// result, the answer chosen being 'a'); the group with most samples wins and
// replaces the answer only with more votes than the answer has.
TEST(Samples, TheResultMostSamplesGiveWins) {
  struct Case {
    const char* name;
    std::string results;  // one letter per sample, the answer's 'a'; '-' did not run, '?' unknown
    std::optional<size_t> winner;
    int votes, answer_votes, compared;
  } cases[] = {
      {"two samples never vote", "ab", std::nullopt, 1, 1, 2},
      {"all agree", "aaa", std::nullopt, 3, 3, 3},
      {"the first outvoted", "abb", 1, 2, 1, 3},
      {"three of four give another", "abbb", 1, 3, 1, 4},
      {"a tie keeps the answer", "abba", std::nullopt, 2, 2, 4},
      {"all differ: the answer stays", "abc", std::nullopt, 1, 1, 3},
      {"the bigger group wins, led by its first sample", "abccbc", 2, 3, 1, 6},
      {"a tie between others: the earliest", "bbcc", 0, 2, 0, 4},
      {"one that did not run does not vote", "a-bb", 2, 2, 1, 3},
      {"one too big to compare does not vote", "a?bb", 2, 2, 1, 3},
      {"the answer no sample gives loses to two", "bbc", 0, 2, 0, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string results = c.results;
    std::vector<SampleOutcome> samples;
    for (char r : results) {
      SampleOutcome o = r == 'a'   ? Same()
                        : r == '-' ? Failed()
                        : r == '?' ? Unknown()
                                   : Different("x");
      samples.push_back(o);
    }
    auto agrees = [&](size_t i, size_t j) {
      if (results[i] == '?' || results[j] == '?') return Agreement::kUnknown;
      return results[i] == results[j] ? Agreement::kSame : Agreement::kDifferent;
    };
    const SampleVote vote = VoteSamples(samples, agrees);
    EXPECT_EQ(vote.winner, c.winner);
    EXPECT_EQ(vote.votes, c.votes);
    EXPECT_EQ(vote.answer_votes, c.answer_votes);
    EXPECT_EQ(vote.compared, c.compared);
    if (!vote.winner) continue;
    // Judged again against the winner: the tally counts its votes.
    RejudgeAgainst(&samples, *vote.winner, agrees);
    const SampleTally tally = TallySamples(samples);
    EXPECT_EQ(tally.agreeing, c.votes);
    EXPECT_TRUE(samples[*vote.winner].returned);
    const nlohmann::json j = nlohmann::json::parse(SamplesJson(tally, samples, vote));
    EXPECT_EQ(j["vote"]["winner"], *vote.winner + 1);
    EXPECT_EQ(j["samples"][*vote.winner]["returned"], true);
  }
}

// The confidence of an answer the vote chose says how many samples give it.
TEST(Samples, AVotedAnswersReasonSaysHowManyGiveIt) {
  ConfidenceInputs in;
  in.answer_attempt = 1;
  in.ran = 1;
  in.agreeing = 1;
  in.samples = 4;
  in.samples_agreeing = 3;
  in.voted = true;
  in.other_answer = "12";
  const ConfidenceVerdict v = JudgeConfidence(in);
  EXPECT_EQ(v.applied.front(), ConfidenceRule::kSamplesMostAgree);
  EXPECT_NE(v.reason.find("3 of 4 samples give this result"), std::string::npos) << v.reason;
  EXPECT_EQ(v.reason.find("12"), std::string::npos) << v.reason;
}

}  // namespace
}  // namespace querypilot
