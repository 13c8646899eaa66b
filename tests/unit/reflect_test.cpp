#include "agent/quality/reflect.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace querypilot {
namespace {

TEST(Reflect, Decisions) {
  struct Case {
    Status error;
    size_t rows;
    bool complete;
    bool acceptable;
    bool refine;
    const char* issue;  // kind of the first issue, or ""
  } cases[] = {
      {Status(), 5, true, true, false, ""},
      {Status(), 0, true, true, false, "empty_result"},
      {Status(ErrorKind::kColumnNotFound, "no such column: x"), 0, false, false, true,
       "column_not_found"},
      {Status(ErrorKind::kSyntaxError, "near x"), 0, false, false, true, "syntax_error"},
      {Status(ErrorKind::kNoSql, "none"), 0, false, false, true, "no_sql"},
      {Status(ErrorKind::kTimeout, "slow"), 0, false, false, true, "timeout"},
      {Status(ErrorKind::kRefused, "write"), 0, false, false, true, "refused"},  // once per run
      {Status(ErrorKind::kUnchangedSql, "same"), 0, false, false, false, "unchanged_sql"},
      {Status(ErrorKind::kProviderAuth, "401"), 0, false, false, false, "provider_auth"},
      {Status(ErrorKind::kInterrupted, "stop"), 0, false, false, false, "interrupted"},
  };
  for (const auto& c : cases) {
    AttemptOutcome o;
    o.error = c.error;
    o.rows_seen = c.rows;
    o.complete = c.complete;
    if (c.error.ok() && c.rows == 0) o.result_issues.push_back({Finding::kEmptyResult, "no rows"});
    Reflection r = Reflect(o);
    EXPECT_EQ(r.is_acceptable, c.acceptable) << c.error.ToString();
    EXPECT_EQ(r.should_refine, c.refine) << c.error.ToString();
    if (*c.issue) {
      ASSERT_FALSE(r.issues.empty());
      EXPECT_EQ(r.issues[0].kind(), c.issue);
      EXPECT_EQ(r.issues[0].severity(), c.error.ok() ? "note" : "critical");
    } else {
      EXPECT_TRUE(r.issues.empty());
    }
    auto j = nlohmann::json::parse(r.ToJson());
    EXPECT_EQ(j["is_acceptable"], c.acceptable);
    EXPECT_EQ(j["should_refine"], c.refine);
    EXPECT_FALSE(j["reasoning"].get<std::string>().empty());
  }
}

TEST(Reflect, ASecondRefusalEndsTheRun) {
  AttemptOutcome o;
  o.error = Status(ErrorKind::kRefused, "write");
  o.refusals_before = 1;
  Reflection r = Reflect(o);
  EXPECT_FALSE(r.should_refine);
  EXPECT_EQ(r.issues[0].kind(), "refused");
}

TEST(Reflect, CriticalResultFindingRefinesWithItsStrategy) {
  struct Case {
    std::vector<Finding> kinds;  // critical findings, in order
    const char* strategy;
  } cases[] = {
      {{Finding::kPercentageBounds, Finding::kValueNotFound},
       "rewrite"},  // value evidence comes first
      {{Finding::kValueNotFound, Finding::kValueElsewhere}, "pivot"},
      {{Finding::kJoinOnKeys}, "rewrite"},
      {{Finding::kForeignKeyIds}, "reshape"},
      {{Finding::kPercentageBounds}, "relax"},
  };
  for (const auto& c : cases) {
    AttemptOutcome o;
    o.rows_seen = 1;
    o.complete = true;
    for (Finding k : c.kinds)
      o.result_issues.push_back({k, "because " + std::string(RowOf(k).name)});
    o.result_issues.push_back({Finding::kDuplicateRows, "dups"});
    Reflection r = Reflect(o);
    EXPECT_FALSE(r.is_acceptable);
    EXPECT_TRUE(r.should_refine);
    EXPECT_EQ(r.strategy, c.strategy) << RowOf(c.kinds[0]).name;
    EXPECT_EQ(r.critical(), c.kinds.size());
    EXPECT_NE(r.reasoning.find("strategy " + std::string(c.strategy)), std::string::npos)
        << r.reasoning;
    auto j = nlohmann::json::parse(r.ToJson());
    EXPECT_EQ(j["strategy"], c.strategy);
    EXPECT_EQ(j["issues"].size(), c.kinds.size() + 1);
  }
}

TEST(Reflect, WarningsAloneAreAccepted) {
  AttemptOutcome o;
  o.rows_seen = 0;
  o.complete = true;
  o.result_issues.push_back({Finding::kEmptyResult, "no rows"});
  o.result_issues.push_back({Finding::kValueMissing, "'x' nowhere"});
  Reflection r = Reflect(o);
  EXPECT_TRUE(r.is_acceptable);
  EXPECT_FALSE(r.should_refine);
  EXPECT_EQ(r.strategy, "");
  EXPECT_EQ(r.issues.size(), 2u);
  EXPECT_FALSE(nlohmann::json::parse(r.ToJson()).contains("strategy"));
}

// A note never sends a result back, whatever else it finds: too many rows
// for "the oldest", a COUNT of 0, an all-NULL column.
TEST(Reflect, NotesNeverSendAResultBack) {
  for (const FindingRow& row : FindingRows()) {
    if (row.tier == Tier::kCritical) continue;
    AttemptOutcome o;
    o.rows_seen = 2;
    o.complete = true;
    o.result_issues.push_back({row.finding, "seen"});
    Reflection r = Reflect(o);
    EXPECT_TRUE(r.is_acceptable) << row.name;
    EXPECT_FALSE(r.should_refine) << row.name;
    EXPECT_EQ(r.strategy, "") << row.name;
  }
  AttemptOutcome o;
  o.complete = true;
  o.result_issues.push_back(ReflectionIssue::Note(Finding::kForeignKeyIds, "ids"));
  EXPECT_FALSE(Reflect(o).should_refine);
}

TEST(Reflect, GroundingFieldsAreInTheJson) {
  AttemptOutcome o;
  o.complete = true;
  ReflectionIssue issue(Finding::kValueNotFound, "'usa' does not occur");
  issue.literal = "usa";
  issue.column = "customers.country";
  issue.values = {"USA"};
  o.result_issues.push_back(issue);
  auto j = nlohmann::json::parse(Reflect(o).ToJson());
  EXPECT_EQ(j["issues"][0]["literal"], "usa");
  EXPECT_EQ(j["issues"][0]["column"], "customers.country");
  EXPECT_EQ(j["issues"][0]["values"], nlohmann::json::array({"USA"}));
  EXPECT_EQ(j["strategy"], "rewrite");
}

}  // namespace
}  // namespace querypilot
