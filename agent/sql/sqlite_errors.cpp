#include "agent/sql/sqlite_errors.h"

#include "agent/base/text.h"

namespace querypilot {

ErrorKind ClassifySqliteError(std::string_view m) {
  if (text::Contains(m, "no such table:")) return ErrorKind::kTableNotFound;
  if (text::Contains(m, "no such column:")) return ErrorKind::kColumnNotFound;
  if (text::Contains(m, "ambiguous column name:")) return ErrorKind::kAmbiguousColumn;
  if (text::Contains(m, "misuse of aggregate") || text::Contains(m, "aggregate functions are not allowed") ||
      text::Contains(m, "GROUP BY clause is required before HAVING") ||
      text::Contains(m, "HAVING clause on a non-aggregate query") ||
      text::Contains(m, "misuse of window function") || text::Contains(m, "is not an aggregate")) {
    return ErrorKind::kAggregationError;
  }
  if (text::Contains(m, "no such function:") || text::Contains(m, "wrong number of arguments to function")) {
    return ErrorKind::kFunctionError;
  }
  if (text::Contains(m, "syntax error") || text::Contains(m, "incomplete input") ||
      text::Contains(m, "unrecognized token")) {
    return ErrorKind::kSyntaxError;
  }
  if (text::Contains(m, "datatype mismatch") || text::Contains(m, "integer overflow") ||
      text::Contains(m, "cannot store") || text::Contains(m, "JSON") || text::Contains(m, "malformed JSON")) {
    return ErrorKind::kTypeMismatch;
  }
  if (text::Contains(m, "interrupted")) return ErrorKind::kInterrupted;
  if (text::Contains(m, "not authorized") || text::Contains(m, "prohibited") || text::Contains(m, "may not be modified")) {
    return ErrorKind::kRefused;
  }
  return ErrorKind::kExecutionError;
}

}  // namespace querypilot
