#include "agent/base/status.h"

namespace querypilot {

std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone:
      return "";
    case ErrorKind::kSyntaxError:
      return "syntax_error";
    case ErrorKind::kTableNotFound:
      return "table_not_found";
    case ErrorKind::kColumnNotFound:
      return "column_not_found";
    case ErrorKind::kAmbiguousColumn:
      return "ambiguous_column";
    case ErrorKind::kAggregationError:
      return "aggregation_error";
    case ErrorKind::kTypeMismatch:
      return "type_mismatch";
    case ErrorKind::kFunctionError:
      return "function_error";
    case ErrorKind::kExecutionError:
      return "execution_error";
    case ErrorKind::kTooComplex:
      return "too_complex";
    case ErrorKind::kValueTooBig:
      return "value_too_big";
    case ErrorKind::kDatabaseCorrupt:
      return "database_corrupt";
    case ErrorKind::kNotADatabase:
      return "not_a_database";
    case ErrorKind::kDatabaseIo:
      return "database_io";
    case ErrorKind::kDiskFull:
      return "disk_full";
    case ErrorKind::kOutOfMemory:
      return "out_of_memory";
    case ErrorKind::kDatabaseBusy:
      return "database_busy";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kInterrupted:
      return "interrupted";
    case ErrorKind::kRefused:
      return "refused";
    case ErrorKind::kMultipleStatements:
      return "multiple_statements";
    case ErrorKind::kNoSql:
      return "no_sql";
    case ErrorKind::kUnchangedSql:
      return "unchanged_sql";
    case ErrorKind::kProviderAuth:
      return "provider_auth";
    case ErrorKind::kProviderRateLimit:
      return "provider_rate_limit";
    case ErrorKind::kProviderUnavailable:
      return "provider_unavailable";
    case ErrorKind::kProviderTimeout:
      return "provider_timeout";
    case ErrorKind::kProviderConnection:
      return "provider_connection";
    case ErrorKind::kProviderRequest:
      return "provider_request";
    case ErrorKind::kProviderBadResponse:
      return "provider_bad_response";
    case ErrorKind::kNotConfigured:
      return "not_configured";
    case ErrorKind::kInvalidArgument:
      return "invalid_argument";
    case ErrorKind::kInternal:
      return "internal";
    case ErrorKind::kNeedsClarification:
      return "needs_clarification";
  }
  return "unknown";
}

ErrorKind ErrorKindFromName(std::string_view name) {
  // kInternal is the last kind.
  for (int k = 1; k <= static_cast<int>(ErrorKind::kInternal); ++k) {
    if (ErrorKindName(static_cast<ErrorKind>(k)) == name) return static_cast<ErrorKind>(k);
  }
  return ErrorKind::kNone;
}

bool IsRetryableSqlError(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSyntaxError:
    case ErrorKind::kTableNotFound:
    case ErrorKind::kColumnNotFound:
    case ErrorKind::kAmbiguousColumn:
    case ErrorKind::kAggregationError:
    case ErrorKind::kTypeMismatch:
    case ErrorKind::kFunctionError:
    case ErrorKind::kExecutionError:
    case ErrorKind::kTooComplex:
    case ErrorKind::kValueTooBig:
    case ErrorKind::kTimeout:
    case ErrorKind::kMultipleStatements:
    case ErrorKind::kNoSql:
      return true;
    default:
      return false;
  }
}

bool IsProviderError(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kProviderAuth:
    case ErrorKind::kProviderRateLimit:
    case ErrorKind::kProviderUnavailable:
    case ErrorKind::kProviderTimeout:
    case ErrorKind::kProviderConnection:
    case ErrorKind::kProviderRequest:
    case ErrorKind::kProviderBadResponse:
      return true;
    default:
      return false;
  }
}

bool IsDatabaseFault(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kDatabaseCorrupt:
    case ErrorKind::kNotADatabase:
    case ErrorKind::kDatabaseIo:
    case ErrorKind::kDiskFull:
    case ErrorKind::kOutOfMemory:
    case ErrorKind::kDatabaseBusy:
      return true;
    default:
      return false;
  }
}

std::string_view RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kRefused:
      return "refused";
    case RunStatus::kProviderError:
      return "provider_error";
    case RunStatus::kNotConfigured:
      return "not_configured";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kNeedsClarification:
      return "needs_clarification";
    case RunStatus::kInvalid:
      return "invalid";
  }
  return "failed";
}

RunStatus RunStatusFromName(std::string_view name) {
  for (int s = 0; s <= static_cast<int>(RunStatus::kInvalid); ++s) {
    if (RunStatusName(static_cast<RunStatus>(s)) == name) return static_cast<RunStatus>(s);
  }
  return RunStatus::kFailed;
}

RunStatus RunStatusFor(const Status& error) {
  if (error.ok()) return RunStatus::kOk;
  switch (error.kind()) {
    case ErrorKind::kRefused:
      return RunStatus::kRefused;
    case ErrorKind::kNotConfigured:
      return RunStatus::kNotConfigured;
    case ErrorKind::kInterrupted:
      return RunStatus::kInterrupted;
    case ErrorKind::kNeedsClarification:
      return RunStatus::kNeedsClarification;
    case ErrorKind::kInvalidArgument:
      return RunStatus::kInvalid;
    default:
      return IsProviderError(error.kind()) ? RunStatus::kProviderError : RunStatus::kFailed;
  }
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorKindName(kind_)) + ": " + message_;
}

}  // namespace querypilot
