#include "agent/quality/findings.h"

#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/prompts.h"
#include "agent/quality/reflect.h"

namespace querypilot {
namespace {

// Every finding has one row, in the order of the enum (its priority), with
// a unique name, and every critical one a strategy and a prompt text; a note
// has neither, since it never sends a result back.
TEST(Findings, EveryFindingHasOneCompleteRow) {
  const auto& rows = FindingRows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(Finding::kTruncated) + 1);
  std::set<std::string> names;
  bool notes_began = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const FindingRow& row = rows[i];
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(static_cast<size_t>(row.finding), i);
    EXPECT_EQ(&RowOf(row.finding), &row);
    ASSERT_FALSE(row.name.empty());
    EXPECT_TRUE(names.insert(std::string(row.name)).second) << "a second row named " << row.name;
    EXPECT_EQ(FindingNamed(row.name), row.finding);
    if (row.tier == Tier::kCritical) {
      EXPECT_FALSE(notes_began) << "a critical finding after a note: priority is the table's order";
      EXPECT_TRUE(row.strategy == "pivot" || row.strategy == "rewrite" || row.strategy == "reshape" ||
                  row.strategy == "relax")
          << row.strategy;
      ASSERT_FALSE(row.prompt.empty());
      EXPECT_TRUE(ValidatePromptText(row.prompt, "x").ok()) << row.prompt << " is not an editable prompt";
      EXPECT_FALSE(PromptTextFor({}, row.prompt).empty()) << row.prompt;
    } else {
      notes_began = true;
      EXPECT_TRUE(row.strategy.empty());
      EXPECT_TRUE(row.prompt.empty());
      EXPECT_FALSE(row.also_note);
    }
  }
  EXPECT_EQ(FindingNamed("column_not_found"), std::nullopt);  // an error's name, not a finding's
  EXPECT_EQ(FindingNamed(""), std::nullopt);
}

// An issue's kind and severity, as the reflection's JSON says them, come
// from its finding's row; an error's kind from its ErrorKind.
TEST(Findings, AnIssueSaysItsRowsNameAndTier) {
  for (const FindingRow& row : FindingRows()) {
    ReflectionIssue issue(row.finding, "seen");
    EXPECT_EQ(issue.kind(), row.name);
    EXPECT_EQ(issue.severity(), SeverityName(row.tier));
  }
  EXPECT_EQ(ReflectionIssue::Note(Finding::kForeignKeyIds, "ids").severity(), "warning");
  EXPECT_EQ(ReflectionIssue::Note(Finding::kTruncated, "cut").severity(), "info");  // never raised
  ReflectionIssue error = ReflectionIssue::Error(ErrorKind::kColumnNotFound, "no such column: x");
  EXPECT_EQ(error.kind(), "column_not_found");
  EXPECT_EQ(error.severity(), "critical");
}

// agent_config('findings') is the table, row for row.
TEST(Findings, TheJsonIsTheTable) {
  const nlohmann::json j = nlohmann::json::parse(FindingsJson());
  ASSERT_EQ(j.size(), FindingRows().size());
  for (size_t i = 0; i < j.size(); ++i) {
    const FindingRow& row = FindingRows()[i];
    EXPECT_EQ(j[i]["name"], row.name);
    EXPECT_EQ(j[i]["severities"][0], SeverityName(row.tier));
    EXPECT_EQ(j[i]["severities"].size(), row.also_note ? 2u : 1u);
    EXPECT_EQ(j[i].value("strategy", ""), row.strategy);
    EXPECT_EQ(j[i].value("prompt", ""), row.prompt);
  }
  EXPECT_EQ(j[0]["tier"], "critical");
  EXPECT_EQ(j[j.size() - 1]["tier"], "info");
}

}  // namespace
}  // namespace querypilot
