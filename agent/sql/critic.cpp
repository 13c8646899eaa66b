#include "agent/sql/critic.h"

#include <string>

#include "agent/base/sqlite.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/program.h"
#include "agent/sql/query_only.h"
#include "agent/sql/rules.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

// What holds for a statement, wherever it was prepared: it writes nothing and
// is not EXPLAIN (whose rows are a program, not an answer).
Status ReadOnlyQuery(sqlite3_stmt* stmt) {
  if (!sqlite3_stmt_readonly(stmt))
    return Status(ErrorKind::kRefused, "the statement would change the database");
  if (sqlite3_stmt_isexplain(stmt) != 0) {
    return Status(
        ErrorKind::kRefused,
        "EXPLAIN is not a query; only a query (SELECT, VALUES or WITH ... SELECT) may run");
  }
  return Status::Ok();
}

// A connection of QueryPilot's own (or a test's): QueryPilot's authorizer is
// set on it while it prepares, and removed after.
Result<Statement> CheckDirect(sqlite3* db, std::string_view sql) {
  RulesJudgement judged = JudgeUnderRules(db, sql, AuthRules());
  if (!judged.status.ok()) return judged.status;
  if (Status s = ReadOnlyQuery(judged.stmt.get()); !s.ok()) return s;
  if (Status s = JudgeFunctionsOf(db, sql.substr(0, judged.statement_bytes), {}); !s.ok()) return s;
  return std::move(judged.stmt);
}

}  // namespace

std::string NoAuthorizerMessage() {
  return "this SQLite was built without the authorizer (SQLITE_OMIT_AUTHORIZATION), which "
         "QueryPilot needs to check generated SQL before running it; it runs none here";
}

Result<Statement> CheckSql(const SqlTarget& target, std::string_view sql) {
  if (!Host().authorizer) return Status(ErrorKind::kRefused, NoAuthorizerMessage());
  sqlite3* db = target.db();
  if (!db || (!target.own() && !target.check())) {
    return Status(ErrorKind::kRefused, "no connection to check the SQL for; none runs");
  }
  if (target.own()) return CheckDirect(db, sql);
  const CheckConnection::Verdict verdict = target.check()->Check(sql);
  if (!verdict.status.ok()) return verdict.status;
  // Judged a single query on the mirror: now prepared where it will run,
  // under the host's own authorizer, if any, and under PRAGMA query_only,
  // as it will step (agent/sql/query_only.h): a virtual table's xConnect or
  // xBestIndex runs as it is prepared.
  QueryOnlyHold hold;
  if (Status held = hold.Take(db, target.query_only_debt()); !held.ok()) return held;
  int code = SQLITE_OK;
  Result<Statement> stmt =
      Statement::Prepare(db, sql.substr(0, verdict.statement_bytes), nullptr, &code);
  if (!stmt.ok()) return SqliteFailure(code, stmt.status().message());
  if (!*stmt) return Status(ErrorKind::kNoSql, "the SQL held only comments or white space");
  if (Status s = ReadOnlyQuery(stmt->get()); !s.ok()) return s;
  // The functions its program calls, views (TEMP or not), CTEs and
  // subqueries included: SQLite's own, or named by the user
  // (agent/sql/program.h). PRAGMA query_only holds the database, not the
  // files a function may write.
  if (Status s = JudgeFunctionsOf(db, sql.substr(0, verdict.statement_bytes),
                                  target.check()->allowed_functions());
      !s.ok()) {
    return s;
  }
  return stmt;
}

}  // namespace querypilot
