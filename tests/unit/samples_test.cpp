#include "agent/quality/samples.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
SampleOutcome Different(int64_t rows) {
  SampleOutcome o = Same(rows);
  o.sql = "SELECT b";
  o.agreement = Agreement::kDifferent;
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
  struct Case {
    const char* name;
    std::vector<SampleOutcome> samples;
    SampleVerdict verdict;
    int compared, agreeing;
    const char* reason;
  } cases[] = {
      {"one reply", {Same()}, SampleVerdict::kNone, 1, 1, ""},
      {"all three agree", {Same(), Same(), Same()}, SampleVerdict::kEvery, 3, 3,
       "3 of 3 samples give it"},
      {"one of three differs", {Same(), Different(412), Same()}, SampleVerdict::kMost, 3, 2,
       "1 of 3 samples disagrees: it gives 412 rows"},
      {"no other gives it", {Same(), Different(412), Different(1)}, SampleVerdict::kNoOther, 3, 1,
       "2 of 3 samples disagree: they give 412 rows, 1 row"},
      {"one against one", {Same(), Different(0)}, SampleVerdict::kNoOther, 2, 1,
       "1 of 2 samples disagrees: it gives 0 rows"},
      {"others failed", {Same(), Failed(), Failed()}, SampleVerdict::kNone, 1, 1,
       "2 samples could not be compared"},
      {"too big to tell", {Same(), Unknown(), Same()}, SampleVerdict::kEvery, 2, 2,
       "2 of 2 samples give it"},
      {"two of five", {Same(), Same(), Different(2), Different(2), Different(5)},
       SampleVerdict::kFew, 5, 2, "3 of 5 samples disagree: they give 2 rows, 2 rows, 5 rows"},
      {"the answer came from a correction", {Different(7), Same(), Same()}, SampleVerdict::kMost,
       3, 2, "1 of 3 samples disagrees: it gives 7 rows"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const SampleTally t = TallySamples(c.samples);
    EXPECT_EQ(t.asked, static_cast<int>(c.samples.size()));
    EXPECT_EQ(t.verdict, c.verdict);
    EXPECT_EQ(t.compared, c.compared);
    EXPECT_EQ(t.agreeing, c.agreeing);
    EXPECT_EQ(SampleReason(t, c.samples), c.reason);
    const nlohmann::json j = nlohmann::json::parse(SamplesJson(t, c.samples));
    EXPECT_EQ(j["asked"], c.samples.size());
    EXPECT_EQ(j["agreeing"], c.agreeing);
    EXPECT_EQ(j["verdict"], RowOf(c.verdict).name);
    ASSERT_EQ(j["samples"].size(), c.samples.size());
    for (size_t i = 0; i < c.samples.size(); ++i) {
      EXPECT_EQ(j["samples"][i]["ran"], c.samples[i].ran);
      if (!c.samples[i].ran) {
        EXPECT_EQ(j["samples"][i]["error"], c.samples[i].failure);
      }
    }
  }
}

// Every verdict has one row; samples that all agree lift the agreement
// score but never past what the findings take, and disagreement caps it.
TEST(Samples, RowsCapTheConfidence) {
  for (SampleVerdict v : {SampleVerdict::kNone, SampleVerdict::kEvery, SampleVerdict::kMost,
                          SampleVerdict::kFew, SampleVerdict::kNoOther}) {
    EXPECT_EQ(RowOf(v).verdict, v);
    EXPECT_FALSE(RowOf(v).name.empty());
  }
  ConfidenceInputs in;
  const int alone = Confidence(in);
  auto with = [](ConfidenceInputs in, SampleVerdict v) {
    in.samples_floor = RowOf(v).floor;
    in.samples_cap = RowOf(v).cap;
    return Confidence(in);
  };
  EXPECT_EQ(with(in, SampleVerdict::kNone), alone);
  // Every sample agreeing lifts a single reading, and an answer the model's
  // own alternatives disagreed on; findings still take from it.
  EXPECT_GT(with(in, SampleVerdict::kEvery), alone);
  ConfidenceInputs contested = in;
  contested.ran = 3;
  contested.agreeing = 1;
  EXPECT_GT(with(contested, SampleVerdict::kEvery), Confidence(contested));
  ConfidenceInputs flagged = in;
  flagged.critical = 1;
  EXPECT_LE(with(flagged, SampleVerdict::kEvery), 15);
  in.samples_cap = RowOf(SampleVerdict::kNoOther).cap;
  EXPECT_LT(Confidence(in), alone);
  EXPECT_LE(Confidence(in), RowOf(SampleVerdict::kNoOther).cap);
  in.samples_cap = RowOf(SampleVerdict::kMost).cap;
  EXPECT_LT(Confidence(in), alone);
  EXPECT_GE(RowOf(SampleVerdict::kMost).cap, RowOf(SampleVerdict::kFew).cap);
  EXPECT_GE(RowOf(SampleVerdict::kFew).cap, RowOf(SampleVerdict::kNoOther).cap);
}

}  // namespace
}  // namespace querypilot
