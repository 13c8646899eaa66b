#include "agent/sql/query_only.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "agent/base/sqlite.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

// No white space, no comment, ';' last: SQLite's parser applies the pragma
// before it looks at the interrupt flag (query_only.h).
constexpr const char* kQueryOnlyOn = "PRAGMA\"query_only\"=1;";
constexpr const char* kQueryOnlyOff = "PRAGMA\"query_only\"=0;";

// Prepared and finalized, never stepped: the parse applies it. SQLite's
// result code of the prepare.
int ApplyQueryOnly(sqlite3* db, const char* text) {
  int code = SQLITE_OK;
  Result<Statement> stmt = Statement::Prepare(db, text, nullptr, &code);
  return code;
}

// 1 or 0, or -1 when the connection will not say (interrupted, or an
// authorizer that denies the pragma); `*code`, when given, SQLite's code.
int ReadQueryOnly(sqlite3* db, int* code = nullptr) {
  int rc = SQLITE_OK;
  Result<Statement> stmt = Statement::Prepare(db, "PRAGMA query_only", nullptr, &rc);
  if (code) *code = rc;
  if (!stmt.ok() || !*stmt) return -1;
  rc = stmt->Step();
  if (code) *code = rc == SQLITE_ROW ? SQLITE_OK : rc;
  if (rc != SQLITE_ROW) return -1;
  return stmt->ColumnInt(0) != 0 ? 1 : 0;
}

// The connections this thread is running generated SQL on, innermost last.
std::vector<sqlite3*>& GeneratedSqlMarks() {
  thread_local std::vector<sqlite3*> marks;
  return marks;
}

// Connections whose flag a hold set and could not tell it cleared.
struct Owed {
  Mutex mu;
  std::set<sqlite3*> connections GUARDED_BY(mu);
};
Owed& OwedQueryOnly() {
  static auto* owed = new Owed();  // never destroyed: holds may end after static destructors
  return *owed;
}

}  // namespace

Status QueryOnlyHold::Take(sqlite3* db) {
  int code = SQLITE_OK;
  const int held = ReadQueryOnly(db, &code);
  if ((code & 0xff) == SQLITE_INTERRUPT) {
    // Stopped already (the host's sqlite3_interrupt): nothing runs.
    return Status(ErrorKind::kInterrupted, "interrupted");
  }
  if (held == 0) {
    ApplyQueryOnly(db, kQueryOnlyOn);
    if (ReadQueryOnly(db) == 1) {
      set_by_hold_ = true;
    } else {
      ApplyQueryOnly(db, kQueryOnlyOff);  // whatever the parse did, the flag is as it was
    }
  }
  if (held == 1 || set_by_hold_) {
    db_ = db;
    GeneratedSqlMarks().push_back(db);
    return Status::Ok();
  }
  return Status(
      ErrorKind::kRefused,
      fmt::format("QueryPilot runs generated SQL only under PRAGMA query_only, so that no code "
                  "of the schema's or the application's can write while it runs, and the "
                  "connection did not allow it ({})",
                  sqlite3_errmsg(db)));
}

QueryOnlyHold::~QueryOnlyHold() {
  if (!db_) return;
  auto& marks = GeneratedSqlMarks();
  if (auto it = std::find(marks.rbegin(), marks.rend(), db_); it != marks.rend())
    marks.erase(std::next(it).base());
  if (!set_by_hold_) return;
  const int rc = ApplyQueryOnly(db_, kQueryOnlyOff);
  const int now = ReadQueryOnly(db_);
  // An interrupted connection cannot say, but a parse that ended well
  // applied the pragma.
  if (now == 0 || (now < 0 && rc == SQLITE_OK)) return;
  Owed& owed = OwedQueryOnly();
  MutexLock lock(&owed.mu);
  owed.connections.insert(db_);
}

bool RunningGeneratedSql(sqlite3* db) noexcept {
  const auto& marks = GeneratedSqlMarks();
  return std::find(marks.begin(), marks.end(), db) != marks.end();
}

void SettleQueryOnly(sqlite3* db) {
  Owed& owed = OwedQueryOnly();
  {
    MutexLock lock(&owed.mu);
    if (!owed.connections.count(db)) return;
  }
  ApplyQueryOnly(db, kQueryOnlyOff);
  if (ReadQueryOnly(db) == 0) {
    MutexLock lock(&owed.mu);
    owed.connections.erase(db);
  }
}

}  // namespace querypilot
