#include "agent/sql/program.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

// Built-in functions that reach outside the database: load_extension loads
// code, sqlite_log writes to the process's error log.
bool ReachesOutside(const std::string& name) {
  return name == "load_extension" || name == "sqlite_log";
}

// The functions SQLite's own extensions register on every connection as
// ordinary (not built-in) functions: FTS3's and FTS5's auxiliary functions,
// R*Tree's and Geopoly's, and JSON's where it is still an extension (SQLite
// before 3.38). fts3_tokenizer is not among them: it can hand SQLite a
// pointer to code.
bool IsSqliteExtensionFunction(const std::string& name) {
  static const std::set<std::string> kNames = {
      // FTS3/FTS4
      "matchinfo", "offsets", "snippet", "optimize", "match",
      // FTS5
      "bm25", "highlight", "fts5", "fts5_source_id", "fts5_get_locale", "fts5_locale",
      "fts5_insttoken",
      // R*Tree and Geopoly
      "rtreenode", "rtreedepth", "rtreecheck", "geopoly_area", "geopoly_blob", "geopoly_json",
      "geopoly_svg", "geopoly_within", "geopoly_overlap", "geopoly_contains_point", "geopoly_bbox",
      "geopoly_group_bbox", "geopoly_xform", "geopoly_regular", "geopoly_ccw",
      // JSON as an extension
      "json", "json_array", "json_array_length", "json_extract", "json_insert", "json_object",
      "json_patch", "json_quote", "json_remove", "json_replace", "json_set", "json_type",
      "json_valid", "json_group_array", "json_group_object", "json_error_position", "json_pretty",
      "->", "->>"};
  return kNames.count(name) > 0;
}

// SQLite's built-in functions by name, for a SQLite that cannot say which
// of its functions are built in (PRAGMA function_list without its builtin
// column, before 3.31): the core, date, math, aggregate and window functions
// of SQLite's documentation.
bool IsBuiltInByName(const std::string& name) {
  static const std::set<std::string> kNames = {
      "abs", "changes", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if",
      "ifnull", "iif", "instr", "last_insert_rowid", "length", "like", "likelihood", "likely",
      "lower", "ltrim", "max", "min", "nullif", "octet_length", "printf", "quote", "random",
      "randomblob", "replace", "round", "rtrim", "sign", "soundex", "sqlite_compileoption_get",
      "sqlite_compileoption_used", "sqlite_offset", "sqlite_source_id", "sqlite_version", "substr",
      "substring", "total_changes", "trim", "typeof", "unhex", "unicode", "unistr", "unistr_quote",
      "unlikely", "upper", "zeroblob",
      // date and time
      "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff", "current_date",
      "current_time", "current_timestamp",
      // math
      "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh",
      "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power",
      "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
      // aggregate
      "avg", "count", "group_concat", "string_agg", "sum", "total", "median", "percentile",
      "percentile_cont", "percentile_disc",
      // window
      "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
      "first_value", "last_value", "nth_value",
      // JSON, built in since 3.38
      "jsonb", "jsonb_array", "jsonb_extract", "jsonb_insert", "jsonb_object", "jsonb_patch",
      "jsonb_remove", "jsonb_replace", "jsonb_set", "jsonb_group_array", "jsonb_group_object"};
  return kNames.count(name) > 0 || IsSqliteExtensionFunction(name);
}

// Whether `f` is SQLite's own by `defs`.
bool IsSqlites(const CalledFunction& f, const FunctionDefinitions& defs) {
  if (ReachesOutside(f.name)) return false;
  if (!defs.knows_builtin) return IsBuiltInByName(f.name);
  auto it = defs.kinds.find(f);
  if (it == defs.kinds.end()) {
    // Not listed under these arguments: judged by the name's definitions.
    bool built_in = false;
    bool other = false;
    for (const auto& [def, kinds] : defs.kinds) {
      if (def.name != f.name) continue;
      built_in |= kinds.first;
      other |= kinds.second;
    }
    return other ? IsSqliteExtensionFunction(f.name) : built_in;
  }
  const auto [built_in, other] = it->second;
  // A definition of the application's with a built-in's name and arguments
  // is the one SQLite calls.
  if (other) return IsSqliteExtensionFunction(f.name);
  return built_in;
}

}  // namespace

FunctionDefinitions ReadFunctionDefinitions(sqlite3* db) {
  FunctionDefinitions out;
  // The statement form reads the connection's own state, no database.
  // Columns: name, builtin, type, enc, narg, flags (builtin since 3.31).
  auto list = Statement::Prepare(db, "PRAGMA function_list");
  if (!list.ok() || !*list) return out;
  int builtin = -1;
  int narg = -1;
  for (int i = 0; i < list->ColumnCount(); ++i) {
    const std::string column = text::Lower(list->ColumnName(i));
    if (column == "builtin") builtin = i;
    if (column == "narg") narg = i;
  }
  int rc;
  while ((rc = list->Step()) == SQLITE_ROW) {
    CalledFunction f{text::Lower(list->ColumnText(0)),
                     narg >= 0 ? static_cast<int>(list->ColumnInt(narg)) : -1};
    auto& kinds = out.kinds[f];
    if (builtin >= 0 && list->ColumnInt(builtin) != 0) {
      kinds.first = true;
    } else {
      kinds.second = true;
    }
  }
  out.listed = rc == SQLITE_DONE;
  out.knows_builtin = out.listed && builtin >= 0 && narg >= 0;
  return out;
}

Result<std::string> ProgramOf(sqlite3* db, std::string_view sql) {
  int code = SQLITE_OK;
  Result<Statement> st = Statement::Prepare(db, "EXPLAIN " + std::string(sql), nullptr, &code);
  if (!st.ok()) return st.status();
  if (!*st) return Status(ErrorKind::kNoSql, "no statement");
  // Columns: addr, opcode, p1, p2, p3, p4, p5, comment.
  std::string program;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) {
    for (int i = 1; i <= 6; ++i) {
      program += st->ColumnIsNull(i) ? std::string("-") : st->ColumnText(i);
      program.push_back(i == 6 ? '\n' : '\t');
    }
  }
  if (rc != SQLITE_DONE) {
    return Status(ErrorKind::kExecutionError, fmt::format("the program of the query could not be "
                                                          "listed (SQLite result code {})",
                                                          rc));
  }
  return program;
}

std::set<CalledFunction> FunctionsCalled(const std::string& program) {
  std::set<CalledFunction> called;
  size_t line = 0;
  while (line < program.size()) {
    size_t end = program.find('\n', line);
    if (end == std::string::npos) end = program.size();
    std::vector<std::string_view> fields;
    std::string_view text(program.data() + line, end - line);
    for (size_t at = 0; at <= text.size();) {
      size_t tab = text.find('\t', at);
      if (tab == std::string_view::npos) tab = text.size();
      fields.push_back(text.substr(at, tab - at));
      at = tab + 1;
    }
    line = end + 1;
    if (fields.size() < 5) continue;
    // Function, PureFunc (Function0/PureFunc0 before 3.25), AggStep,
    // AggStep1, AggInverse, AggValue, AggFinal.
    const std::string_view op = fields[0];
    if (!(op.starts_with("Function") || op.starts_with("PureFunc") || op.starts_with("Agg")))
      continue;
    const std::string_view p4 = fields[4];
    const size_t open = p4.rfind('(');
    if (open == std::string_view::npos || open == 0 || !p4.ends_with(")")) continue;
    CalledFunction f{text::Lower(std::string(p4.substr(0, open))), -1};
    const std::string args(p4.substr(open + 1, p4.size() - open - 2));
    try {
      f.args = std::stoi(args);
    } catch (...) {
      f.args = -1;
    }
    called.insert(std::move(f));
  }
  return called;
}

Status JudgeCalledFunctions(sqlite3* db, const std::string& program,
                            const std::set<std::string>& allowed) {
  std::optional<FunctionDefinitions> defs;
  for (const CalledFunction& f : FunctionsCalled(program)) {
    if (allowed.count(f.name)) continue;
    if (!defs) defs = ReadFunctionDefinitions(db);
    if (IsSqlites(f, *defs)) continue;
    return Status(ErrorKind::kRefused,
                  fmt::format("the function {}() is not allowed: generated SQL may call only "
                              "SQLite's own functions, which read nothing outside the database; "
                              "name it in agent_config('allow_functions', ...) to allow it",
                              f.name));
  }
  return Status::Ok();
}

Status JudgeFunctionsOf(sqlite3* db, std::string_view sql, const std::set<std::string>& allowed) {
  Result<std::string> program = ProgramOf(db, sql);
  if (!program.ok()) {
    return Status(ErrorKind::kRefused,
                  fmt::format("the functions the query calls could not be listed (EXPLAIN: {}); "
                              "it does not run",
                              program.status().message()));
  }
  return JudgeCalledFunctions(db, *program, allowed);
}

}  // namespace querypilot
