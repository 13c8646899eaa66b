#include "agent/quality/findings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "agent/prompt/prompts.h"
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
      EXPECT_TRUE(row.strategy == "pivot" || row.strategy == "rewrite" ||
                  row.strategy == "reshape" || row.strategy == "relax")
          << row.strategy;
      ASSERT_FALSE(row.prompt.empty());
      EXPECT_TRUE(ValidatePromptText(row.prompt, "x").ok())
          << row.prompt << " is not an editable prompt";
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
    EXPECT_EQ(issue.severity(), TierName(row.tier));
  }
  EXPECT_EQ(ReflectionIssue::Note(Finding::kForeignKeyIds, "ids").severity(), "note");
  EXPECT_EQ(ReflectionIssue::Note(Finding::kTruncated, "cut").severity(), "info");  // never raised
  ReflectionIssue error = ReflectionIssue::Error(ErrorKind::kColumnNotFound, "no such column: x");
  EXPECT_EQ(error.kind(), "column_not_found");
  EXPECT_EQ(error.severity(), "critical");
}

// The row's also_note decides: Note() demotes a critical finding to a note
// only when its row says so, and never raises one above its row's tier.
TEST(Findings, OnlyARowThatSaysAlsoNoteIsRaisedAsANote) {
  for (const FindingRow& row : FindingRows()) {
    const Tier tier = ReflectionIssue::Note(row.finding, "seen").tier;
    if (row.tier == Tier::kCritical && row.also_note) {
      EXPECT_EQ(tier, Tier::kNote) << row.name;
    } else {
      EXPECT_EQ(tier, row.tier) << row.name;
    }
    // Every row says what it means.
    EXPECT_FALSE(row.doc.empty()) << row.name;
  }
}

// The notes counted toward a run's confidence are those whose row says so,
// at the note tier only: not slow_scan, not a hollow note, not a fact, not
// a critical finding raised at its own tier.
TEST(Findings, ConfidenceNotesReadTheRow) {
  for (const FindingRow& row : FindingRows()) {
    if (row.counts_toward_confidence) {
      EXPECT_FALSE(row.hollow) << row.name << ": a hollow note is counted on its own";
      EXPECT_TRUE(row.tier == Tier::kNote || row.also_note) << row.name;
    }
    const std::vector<ReflectionIssue> as_raised = {{row.finding, "seen"}};
    EXPECT_EQ(ConfidenceNotes(as_raised), row.tier == Tier::kNote && row.counts_toward_confidence)
        << row.name;
    const std::vector<ReflectionIssue> as_note = {ReflectionIssue::Note(row.finding, "seen")};
    EXPECT_EQ(ConfidenceNotes(as_note),
              as_note[0].tier == Tier::kNote && row.counts_toward_confidence)
        << row.name;
  }
  EXPECT_FALSE(RowOf(Finding::kSlowScan).counts_toward_confidence);
  EXPECT_TRUE(RowOf(Finding::kTooManyRows).counts_toward_confidence);
  EXPECT_EQ(ConfidenceNotes({ReflectionIssue::Error(ErrorKind::kTimeout, "slow")}), 0u);
}

// One name per tier; "warning", a note's name in reflections recorded
// before, still reads as a note.
TEST(Findings, TierNamesReadBack) {
  for (Tier t : {Tier::kCritical, Tier::kNote, Tier::kInfo}) EXPECT_EQ(TierNamed(TierName(t)), t);
  EXPECT_EQ(TierName(Tier::kNote), "note");
  EXPECT_EQ(TierNamed("warning"), Tier::kNote);
  EXPECT_EQ(TierNamed("severe"), std::nullopt);
}

// agent_config('findings') is the table, row for row.
TEST(Findings, TheJsonIsTheTable) {
  const nlohmann::json j = nlohmann::json::parse(FindingsJson());
  ASSERT_EQ(j.size(), FindingRows().size());
  for (size_t i = 0; i < j.size(); ++i) {
    const FindingRow& row = FindingRows()[i];
    EXPECT_EQ(j[i]["name"], row.name);
    EXPECT_EQ(j[i]["tier"], TierName(row.tier));
    EXPECT_EQ(j[i]["severities"][0], TierName(row.tier));
    EXPECT_EQ(j[i]["doc"], row.doc);
    EXPECT_EQ(j[i]["severities"].size(), row.also_note ? 2u : 1u);
    EXPECT_EQ(j[i].value("strategy", ""), row.strategy);
    EXPECT_EQ(j[i].value("prompt", ""), row.prompt);
  }
  EXPECT_EQ(j[0]["tier"], "critical");
  EXPECT_EQ(j[j.size() - 1]["tier"], "info");
}

}  // namespace
}  // namespace querypilot
