#include "agent/base/status.h"

#include <array>
#include <cstddef>

namespace querypilot {
namespace {

// One row per error kind, in the order of enum ErrorKind.
constexpr auto ErrorKindTable() {
  using C = ErrorClass;
  using R = RunStatus;
  // clang-format off
  return std::array{
    //            kind                              name                     class             retryable run status
    ErrorKindRow{ErrorKind::kNone,                 "",                      C::kNone,          false, R::kOk},
    ErrorKindRow{ErrorKind::kSyntaxError,          "syntax_error",          C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kTableNotFound,        "table_not_found",       C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kColumnNotFound,       "column_not_found",      C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kAmbiguousColumn,      "ambiguous_column",      C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kAggregationError,     "aggregation_error",     C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kTypeMismatch,         "type_mismatch",         C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kFunctionError,        "function_error",        C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kExecutionError,       "execution_error",       C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kTooComplex,           "too_complex",           C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kValueTooBig,          "value_too_big",         C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kTimeout,              "timeout",               C::kQuery,         true,  R::kFailed},
    ErrorKindRow{ErrorKind::kInterrupted,          "interrupted",           C::kQuery,         false, R::kInterrupted},
    ErrorKindRow{ErrorKind::kDatabaseCorrupt,      "database_corrupt",      C::kDatabaseFault, false, R::kFailed},
    ErrorKindRow{ErrorKind::kNotADatabase,         "not_a_database",        C::kDatabaseFault, false, R::kFailed},
    ErrorKindRow{ErrorKind::kDatabaseIo,           "database_io",           C::kDatabaseFault, false, R::kFailed},
    ErrorKindRow{ErrorKind::kDiskFull,             "disk_full",             C::kDatabaseFault, false, R::kFailed},
    ErrorKindRow{ErrorKind::kOutOfMemory,          "out_of_memory",         C::kDatabaseFault, false, R::kFailed},
    ErrorKindRow{ErrorKind::kDatabaseBusy,         "database_busy",         C::kDatabaseFault, false, R::kFailed},
    ErrorKindRow{ErrorKind::kRefused,              "refused",               C::kRejected,      false, R::kRefused},
    ErrorKindRow{ErrorKind::kMultipleStatements,   "multiple_statements",   C::kRejected,      true,  R::kFailed},
    ErrorKindRow{ErrorKind::kNoSql,                "no_sql",                C::kRejected,      true,  R::kFailed},
    ErrorKindRow{ErrorKind::kUnchangedSql,         "unchanged_sql",         C::kRejected,      false, R::kFailed},
    ErrorKindRow{ErrorKind::kNeedsClarification,   "needs_clarification",   C::kRejected,      false, R::kNeedsClarification},
    ErrorKindRow{ErrorKind::kProviderAuth,         "provider_auth",         C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kProviderRateLimit,    "provider_rate_limit",   C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kProviderUnavailable,  "provider_unavailable",  C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kProviderTimeout,      "provider_timeout",      C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kProviderConnection,   "provider_connection",   C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kProviderRequest,      "provider_request",      C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kProviderBadResponse,  "provider_bad_response", C::kProvider,      false, R::kProviderError},
    ErrorKindRow{ErrorKind::kNotConfigured,        "not_configured",        C::kUsage,         false, R::kNotConfigured},
    ErrorKindRow{ErrorKind::kInvalidArgument,      "invalid_argument",      C::kUsage,         false, R::kInvalid},
    ErrorKindRow{ErrorKind::kInternal,             "internal",              C::kInternal,      false, R::kFailed},
  };
  // clang-format on
}
constexpr auto kErrorKindRows = ErrorKindTable();

// Row i is kind i, and the last row is the last kind: a kind added to the
// enum without its row, or a row out of place, stops the build here.
constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kErrorKindRows.size(); ++i) {
    if (static_cast<size_t>(kErrorKindRows[i].kind) != i) return false;
  }
  return kErrorKindRows.back().kind == ErrorKind::kInternal;
}
static_assert(RowsInEnumOrder(), "every ErrorKind has one row in kErrorKindRows, in enum order");

// The names of RunStatus, in its order.
constexpr std::array<std::string_view, static_cast<size_t>(RunStatus::kInvalid) + 1>
    kRunStatusNames = {"ok",
                       "failed",
                       "refused",
                       "provider_error",
                       "not_configured",
                       "interrupted",
                       "needs_clarification",
                       "pending",
                       "ready",
                       "lost",
                       "invalid"};

}  // namespace

std::span<const ErrorKindRow> ErrorKindRows() {
  return kErrorKindRows;
}

const ErrorKindRow& RowOf(ErrorKind kind) {
  const auto i = static_cast<size_t>(kind);
  // A value outside the enum (a cast from an integer) reads as kInternal.
  return i < kErrorKindRows.size() ? kErrorKindRows[i] : kErrorKindRows.back();
}

std::string_view ErrorKindName(ErrorKind kind) {
  return RowOf(kind).name;
}

ErrorKind ErrorKindFromName(std::string_view name) {
  if (name.empty()) return ErrorKind::kNone;
  for (const ErrorKindRow& row : kErrorKindRows) {
    if (row.name == name) return row.kind;
  }
  return ErrorKind::kNone;
}

bool IsRetryableSqlError(ErrorKind kind) {
  return RowOf(kind).retryable;
}

bool IsProviderError(ErrorKind kind) {
  return RowOf(kind).error_class == ErrorClass::kProvider;
}

bool IsDatabaseFault(ErrorKind kind) {
  return RowOf(kind).error_class == ErrorClass::kDatabaseFault;
}

std::string_view RunStatusName(RunStatus status) {
  const auto i = static_cast<size_t>(status);
  return i < kRunStatusNames.size() ? kRunStatusNames[i] : "failed";
}

RunStatus RunStatusFromName(std::string_view name) {
  for (size_t s = 0; s < kRunStatusNames.size(); ++s) {
    if (kRunStatusNames[s] == name) return static_cast<RunStatus>(s);
  }
  return RunStatus::kFailed;
}

RunStatus RunStatusFor(const Status& error) {
  return RowOf(error.kind()).run_status;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorKindName(kind_)) + ": " + message_;
}

}  // namespace querypilot
