#include "agent/sql/critic.h"

#include <string>

#include "agent/base/sqlite.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

bool OnlyWhitespaceAndComments(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ';') {
      ++i;
    } else if (s.substr(i, 2) == "--") {
      size_t e = s.find('\n', i);
      i = e == std::string_view::npos ? s.size() : e + 1;
    } else if (s.substr(i, 2) == "/*") {
      size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? s.size() : e + 2;
    } else {
      return false;
    }
  }
  return true;
}

// What holds for a statement, wherever it was prepared: it writes nothing and
// is not EXPLAIN (whose rows are a program, not an answer).
Status ReadOnlyQuery(sqlite3_stmt* stmt) {
  if (!sqlite3_stmt_readonly(stmt)) return Status(ErrorKind::kRefused, "the statement would change the database");
  if (sqlite3_stmt_isexplain(stmt) != 0) {
    return Status(ErrorKind::kRefused, "EXPLAIN is not a query; only a query (SELECT, VALUES or WITH ... SELECT) may run");
  }
  return Status::Ok();
}

// A connection of QueryPilot's own (or a test's): QueryPilot's authorizer is
// set on it while it prepares, and removed after.
Result<Statement> CheckDirect(sqlite3* db, std::string_view sql, bool* calls_outside) {
  AuthRules rules;
  AuthVerdict auth;
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = PrepareUnderRules(db, sql, rules, &auth, &raw, &tail);
  Statement stmt(raw);
  if (!auth.denied.empty()) return Status(ErrorKind::kRefused, auth.denied);
  if (rc != SQLITE_OK) return SqliteFailure(sqlite3_extended_errcode(db), sqlite3_errmsg(db));
  if (!stmt) return Status(ErrorKind::kNoSql, "the SQL held only comments or white space");
  if (Status s = ReadOnlyQuery(stmt.get()); !s.ok()) return s;
  if (auth.first_action != SQLITE_SELECT) {
    return Status(ErrorKind::kRefused, "only a query (SELECT, VALUES or WITH ... SELECT) may run");
  }
  const std::string_view rest = tail ? sql.substr(static_cast<size_t>(tail - sql.data())) : std::string_view();
  if (!OnlyWhitespaceAndComments(rest)) {
    // Look at what follows too: a hidden write is a refusal, not a format slip.
    AuthVerdict next_auth;
    sqlite3_stmt* next_raw = nullptr;
    PrepareUnderRules(db, rest, rules, &next_auth, &next_raw, nullptr);
    Statement next(next_raw);
    if (!next_auth.denied.empty()) {
      return Status(ErrorKind::kRefused, "a second statement was refused: " + next_auth.denied);
    }
    if (next && !sqlite3_stmt_readonly(next.get())) {
      return Status(ErrorKind::kRefused, "a second statement would change the database");
    }
    return Status(ErrorKind::kMultipleStatements,
                  "the reply held more than one statement; exactly one query is allowed");
  }
  if (calls_outside) *calls_outside = auth.calls_outside;
  return stmt;
}

}  // namespace

std::string NoAuthorizerMessage() {
  return "this SQLite was built without the authorizer (SQLITE_OMIT_AUTHORIZATION), which "
         "QueryPilot needs to check generated SQL before running it; it runs none here";
}

Result<Statement> CheckSql(sqlite3* db, std::string_view sql, bool* calls_outside) {
  if (!Host().authorizer) return Status(ErrorKind::kRefused, NoAuthorizerMessage());
  if (calls_outside) *calls_outside = false;
  std::optional<CheckConnection::Verdict> verdict = CheckOnMirror(db, sql);
  if (!verdict) return CheckDirect(db, sql, calls_outside);
  if (!verdict->status.ok()) return verdict->status;
  // Judged a single query on the mirror: now prepared where it will run,
  // under the host's own authorizer, if any.
  int code = SQLITE_OK;
  Result<Statement> stmt = Statement::Prepare(db, sql.substr(0, verdict->statement_bytes), nullptr, &code);
  if (!stmt.ok()) return SqliteFailure(code, stmt.status().message());
  if (!*stmt) return Status(ErrorKind::kNoSql, "the SQL held only comments or white space");
  if (Status s = ReadOnlyQuery(stmt->get()); !s.ok()) return s;
  if (calls_outside) *calls_outside = verdict->calls_outside;
  return stmt;
}

}  // namespace querypilot
