#include "agent/sql/critic.h"

#include <set>
#include <string>

#include <fmt/format.h>

#include "agent/sql/sqlite_errors.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"

namespace querypilot {
namespace {

struct AuthState {
  std::string denied;  // the first denial, for the error message
};

bool IsSchemaTable(const char* name) {
  if (!name) return false;
  std::string n = text::Lower(name);
  return n == "sqlite_master" || n == "sqlite_schema" || n == "sqlite_temp_master" ||
         n == "sqlite_temp_schema";
}

// Functions that reach outside the database, run SQL of their own, or are
// QueryPilot itself. Everything else SQLite or the host defines is allowed.
bool IsForbiddenFunction(const char* name) {
  static const std::set<std::string> kForbidden = {
      "load_extension", "readfile",  "writefile",      "edit",           "fts3_tokenizer",
      "sha3_query",     "ask_sql",   "agent_config",   "agent_feedback", "agent_prompt", "agent_explain",
      "querypilot_internal",
  };
  return name && kForbidden.count(text::Lower(name)) > 0;
}

// Table-valued functions that read the file system; the raw page readers,
// which show deleted rows that no query could see (sqlite_dbpage, and the
// recovery extension's sqlite_dbdata and sqlite_dbptr); and ask() itself.
bool IsForbiddenTable(const char* name) {
  static const std::set<std::string> kForbidden = {
      "fsdir", "zipfile", "sqlite_dbpage", "sqlite_dbdata", "sqlite_dbptr", "ask"};
  return name && kForbidden.count(text::Lower(name)) > 0;
}

int Authorize(void* user, int action, const char* a, const char* b, const char* db_name,
              const char* trigger) noexcept {
  auto* st = static_cast<AuthState*>(user);
  auto deny = [&](std::string why) {
    if (st->denied.empty()) st->denied = std::move(why);
    return SQLITE_DENY;
  };
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_READ:
      if (IsForbiddenTable(a)) return deny(fmt::format("reading {} is not allowed", a));
      return SQLITE_OK;
    case SQLITE_FUNCTION:
      if (IsForbiddenFunction(b)) return deny(fmt::format("the function {}() is not allowed", b));
      return SQLITE_OK;
    case SQLITE_UPDATE:
      // SQLite asks this, without ever running it, when it connects an
      // eponymous virtual table (pragma_table_info, json_each...). IGNORE
      // grants nothing: a real UPDATE would still leave the column unchanged,
      // and sqlite3_stmt_readonly refuses any real write anyway.
      if (IsSchemaTable(a)) return SQLITE_IGNORE;
      return deny(fmt::format("updating {} is not allowed", a ? a : "a table"));
    case SQLITE_INSERT: return deny(fmt::format("inserting into {} is not allowed", a ? a : "a table"));
    case SQLITE_DELETE: return deny(fmt::format("deleting from {} is not allowed", a ? a : "a table"));
    case SQLITE_ATTACH: return deny("ATTACH is not allowed");
    case SQLITE_DETACH: return deny("DETACH is not allowed");
    case SQLITE_PRAGMA: return deny(fmt::format("PRAGMA {} is not allowed", a ? a : ""));
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT: return deny("transaction control is not allowed");
    default: return deny("statements that change the schema or the database are not allowed");
  }
}

// Prepares `sql` with the read-only authorizer in place.
Result<Statement> PrepareGuarded(sqlite3* db, std::string_view sql, std::string* tail,
                                 AuthState* auth, int* sqlite_code = nullptr) {
  sqlite3_set_authorizer(db, Authorize, auth);
  Result<Statement> r = Statement::Prepare(db, sql, tail, sqlite_code);
  sqlite3_set_authorizer(db, nullptr, nullptr);
  return r;
}

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

}  // namespace

std::string NoAuthorizerMessage() {
  return "this SQLite was built without the authorizer (SQLITE_OMIT_AUTHORIZATION), which "
         "QueryPilot needs to check generated SQL before running it; it runs none here";
}

Result<Statement> CheckSql(sqlite3* db, std::string_view sql) {
  if (!Host().authorizer) return Status(ErrorKind::kRefused, NoAuthorizerMessage());
  AuthState auth;
  std::string tail;
  int code = SQLITE_OK;
  Result<Statement> stmt = PrepareGuarded(db, sql, &tail, &auth, &code);
  if (!auth.denied.empty()) {
    return Status(ErrorKind::kRefused, auth.denied);
  }
  if (!stmt.ok()) return SqliteFailure(code, stmt.status().message());
  if (!*stmt) return Status(ErrorKind::kNoSql, "the SQL held only comments or white space");
  if (!sqlite3_stmt_readonly(stmt->get())) {
    return Status(ErrorKind::kRefused, "the statement would change the database");
  }
  if (!OnlyWhitespaceAndComments(tail)) {
    // Look at what follows too: a hidden write is a refusal, not a format slip.
    AuthState tail_auth;
    std::string rest;
    Result<Statement> next = PrepareGuarded(db, tail, &rest, &tail_auth);
    if (!tail_auth.denied.empty()) {
      return Status(ErrorKind::kRefused, "a second statement was refused: " + tail_auth.denied);
    }
    if (next.ok() && *next && !sqlite3_stmt_readonly(next->get())) {
      return Status(ErrorKind::kRefused, "a second statement would change the database");
    }
    return Status(ErrorKind::kMultipleStatements,
                  "the reply held more than one statement; exactly one query is allowed");
  }
  return stmt;
}

}  // namespace querypilot
