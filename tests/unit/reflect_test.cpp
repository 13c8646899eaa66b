#include "agent/reflect.h"

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
      {Status(ErrorKind::kColumnNotFound, "no such column: x"), 0, false, false, true, "column_not_found"},
      {Status(ErrorKind::kSyntaxError, "near x"), 0, false, false, true, "syntax_error"},
      {Status(ErrorKind::kNoSql, "none"), 0, false, false, true, "no_sql"},
      {Status(ErrorKind::kTimeout, "slow"), 0, false, false, true, "timeout"},
      {Status(ErrorKind::kRefused, "write"), 0, false, false, false, "refused"},
      {Status(ErrorKind::kUnchangedSql, "same"), 0, false, false, false, "unchanged_sql"},
      {Status(ErrorKind::kProviderAuth, "401"), 0, false, false, false, "provider_auth"},
      {Status(ErrorKind::kInterrupted, "stop"), 0, false, false, false, "interrupted"},
  };
  for (const auto& c : cases) {
    AttemptOutcome o;
    o.error = c.error;
    o.rows_seen = c.rows;
    o.complete = c.complete;
    Reflection r = Reflect(o);
    EXPECT_EQ(r.is_acceptable, c.acceptable) << c.error.ToString();
    EXPECT_EQ(r.should_refine, c.refine) << c.error.ToString();
    if (*c.issue) {
      ASSERT_FALSE(r.issues.empty());
      EXPECT_EQ(r.issues[0].kind, c.issue);
      EXPECT_EQ(r.issues[0].severity, c.error.ok() ? "warning" : "critical");
    } else {
      EXPECT_TRUE(r.issues.empty());
    }
    auto j = nlohmann::json::parse(r.ToJson());
    EXPECT_EQ(j["is_acceptable"], c.acceptable);
    EXPECT_EQ(j["should_refine"], c.refine);
    EXPECT_FALSE(j["reasoning"].get<std::string>().empty());
  }
}

}  // namespace
}  // namespace querypilot
