#include "agent/quality/agreement.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "agent/prompt/extract.h"
#include "agent/prompt/prompts.h"
#include "agent/quality/findings.h"

namespace querypilot {
namespace {

struct Table {
  std::vector<std::string> columns;
  std::deque<Row> rows;
  bool complete = true;
  ResultRows View() const { return {&columns, &rows, complete}; }
};

Row R(std::initializer_list<Value> v) {
  return Row(v);
}

TEST(Agreement, SameRowsInAnotherOrderAndColumnOrderAgree) {
  Table a{{"name", "n"}, {R({std::string("Ann"), int64_t{3}}), R({std::string("Bo"), int64_t{1}})}};
  Table b{{"cnt", "who"},
          {R({int64_t{1}, std::string("Bo")}), R({int64_t{3}, std::string("Ann")})}};
  EXPECT_EQ(CompareResults(a.View(), b.View()), Agreement::kSame);
  EXPECT_EQ(CompareResults(b.View(), a.View()), Agreement::kSame);
}

TEST(Agreement, OneExtraColumnIsAllowedTwoAreNot) {
  Table names{{"name"}, {R({std::string("Ann")}), R({std::string("Bo")})}};
  Table with_count{{"name", "orders"},
                   {R({std::string("Ann"), int64_t{3}}), R({std::string("Bo"), int64_t{1}})}};
  Table with_two{{"id", "name", "orders"},
                 {R({int64_t{1}, std::string("Ann"), int64_t{3}}),
                  R({int64_t{2}, std::string("Bo"), int64_t{1}})}};
  EXPECT_EQ(CompareResults(names.View(), with_count.View()), Agreement::kSame);
  EXPECT_EQ(CompareResults(names.View(), with_two.View()), Agreement::kDifferent);
}

TEST(Agreement, RealsWithinSixDigitsAndIntegersEqualToRealsAgree) {
  Table a{{"avg"}, {R({0.1 + 0.2})}};
  Table b{{"avg"}, {R({0.3})}};
  Table c{{"n"}, {R({int64_t{2}})}};
  Table d{{"n"}, {R({2.0})}};
  Table e{{"n"}, {R({2.01})}};
  Table text{{"n"}, {R({std::string("2")})}};
  EXPECT_EQ(CompareResults(a.View(), b.View()), Agreement::kSame);
  EXPECT_EQ(CompareResults(c.View(), d.View()), Agreement::kSame);
  EXPECT_EQ(CompareResults(c.View(), e.View()), Agreement::kDifferent);
  EXPECT_EQ(CompareResults(c.View(), text.View()), Agreement::kDifferent);
}

TEST(Agreement, OtherRowsDiffer) {
  Table a{{"name"}, {R({std::string("Ann")}), R({std::string("Bo")})}};
  Table b{{"name"}, {R({std::string("Ann")})}};
  Table c{{"name"}, {R({std::string("Ann")}), R({std::string("Cy")})}};
  EXPECT_EQ(CompareResults(a.View(), b.View()), Agreement::kDifferent);
  EXPECT_EQ(CompareResults(a.View(), c.View()), Agreement::kDifferent);
}

TEST(Agreement, ResultsReadInPartAgreeOnlyOnTheSameFirstRowsElseUnknown) {
  Table a{{"id"}, {R({int64_t{1}}), R({int64_t{2}})}, false};
  Table b{{"id"}, {R({int64_t{1}}), R({int64_t{2}})}, false};
  Table c{{"id"}, {R({int64_t{2}}), R({int64_t{1}})}, false};
  Table whole{{"id"}, {R({int64_t{1}}), R({int64_t{2}})}, true};
  EXPECT_EQ(CompareResults(a.View(), b.View()), Agreement::kSame);
  EXPECT_EQ(CompareResults(a.View(), c.View()), Agreement::kUnknown);
  EXPECT_EQ(CompareResults(a.View(), whole.View()), Agreement::kUnknown);
}

// agree(i, j) from a list of answer labels: the same label, the same answer.
struct Labels {
  std::vector<char> label;
  Agreement operator()(size_t i, size_t j) const {
    return label[i] == label[j] ? Agreement::kSame : Agreement::kDifferent;
  }
};

CandidateOutcome Ran(size_t critical = 0, bool hollow = false) {
  CandidateOutcome o;
  o.ran = true;
  o.critical = critical;
  o.hollow = hollow;
  return o;
}

TEST(Pick, TheMajorityWinsOverTheFirstReading) {
  Pick p = PickCandidate({Ran(), Ran(), Ran()}, Labels{{'a', 'b', 'b'}});
  EXPECT_EQ(p.index, 1u);
  EXPECT_EQ(p.agreeing, 2);
  EXPECT_TRUE(p.contested);
  EXPECT_EQ(p.lost[0], Lost::kFewerAgree);
}

TEST(Pick, ATieGoesToTheFirstReading) {
  Pick p = PickCandidate({Ran(), Ran(), Ran()}, Labels{{'a', 'b', 'c'}});
  EXPECT_EQ(p.index, 0u);
  EXPECT_EQ(p.agreeing, 1);
  EXPECT_EQ(p.lost[1], Lost::kTiedWithEarlier);
}

TEST(Pick, ACriticalFindingLosesEvenToAMinority) {
  Pick p = PickCandidate({Ran(1), Ran(1), Ran()}, Labels{{'a', 'a', 'b'}});
  EXPECT_EQ(p.index, 2u);
  EXPECT_EQ(p.lost[0], Lost::kCriticalFinding);
}

TEST(Pick, AnAnswerANoteExplainsAwayLosesToOneWithRows) {
  // A MIN over no rows (NULL) against a value.
  Pick p = PickCandidate({Ran(0, true), Ran()}, Labels{{'a', 'b'}});
  EXPECT_EQ(p.index, 1u);
  EXPECT_EQ(p.lost[0], Lost::kExplainedAway);
}

TEST(Pick, OneThatDidNotRunLosesAndAllFailingKeepsTheFirst) {
  CandidateOutcome failed;
  Pick p = PickCandidate({failed, Ran()}, Labels{{'a', 'b'}});
  EXPECT_EQ(p.index, 1u);
  EXPECT_EQ(p.lost[0], Lost::kDidNotRun);
  Pick none = PickCandidate({failed, failed}, Labels{{'a', 'b'}});
  EXPECT_EQ(none.index, 0u);
  EXPECT_EQ(none.ran, 0);
}

TEST(Pick, EachReasonHasItsTextAndOnlyAgreementLeavesAnAnswerInContention) {
  const struct {
    Lost why;
    std::string_view detail;
    std::string text;
    bool on_agreement;
  } cases[] = {
      {Lost::kNot, "", "", false},
      {Lost::kDidNotRun, "no such column: x", "it did not run: no such column: x", false},
      {Lost::kCriticalFinding, "", "its result has a critical finding", false},
      {Lost::kExplainedAway, "all_null", "a note explains it away (all_null)", false},
      {Lost::kFewerAgree, "", "fewer candidates agree with its result", true},
      {Lost::kTiedWithEarlier, "", "as many agree with an earlier reading", true},
      {Lost::kNotSelected, "", "the selection call chose another answer", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(LostText(c.why, c.detail), c.text);
    EXPECT_EQ(LostOnAgreement(c.why), c.on_agreement) << c.text;
  }
}

TEST(Pick, AllCriticalStillPicksByMajority) {
  Pick p = PickCandidate({Ran(1), Ran(1), Ran(1)}, Labels{{'a', 'b', 'b'}});
  EXPECT_EQ(p.index, 1u);
}

TEST(Agreement, ExactlyMeansAsManyColumnsAndEachRowAsOften) {
  Table names{{"name"}, {R({std::string("Ann")}), R({std::string("Bo")})}, true};
  Table twice{
      {"name"}, {R({std::string("Ann")}), R({std::string("Bo")}), R({std::string("Bo")})}, true};
  Table counted{{"name", "n"}, {R({std::string("Ann")}), R({std::string("Bo")})}, true};
  Table swapped{{"n", "name"}, {}, true};
  counted.rows[0].push_back(int64_t{1});
  counted.rows[1].push_back(int64_t{2});
  swapped.rows.push_back(R({int64_t{2}, std::string("Bo")}));
  swapped.rows.push_back(R({int64_t{1}, std::string("Ann")}));
  Table part = names;
  part.complete = false;
  // The same answer as a user reads it ...
  EXPECT_EQ(CompareResults(names.View(), twice.View()), Agreement::kSame);
  EXPECT_EQ(CompareResults(names.View(), counted.View()), Agreement::kSame);
  // ... but not to the letter: a repeated row, an extra column.
  EXPECT_FALSE(SameExactly(names.View(), twice.View()));
  EXPECT_FALSE(SameExactly(names.View(), counted.View()));
  // Columns and rows in another order are the same to the letter.
  EXPECT_TRUE(SameExactly(counted.View(), swapped.View()));
  EXPECT_TRUE(SameExactly(names.View(), names.View()));
  // A result read in part is never exact.
  EXPECT_FALSE(SameExactly(part.View(), part.View()));
}

TEST(Pick, OfAgreeingReadingsTheOneMostReproduceExactlyIsReturned) {
  // All three give the same answer; the first shows an extra count column
  // that the other two, written alike, do not.
  auto exact = [](size_t i, size_t j) { return i > 0 && j > 0; };
  Pick p = PickCandidate({Ran(), Ran(), Ran()}, Labels{{'a', 'a', 'a'}}, exact);
  EXPECT_EQ(p.index, 1u);
  EXPECT_EQ(p.agreeing, 3);
  EXPECT_FALSE(p.contested);
  EXPECT_EQ(p.lost[0], Lost::kNot);  // it gave the same answer: nothing lost
  // Each written its own way: the first reading.
  Pick tie = PickCandidate({Ran(), Ran(), Ran()}, Labels{{'a', 'a', 'a'}},
                           [](size_t, size_t) { return false; });
  EXPECT_EQ(tie.index, 0u);
  // Exactness never overrides the majority of answers.
  Pick majority = PickCandidate({Ran(), Ran(), Ran()}, Labels{{'a', 'b', 'b'}},
                                [](size_t i, size_t j) { return i == 0 || j == 0; });
  EXPECT_EQ(majority.index, 1u);
}

TEST(Confidence, AgreementRaisesItFindingsAndRetriesLowerIt) {
  ConfidenceInputs all;
  all.ran = 3;
  all.agreeing = 3;
  ConfidenceInputs majority = all;
  majority.agreeing = 2;
  ConfidenceInputs alone = all;
  alone.agreeing = 1;
  ConfidenceInputs one;  // a single reading
  EXPECT_GE(Confidence(all), 80);
  // Low comes from independent samples that give another answer, not from
  // the model's own alternatives (docs/confidence.md).
  ConfidenceInputs sampled_alone = one;
  sampled_alone.samples = 3;
  sampled_alone.samples_agreeing = 1;
  EXPECT_LT(Confidence(sampled_alone), 40);
  EXPECT_GT(Confidence(all), Confidence(one));
  EXPECT_GT(Confidence(one), Confidence(majority));
  EXPECT_GT(Confidence(majority), Confidence(alone));
  ConfidenceInputs critical = all;
  critical.critical = 1;
  EXPECT_LT(Confidence(critical), 40);
  ConfidenceInputs hollow = all;
  hollow.hollow = true;
  EXPECT_LT(Confidence(hollow), Confidence(all));
  ConfidenceInputs retried = one;
  retried.answer_attempt = 2;
  EXPECT_LT(Confidence(retried), Confidence(one));
  ConfidenceInputs example = one;
  example.example_reused = true;
  EXPECT_GT(Confidence(example), Confidence(one));
  for (ConfidenceInputs in :
       {all, majority, alone, one, critical, hollow, retried, example, sampled_alone}) {
    EXPECT_GE(Confidence(in), 0);
    EXPECT_LE(Confidence(in), 100);
  }
}

// The table: every rule has its row, in the order of the enum; exactly the
// signals start; the bands cover 0 to 100 once.
TEST(ConfidenceTable, EveryRuleHasItsRowAndTheBandsCoverEveryNumberOnce) {
  const std::vector<ConfidenceRow>& rows = ConfidenceRows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(ConfidenceRule::kReviewNotAccepted) + 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(rows[i].rule), i) << rows[i].name;
    EXPECT_EQ(&ConfidenceRowOf(rows[i].rule), &rows[i]);
    EXPECT_FALSE(rows[i].name.empty());
    EXPECT_FALSE(rows[i].reason.empty()) << rows[i].name;
    EXPECT_GE(rows[i].most, 1) << rows[i].name;
    const bool signal = rows[i].rule <= ConfidenceRule::kSamplesNoOtherAgrees;
    EXPECT_EQ(rows[i].effect == RuleEffect::kStart, signal) << rows[i].name;
  }
  for (int n = 0; n <= 100; ++n) {
    int bands = 0;
    for (const ConfidenceBand& b : ConfidenceBands()) bands += n >= b.from && n <= b.to;
    EXPECT_EQ(bands, 1) << n;
  }
  EXPECT_EQ(ConfidenceBandOf(-1), "none");
  EXPECT_EQ(ConfidenceBandOf(30), "0-39");
  EXPECT_EQ(ConfidenceBandOf(90), "80-100");
}

// The number is the table's: each case's score is computed here from the
// rows (so re-setting a weight changes data only), and its reason names the
// rows that applied.
TEST(ConfidenceTable, TheNumberAndTheReasonComeFromTheRowsThatApply) {
  auto number = [](ConfidenceRule r) { return ConfidenceRowOf(r).number; };
  auto reason = [](ConfidenceRule r) { return std::string(ConfidenceRowOf(r).reason); };
  ConfidenceInputs one;
  ConfidenceInputs all;
  all.ran = 3;
  all.agreeing = 3;
  ConfidenceInputs most = all;
  most.agreeing = 2;
  most.other_answer = "412";
  ConfidenceInputs alone;
  alone.ran = 2;
  alone.agreeing = 1;
  alone.other_answer = "3 rows";
  ConfidenceInputs unknown;
  unknown.ran = 2;
  unknown.agreeing = 1;
  unknown.unknown = 1;
  ConfidenceInputs critical = all;
  critical.critical = 1;
  critical.critical_names = {"value_not_found"};
  ConfidenceInputs notes = one;
  notes.notes = 3;
  notes.note_names = {"ties", "too_many_rows", "duplicate_rows"};
  ConfidenceInputs hollow = one;
  hollow.hollow = true;
  hollow.hollow_name = "empty_result";
  ConfidenceInputs retried = one;
  retried.answer_attempt = 2;
  ConfidenceInputs example = one;
  example.example_reused = true;
  auto low = [](int score) { return std::string(score < kLowConfidenceBelow ? "low: " : ""); };
  using R = ConfidenceRule;
  const struct {
    const char* what;
    ConfidenceInputs in;
    int score;
    std::vector<ConfidenceRule> applied;
    std::string reason;
  } cases[] = {
      {"one",
       one,
       number(R::kOneReading),
       {R::kOneReading},
       reason(R::kOneReading) + ", no finding"},
      {"all",
       all,
       number(R::kAllAgree),
       {R::kAllAgree},
       reason(R::kAllAgree) + " (3 of 3), no finding"},
      {"most",
       most,
       number(R::kMostAgree),
       {R::kMostAgree},
       reason(R::kMostAgree) + " (2 of 3, 1 disagrees; the other gives 412), no finding"},
      {"alone",
       alone,
       number(R::kNoOtherAgrees),
       {R::kNoOtherAgrees},
       low(number(R::kNoOtherAgrees)) + reason(R::kNoOtherAgrees) +
           " (1 of 2 disagree; the other gives 3 rows), no finding"},
      {"unknown",
       unknown,
       number(R::kTooBigToCompare),
       {R::kTooBigToCompare},
       reason(R::kTooBigToCompare) + " (1 other), no finding"},
      {"critical",
       critical,
       std::min(number(R::kAllAgree), number(R::kCriticalFinding)),
       {R::kAllAgree, R::kCriticalFinding},
       "low: " + reason(R::kAllAgree) + " (3 of 3), " + reason(R::kCriticalFinding) +
           " (value_not_found)"},
      {"notes",
       notes,
       number(R::kOneReading) + ConfidenceRowOf(R::kOtherNote).most * number(R::kOtherNote),
       {R::kOneReading, R::kOtherNote},
       reason(R::kOneReading) + ", " + reason(R::kOtherNote) +
           " (ties, too_many_rows, duplicate_rows)"},
      {"hollow",
       hollow,
       number(R::kOneReading) + number(R::kHollowNote),
       {R::kOneReading, R::kHollowNote},
       low(number(R::kOneReading) + number(R::kHollowNote)) + reason(R::kOneReading) + ", " +
           reason(R::kHollowNote) + " (empty_result)"},
      {"retried",
       retried,
       number(R::kOneReading) + number(R::kFromCorrection),
       {R::kOneReading, R::kFromCorrection},
       reason(R::kOneReading) + ", no finding, " + reason(R::kFromCorrection) + " (attempt 2)"},
      {"example",
       example,
       number(R::kOneReading) + number(R::kVerifiedExample),
       {R::kOneReading, R::kVerifiedExample},
       reason(R::kOneReading) + ", no finding, " + reason(R::kVerifiedExample)},
  };
  for (const auto& c : cases) {
    const ConfidenceVerdict v = JudgeConfidence(c.in);
    EXPECT_EQ(v.score, c.score) << c.what;
    EXPECT_EQ(v.applied, c.applied) << c.what;
    EXPECT_EQ(v.reason, c.reason) << c.what;
    // Low exactly below the threshold, and said first.
    EXPECT_EQ(v.reason.rfind("low: ", 0) == 0, v.score < kLowConfidenceBelow) << c.what;
  }
}

TEST(ConfidenceTable, AnotherReadingsAnswerIsItsOneValueOrItsRowCount) {
  Table number{{"n"}, {R({int64_t{412}})}};
  Table text{{"country"}, {R({std::string("France")})}};
  Table real{{"avg"}, {R({2.5})}};
  Table rows{{"name"}, {R({std::string("Ann")}), R({std::string("Bo")})}};
  Table one_row{{"name", "n"}, {R({std::string("Ann"), int64_t{3}})}};
  Table none{{"name"}, {}};
  Table part{{"id"}, {R({int64_t{1}}), R({int64_t{2}})}, false};
  Table long_text{{"t"}, {R({std::string(60, 'x')})}};
  EXPECT_EQ(DescribeAnswer(number.View()), "412");
  EXPECT_EQ(DescribeAnswer(text.View()), "'France'");
  EXPECT_EQ(DescribeAnswer(real.View()), "2.5");
  EXPECT_EQ(DescribeAnswer(rows.View()), "2 rows");
  EXPECT_EQ(DescribeAnswer(one_row.View()), "1 row");
  EXPECT_EQ(DescribeAnswer(none.View()), "no rows");
  EXPECT_EQ(DescribeAnswer(part.View()), "more than 2 rows");
  EXPECT_EQ(DescribeAnswer(long_text.View()), "'" + std::string(40, 'x') + "...'");
}

TEST(Candidates, EachSqlBlockInOrderUpToTheMost) {
  const std::string reply =
      "Most likely:\n```sql\nSELECT 1\n```\nOr:\n```sql\nSELECT 2;\n```\n```sql\nSELECT 3\n```\n";
  auto three = ExtractCandidates(reply, 3);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three.value(), (std::vector<std::string>{"SELECT 1", "SELECT 2", "SELECT 3"}));
  auto two = ExtractCandidates(reply, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two.value(), (std::vector<std::string>{"SELECT 1", "SELECT 2"}));
  // One: the reply's one query as ExtractSql reads it (the last block).
  auto one = ExtractCandidates(reply, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one.value(), (std::vector<std::string>{"SELECT 3"}));
  auto bare = ExtractCandidates("SELECT name FROM t", 3);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare.value(), (std::vector<std::string>{"SELECT name FROM t"}));
  EXPECT_EQ(ExtractCandidates("I cannot help.", 3).status().kind(), ErrorKind::kNoSql);
}

TEST(Candidates, TheRuleAsksForAlternativesOnlyWithCandidatesAndNarrowsClarify) {
  const std::string one = SystemPrompt("t(a)", true, {}, 1);
  EXPECT_EQ(one.find("alternative"), std::string::npos);
  EXPECT_NE(one.find("```clarify"), std::string::npos);
  const std::string three = SystemPrompt("t(a)", true, {}, 3);
  EXPECT_NE(three.find("add up to two alternative queries"), std::string::npos);
  EXPECT_NE(three.find("If nothing in the schema can answer any reading"), std::string::npos);
  EXPECT_EQ(three.find("readings differ"), std::string::npos);
  EXPECT_NE(SystemPrompt("t(a)", false, {}, 2).find("add up to one alternative"),
            std::string::npos);
  EXPECT_EQ(SystemPrompt("t(a)", false, {}, 2).find("```clarify"), std::string::npos);
}

TEST(Candidates, HollowNotesAreTheOnesThatSuggestAMissingValue) {
  for (const FindingRow& row : FindingRows()) {
    if (row.hollow) {
      EXPECT_EQ(row.tier, Tier::kNote) << row.name;
    }
  }
  EXPECT_TRUE(RowOf(Finding::kEmptyResult).hollow);
  EXPECT_TRUE(RowOf(Finding::kAllNull).hollow);
  EXPECT_TRUE(RowOf(Finding::kZeroCount).hollow);
  EXPECT_FALSE(RowOf(Finding::kTies).hollow);
}

}  // namespace
}  // namespace querypilot
