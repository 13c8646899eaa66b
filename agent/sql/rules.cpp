#include "agent/sql/rules.h"

#include <fmt/format.h>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

bool IsSchemaTableName(const char* name) {
  if (!name) return false;
  std::string n = text::Lower(name);
  return n == "sqlite_master" || n == "sqlite_schema" || n == "sqlite_temp_master" ||
         n == "sqlite_temp_schema";
}

// Functions that reach outside the database (files, extensions, the
// process) or run SQL of their own. Everything else SQLite or the host
// defines is allowed, QueryPilot's own excepted (AuthRules::own_functions).
bool IsOutsideFunction(const std::string& lower) {
  static const std::set<std::string> kOutside = {"load_extension", "readfile",       "writefile",
                                                 "edit",           "fts3_tokenizer", "sha3_query"};
  return kOutside.count(lower) > 0;
}

// Eponymous tables that read the file system, or the raw pages (deleted rows
// no query could see: sqlite_dbpage, the recovery extension's sqlite_dbdata
// and sqlite_dbptr), or other statements' SQL (sqlite_stmt).
bool IsOutsideTable(const std::string& lower) {
  static const std::set<std::string> kOutside = {"fsdir",         "zipfile",      "sqlite_dbpage",
                                                 "sqlite_dbdata", "sqlite_dbptr", "sqlite_stmt"};
  return kOutside.count(lower) > 0;
}

// The table-valued pragmas whose only argument names a table, an index or a
// schema: they read the connection's schema and settings and can change
// nothing. Every other pragma_* table is refused: PRAGMA optimize writes
// sqlite_stat1, and a pragma that sets a value sets it as it runs.
bool IsReadingPragmaTable(const std::string& lower) {
  static const std::set<std::string> kReading = {
      "pragma_table_info",       "pragma_table_xinfo",   "pragma_table_list",
      "pragma_index_list",       "pragma_index_info",    "pragma_index_xinfo",
      "pragma_foreign_key_list", "pragma_database_list", "pragma_collation_list",
      "pragma_function_list",    "pragma_module_list",   "pragma_pragma_list",
      "pragma_compile_options"};
  return kReading.count(lower) > 0;
}

// What a statement that changes the schema does, for its denial: "dropping
// the table" for SQLITE_DROP_TABLE; null for any other action.
const char* SchemaChangeName(int action) {
  switch (action) {
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_TABLE:
      return "creating the table";
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TEMP_INDEX:
      return "creating the index";
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TEMP_VIEW:
      return "creating the view";
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER:
      return "creating the trigger";
    case SQLITE_CREATE_VTABLE:
      return "creating the virtual table";
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_TABLE:
      return "dropping the table";
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX:
      return "dropping the index";
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TEMP_VIEW:
      return "dropping the view";
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER:
      return "dropping the trigger";
    case SQLITE_DROP_VTABLE:
      return "dropping the virtual table";
    case SQLITE_ALTER_TABLE:
      return "altering the table";
    default:
      return nullptr;
  }
}

constexpr std::string_view kOnlyReads = "the model's SQL may only read";

struct AuthContext {
  const AuthRules* rules;
  AuthVerdict* verdict;
  // The first denial is a write to the schema table (sqlite_master), which
  // SQLite asks about before the statement's own action (DROP TABLE loans
  // deletes from sqlite_master first): the action that follows names the
  // statement and its object in its place.
  bool schema_write_first = false;
};

int AuthorizeUnderRules(void* user, int action, const char* a, const char* b, const char* db_name,
                        const char*) noexcept {
  try {
    auto* ctx = static_cast<AuthContext*>(user);
    const AuthRules& rules = *ctx->rules;
    AuthVerdict& v = *ctx->verdict;
    if (v.first_action < 0) v.first_action = action;
    auto deny = [&](std::string why) {
      if (v.denied.empty()) v.denied = std::move(why);
      return SQLITE_DENY;
    };
    switch (action) {
      case SQLITE_SELECT:
      case SQLITE_RECURSIVE:
        return SQLITE_OK;
      case SQLITE_READ: {
        const std::string table = text::Lower(a ? a : "");
        std::pair<std::string, std::string> key{text::Lower(db_name ? db_name : ""), table};
        if (db_name == nullptr) {
          // SQLite names no database where a statement reads no column of a
          // table (count(*)): the table a bare name reads, if any.
          if (auto it = rules.table_databases.find(table); it != rules.table_databases.end()) {
            key.first = it->second.front();
          }
        }
        if (!key.first.empty() && rules.tables.count(key)) {
          // A table, view or virtual table of one of the host's databases.
          if (rules.own_tables.count(key)) {
            return deny(fmt::format("{} is QueryPilot's own and out of generated SQL's reach", a));
          }
          if (auto it = rules.virtual_tables.find(key); it != rules.virtual_tables.end()) {
            if (IsOutsideTable(it->second))
              return deny(fmt::format("reading {} is not allowed", a));
          }
          return SQLITE_OK;
        }
        if (rules.tables.empty() && db_name != nullptr && !rules.known_modules.count(table) &&
            table.rfind("pragma_", 0) != 0 && !IsOutsideTable(table) &&
            !rules.own_modules.count(table)) {
          return SQLITE_OK;  // a connection of QueryPilot's own: its tables are not listed
        }
        // An eponymous virtual table: a module used by name.
        if (IsOutsideTable(table)) return deny(fmt::format("reading {} is not allowed", a));
        if (rules.own_modules.count(table)) {
          return deny(fmt::format("{} is QueryPilot's own and out of generated SQL's reach", a));
        }
        if (table.rfind("pragma_", 0) == 0) {
          if (!IsReadingPragmaTable(table)) {
            return deny(
                fmt::format("the table-valued pragma {} is not allowed: only those that read "
                            "the schema (pragma_table_info, pragma_index_list, ...) are",
                            a));
          }
          return SQLITE_OK;
        }
        // Any other table-valued function: its code steps under PRAGMA
        // query_only, as every statement QueryPilot runs for a model
        // (agent/sql/query_only.h).
        return SQLITE_OK;
      }
      case SQLITE_FUNCTION: {
        const std::string name = text::Lower(b ? b : "");
        if (IsOutsideFunction(name))
          return deny(fmt::format("the function {}() is not allowed", b));
        if (rules.own_functions.count(name)) {
          return deny(fmt::format(
              "the function {}() is QueryPilot's own and out of generated SQL's reach", b));
        }
        return SQLITE_OK;
      }
      case SQLITE_UPDATE:
        // SQLite asks this, without ever running it, when it connects an
        // eponymous virtual table (pragma_table_info, json_each...). IGNORE
        // grants nothing: a real UPDATE would leave the column unchanged, and
        // sqlite3_stmt_readonly refuses any real write anyway.
        if (IsSchemaTableName(a)) return SQLITE_IGNORE;
        return deny(fmt::format("updating {} is not allowed", a ? a : "a table"));
      case SQLITE_INSERT:
      case SQLITE_DELETE:
        if (IsSchemaTableName(a) && v.denied.empty()) {
          // Denied now, named by the action SQLite asks next (which this
          // OK lets it ask; the verdict already refuses the statement).
          deny(fmt::format("{} {} is not allowed: {}",
                           action == SQLITE_INSERT ? "inserting into" : "deleting from", a,
                           kOnlyReads));
          ctx->schema_write_first = true;
          return SQLITE_OK;
        }
        return deny(fmt::format("{} {} is not allowed",
                                action == SQLITE_INSERT ? "inserting into" : "deleting from",
                                a ? a : "a table"));
      case SQLITE_ATTACH:
        return deny("ATTACH is not allowed");
      case SQLITE_DETACH:
        return deny("DETACH is not allowed");
      case SQLITE_PRAGMA:
        return deny(fmt::format("PRAGMA {} is not allowed", a ? a : ""));
      case SQLITE_TRANSACTION:
      case SQLITE_SAVEPOINT:
        return deny("transaction control is not allowed");
      default:
        if (const char* change = SchemaChangeName(action)) {
          // ALTER TABLE names the database first, then the table.
          const char* object = action == SQLITE_ALTER_TABLE ? b : a;
          std::string why =
              fmt::format("{} {} is not allowed: {}", change, object ? object : "", kOnlyReads);
          if (ctx->schema_write_first) {
            ctx->schema_write_first = false;
            v.denied = std::move(why);
            return SQLITE_DENY;
          }
          return deny(std::move(why));
        }
        return deny(
            fmt::format("statements that change the database are not allowed: {}", kOnlyReads));
    }
  } catch (...) {
    return SQLITE_DENY;
  }
}

}  // namespace

int PrepareUnderRules(sqlite3* db, std::string_view sql, const AuthRules& rules,
                      AuthVerdict* verdict, sqlite3_stmt** stmt, const char** tail) {
  AuthContext ctx{&rules, verdict};
  sqlite3_set_authorizer(db, AuthorizeUnderRules, &ctx);
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), stmt, tail);
  sqlite3_set_authorizer(db, nullptr, nullptr);
  return rc;
}

RulesJudgement JudgeUnderRules(sqlite3* db, std::string_view sql, const AuthRules& rules) {
  RulesJudgement out;
  AuthVerdict auth;
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  out.rc = PrepareUnderRules(db, sql, rules, &auth, &raw, &tail);
  out.stmt = Statement(raw);
  if (!auth.denied.empty()) {
    out.status = Status(ErrorKind::kRefused, auth.denied);
    return out;
  }
  if (out.rc != SQLITE_OK && auth.first_action >= 0 && auth.first_action != SQLITE_SELECT) {
    out.status =
        Status(ErrorKind::kRefused, "only a query (SELECT, VALUES or WITH ... SELECT) may run");
    return out;
  }
  if (out.rc != SQLITE_OK) {
    out.message = sqlite3_errmsg(db);
    out.status = SqliteFailure(sqlite3_extended_errcode(db), out.message);
    return out;
  }
  if (!out.stmt) {
    out.status = Status(ErrorKind::kNoSql, "the SQL held only comments or white space");
    return out;
  }
  if (auth.first_action != SQLITE_SELECT) {
    out.status =
        Status(ErrorKind::kRefused, "only a query (SELECT, VALUES or WITH ... SELECT) may run");
    return out;
  }
  out.statement_bytes = static_cast<size_t>(tail - sql.data());
  std::string_view rest = sql.substr(out.statement_bytes);
  // Anything but comments, white space and semicolons after it is a second
  // statement: judged too, so that a hidden write is called a refusal.
  for (;;) {
    AuthVerdict next_auth;
    sqlite3_stmt* next_raw = nullptr;
    const char* next_tail = nullptr;
    const int next_rc = PrepareUnderRules(db, rest, rules, &next_auth, &next_raw, &next_tail);
    Statement next(next_raw);
    if (!next_auth.denied.empty()) {
      out.status =
          Status(ErrorKind::kRefused, "a second statement was refused: " + next_auth.denied);
      return out;
    }
    if (next || next_rc != SQLITE_OK) {
      out.status = Status(ErrorKind::kMultipleStatements,
                          "the reply held more than one statement; exactly one query is allowed");
      return out;
    }
    // Nothing prepared: only semicolons, comments and white space so far.
    if (!next_tail || next_tail == rest.data()) break;
    rest = rest.substr(static_cast<size_t>(next_tail - rest.data()));
    if (rest.empty()) break;
  }
  return out;
}

}  // namespace querypilot
