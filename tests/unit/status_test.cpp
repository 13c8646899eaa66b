// Error kinds: every kind has its one row, and the name, the class
// predicates and the run status all read it.
#include "agent/base/status.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace querypilot {
namespace {

constexpr int kLastKind = static_cast<int>(ErrorKind::kInternal);

// Row i is kind i, from kNone to the last kind, each name unique and
// snake_case, and a name reads back as its kind.
TEST(ErrorKinds, EveryKindHasItsRow) {
  auto rows = ErrorKindRows();
  ASSERT_EQ(rows.size(), static_cast<size_t>(kLastKind) + 1);
  std::set<std::string_view> names;
  for (int k = 0; k <= kLastKind; ++k) {
    const auto kind = static_cast<ErrorKind>(k);
    SCOPED_TRACE(k);
    EXPECT_EQ(rows[k].kind, kind);
    EXPECT_EQ(&RowOf(kind), &rows[k]);
    EXPECT_EQ(ErrorKindName(kind), rows[k].name);
    EXPECT_EQ(ErrorKindFromName(rows[k].name), kind);
    if (kind == ErrorKind::kNone) {
      EXPECT_EQ(rows[k].name, "");
      EXPECT_EQ(rows[k].error_class, ErrorClass::kNone);
      continue;
    }
    EXPECT_FALSE(rows[k].name.empty());
    EXPECT_EQ(rows[k].name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"),
              std::string_view::npos);
    EXPECT_NE(rows[k].error_class, ErrorClass::kNone);
    EXPECT_NE(rows[k].run_status, RunStatus::kOk) << "an error never ends a run as ok";
    EXPECT_TRUE(names.insert(rows[k].name).second) << rows[k].name;
  }
  EXPECT_EQ(ErrorKindFromName("no_such_kind"), ErrorKind::kNone);
}

// The predicates and the run status are the row's columns, for every kind.
TEST(ErrorKinds, PredicatesAndRunStatusReadTheRow) {
  for (const ErrorKindRow& row : ErrorKindRows()) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(IsRetryableSqlError(row.kind), row.retryable);
    EXPECT_EQ(IsProviderError(row.kind), row.error_class == ErrorClass::kProvider);
    EXPECT_EQ(IsDatabaseFault(row.kind), row.error_class == ErrorClass::kDatabaseFault);
    // A database fault is never retried: no new query can fix it.
    if (IsDatabaseFault(row.kind)) {
      EXPECT_FALSE(row.retryable);
    }
    if (IsProviderError(row.kind)) {
      EXPECT_EQ(row.run_status, RunStatus::kProviderError);
    }
    if (row.kind == ErrorKind::kNone) {
      EXPECT_EQ(RunStatusFor(Status()), RunStatus::kOk);
    } else {
      EXPECT_EQ(RunStatusFor(Status(row.kind, "m")), row.run_status);
    }
  }
}

// What each class and status held before the table: pinned, so that a row
// edited by mistake shows here.
TEST(ErrorKinds, KnownKindsKeepTheirMeaning) {
  struct Case {
    ErrorKind kind;
    const char* name;
    bool retryable;
    bool provider;
    bool database_fault;
    RunStatus run_status;
  };
  const Case cases[] = {
      {ErrorKind::kColumnNotFound, "column_not_found", true, false, false, RunStatus::kFailed},
      {ErrorKind::kTimeout, "timeout", true, false, false, RunStatus::kFailed},
      {ErrorKind::kInterrupted, "interrupted", false, false, false, RunStatus::kInterrupted},
      {ErrorKind::kDatabaseBusy, "database_busy", false, false, true, RunStatus::kFailed},
      {ErrorKind::kRefused, "refused", false, false, false, RunStatus::kRefused},
      {ErrorKind::kNoSql, "no_sql", true, false, false, RunStatus::kFailed},
      {ErrorKind::kUnchangedSql, "unchanged_sql", false, false, false, RunStatus::kFailed},
      {ErrorKind::kNeedsClarification, "needs_clarification", false, false, false,
       RunStatus::kNeedsClarification},
      {ErrorKind::kProviderAuth, "provider_auth", false, true, false, RunStatus::kProviderError},
      {ErrorKind::kNotConfigured, "not_configured", false, false, false, RunStatus::kNotConfigured},
      {ErrorKind::kInvalidArgument, "invalid_argument", false, false, false, RunStatus::kInvalid},
      {ErrorKind::kInternal, "internal", false, false, false, RunStatus::kFailed},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ErrorKindName(c.kind), c.name);
    EXPECT_EQ(IsRetryableSqlError(c.kind), c.retryable);
    EXPECT_EQ(IsProviderError(c.kind), c.provider);
    EXPECT_EQ(IsDatabaseFault(c.kind), c.database_fault);
    EXPECT_EQ(RunStatusFor(Status(c.kind, "m")), c.run_status);
  }
}

// Every run status has a name that reads back as it; an unknown name is
// kFailed.
TEST(ErrorKinds, RunStatusNamesReadBack) {
  for (int s = 0; s <= static_cast<int>(RunStatus::kInvalid); ++s) {
    const auto status = static_cast<RunStatus>(s);
    EXPECT_FALSE(RunStatusName(status).empty());
    EXPECT_EQ(RunStatusFromName(RunStatusName(status)), status);
  }
  EXPECT_EQ(RunStatusName(RunStatus::kProviderError), "provider_error");
  EXPECT_EQ(RunStatusFromName("no_such_status"), RunStatus::kFailed);
}

}  // namespace
}  // namespace querypilot
