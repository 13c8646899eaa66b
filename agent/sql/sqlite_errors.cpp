#include "agent/sql/sqlite_errors.h"

#include <fmt/format.h>
#include <sqlite3.h>  // the result codes only: nothing here calls SQLite

#include "agent/base/text.h"

namespace querypilot {
namespace {

// Messages of queries past SQLite's limits on nesting and size.
bool PastSqliteLimits(std::string_view m) {
  return text::Contains(m, "parser stack overflow") ||
         text::Contains(m, "Expression tree is too large") ||
         text::Contains(m, "too many terms in compound SELECT") ||
         text::Contains(m, "tables in a join") || text::Contains(m, "too many columns") ||
         text::Contains(m, "too many SQL variables") ||
         text::Contains(m, "too many arguments on function") ||
         text::Contains(m, "too many FROM clause terms") ||
         text::Contains(m, "too many levels of trigger recursion") ||
         text::Contains(m, "statement too long");
}

}  // namespace

ErrorKind ClassifySqliteError(std::string_view m) {
  if (text::Contains(m, "no such table:")) return ErrorKind::kTableNotFound;
  if (text::Contains(m, "no such column:")) return ErrorKind::kColumnNotFound;
  if (text::Contains(m, "ambiguous column name:")) return ErrorKind::kAmbiguousColumn;
  if (text::Contains(m, "misuse of aggregate") ||
      text::Contains(m, "aggregate functions are not allowed") ||
      text::Contains(m, "GROUP BY clause is required before HAVING") ||
      text::Contains(m, "HAVING clause on a non-aggregate query") ||
      text::Contains(m, "misuse of window function") || text::Contains(m, "is not an aggregate")) {
    return ErrorKind::kAggregationError;
  }
  if (text::Contains(m, "no such function:") ||
      text::Contains(m, "wrong number of arguments to function")) {
    return ErrorKind::kFunctionError;
  }
  if (text::Contains(m, "syntax error") || text::Contains(m, "incomplete input") ||
      text::Contains(m, "unrecognized token")) {
    return ErrorKind::kSyntaxError;
  }
  if (text::Contains(m, "datatype mismatch") || text::Contains(m, "integer overflow") ||
      text::Contains(m, "cannot store") || text::Contains(m, "JSON") ||
      text::Contains(m, "malformed JSON")) {
    return ErrorKind::kTypeMismatch;
  }
  if (PastSqliteLimits(m)) return ErrorKind::kTooComplex;
  if (text::Contains(m, "string or blob too big")) return ErrorKind::kValueTooBig;
  if (text::Contains(m, "interrupted")) return ErrorKind::kInterrupted;
  if (text::Contains(m, "not authorized") || text::Contains(m, "prohibited") ||
      text::Contains(m, "may not be modified")) {
    return ErrorKind::kRefused;
  }
  return ErrorKind::kExecutionError;
}

ErrorKind ClassifySqliteFailure(int code, std::string_view message) {
  switch (code & 0xff) {
    case SQLITE_CORRUPT:
      return ErrorKind::kDatabaseCorrupt;
    case SQLITE_NOTADB:
      return ErrorKind::kNotADatabase;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return ErrorKind::kDatabaseIo;
    case SQLITE_FULL:
      return ErrorKind::kDiskFull;
    case SQLITE_NOMEM:
      return ErrorKind::kOutOfMemory;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorKind::kDatabaseBusy;
    case SQLITE_TOOBIG:
      return PastSqliteLimits(message) ? ErrorKind::kTooComplex : ErrorKind::kValueTooBig;
    case SQLITE_INTERRUPT:
      return ErrorKind::kInterrupted;
    default:
      return ClassifySqliteError(message);
  }
}

Status SqliteFailure(int code, std::string_view message) {
  const ErrorKind kind = ClassifySqliteFailure(code, message);
  std::string m(message);
  switch (kind) {
    case ErrorKind::kTooComplex:
      if (text::Contains(m, "parser stack overflow") ||
          text::Contains(m, "Expression tree is too large")) {
        m += ": the query nests too deeply (parentheses, CASE or subqueries inside each other)";
      } else {
        m += ": the query is past one of SQLite's limits on its size";
      }
      break;
    case ErrorKind::kValueTooBig:
      m += ": a value would pass SQLite's length limit";
      break;
    case ErrorKind::kDatabaseCorrupt:
      m += ": the database file is damaged (PRAGMA integrity_check says where); no query can fix "
           "that";
      break;
    case ErrorKind::kNotADatabase:
      m += ": the file is not a SQLite database, or is encrypted";
      break;
    case ErrorKind::kDatabaseIo:
      m += ": the database file could not be read";
      break;
    case ErrorKind::kDiskFull:
      m += ": the disk (or the temporary folder) is full";
      break;
    case ErrorKind::kOutOfMemory:
      m += ": SQLite ran out of memory";
      break;
    case ErrorKind::kDatabaseBusy:
      m += ": another connection holds a lock on the database";
      break;
    default:
      break;
  }
  return Status(kind, std::move(m));
}

}  // namespace querypilot
