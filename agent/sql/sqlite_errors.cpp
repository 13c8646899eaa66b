#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

ErrorKind ClassifySqliteError(std::string_view m) {
  if (Contains(m, "no such table:")) return ErrorKind::kTableNotFound;
  if (Contains(m, "no such column:")) return ErrorKind::kColumnNotFound;
  if (Contains(m, "ambiguous column name:")) return ErrorKind::kAmbiguousColumn;
  if (Contains(m, "misuse of aggregate") || Contains(m, "aggregate functions are not allowed") ||
      Contains(m, "GROUP BY clause is required before HAVING") ||
      Contains(m, "HAVING clause on a non-aggregate query") ||
      Contains(m, "misuse of window function") || Contains(m, "is not an aggregate")) {
    return ErrorKind::kAggregationError;
  }
  if (Contains(m, "no such function:") || Contains(m, "wrong number of arguments to function")) {
    return ErrorKind::kFunctionError;
  }
  if (Contains(m, "syntax error") || Contains(m, "incomplete input") ||
      Contains(m, "unrecognized token")) {
    return ErrorKind::kSyntaxError;
  }
  if (Contains(m, "datatype mismatch") || Contains(m, "integer overflow") ||
      Contains(m, "cannot store") || Contains(m, "JSON") || Contains(m, "malformed JSON")) {
    return ErrorKind::kTypeMismatch;
  }
  if (Contains(m, "interrupted")) return ErrorKind::kInterrupted;
  if (Contains(m, "not authorized") || Contains(m, "prohibited") || Contains(m, "may not be modified")) {
    return ErrorKind::kRefused;
  }
  return ErrorKind::kExecutionError;
}

}  // namespace querypilot
