#include "agent/quality/analyse.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "agent/base/text.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

// The text after "prefix" up to the end (or a trailing " in ..." clause).
std::string After(std::string_view message, std::string_view prefix) {
  size_t p = message.find(prefix);
  if (p == std::string_view::npos) return "";
  return text::Trim(message.substr(p + prefix.size()));
}

// Names as the prompt writes them (bare, or double-quoted where SQL needs it),
// so that a name copied from a hint runs.
std::string ColumnList(const TableInfo& t) {
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(PromptIdentifier(c.name));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string Quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const auto& n : names) q.push_back(PromptIdentifier(n));
  return fmt::format("{}", fmt::join(q, " or "));
}

std::string TableHint(std::string_view message, const Schema& schema) {
  std::string missing = MissingName(message);
  std::vector<std::string> names;
  for (const auto& t : schema.tables) names.push_back(t.name);
  std::vector<std::string> close = ClosestNames(missing, names, 3);
  std::string hint;
  if (!close.empty()) hint = fmt::format("did you mean {}? ", Quoted(close));
  if (names.size() <= 40) {
    std::vector<std::string> shown;
    for (const auto& n : names) shown.push_back(PromptIdentifier(n));
    hint += fmt::format("The tables are: {}.", fmt::join(shown, ", "));
  }
  return text::Trim(hint);
}

std::string ColumnHint(std::string_view message, std::string_view sql, const Schema& schema) {
  std::string missing = After(message, "no such column:");
  std::string qualifier;
  if (size_t dot = missing.rfind('.'); dot != std::string::npos) {
    qualifier = missing.substr(0, dot);
    missing = missing.substr(dot + 1);
  }
  QueryTables q = FindQueryTables(sql, schema);
  std::vector<const TableInfo*> scope = q.tables;
  std::string hint;
  if (!qualifier.empty()) {
    auto it = q.by_alias.find(text::Lower(qualifier));
    if (it != q.by_alias.end()) {
      scope = {it->second};
      if (!text::EqualsIgnoreCase(qualifier, it->second->name)) {
        hint += fmt::format("{} is {}; ", qualifier, PromptIdentifier(it->second->name));
      }
    } else {
      hint += fmt::format("'{}' is not a table or alias in the query; ", qualifier);
    }
  }
  std::vector<std::string> candidates;
  for (const TableInfo* t : scope) {
    hint += fmt::format("{} has columns {}; ", PromptIdentifier(t->name), ColumnList(*t));
    for (const auto& c : t->columns) candidates.push_back(c.name);
  }
  std::vector<std::string> close = ClosestNames(missing, candidates, 3);
  if (!close.empty()) hint += fmt::format("did you mean {}? ", Quoted(close));
  // The column may live in a table the query does not join.
  std::vector<std::string> owners;
  for (const auto& t : schema.tables) {
    if (std::find(scope.begin(), scope.end(), &t) != scope.end()) continue;
    if (t.FindColumn(missing)) owners.push_back(PromptIdentifier(t.name));
  }
  if (!owners.empty()) {
    hint += fmt::format("'{}' is a column of {}, which would need a join. ", missing,
                        fmt::join(owners, ", "));
  }
  return text::Trim(hint);
}

std::string AmbiguousHint(std::string_view message, std::string_view sql, const Schema& schema) {
  std::string column = After(message, "ambiguous column name:");
  QueryTables q = FindQueryTables(sql, schema);
  std::vector<std::string> owners;
  for (const TableInfo* t : q.tables) {
    if (t->FindColumn(column)) owners.push_back(PromptIdentifier(t->name));
  }
  if (owners.size() < 2) return fmt::format("qualify '{}' with its table name or alias", column);
  std::vector<std::string> qualified;
  for (const auto& o : owners) qualified.push_back(o + "." + PromptIdentifier(column));
  return fmt::format("'{}' is a column of {}; qualify it as {}", column, fmt::join(owners, " and "),
                     fmt::join(qualified, " or "));
}

// Functions other databases have and SQLite does not, with SQLite's way.
std::string DialectHint(std::string_view message) {
  static const std::pair<const char*, const char*> kFunctions[] = {
      {"year", "strftime('%Y', column)"},
      {"month", "strftime('%m', column)"},
      {"day", "strftime('%d', column)"},
      {"now", "datetime('now')"},
      {"curdate", "date('now')"},
      {"current_date", "date('now')"},
      {"getdate", "datetime('now')"},
      {"datediff", "julianday(a) - julianday(b)"},
      {"dateadd", "date(column, '+N days')"},
      {"date_add", "date(column, '+N days')"},
      {"date_sub", "date(column, '-N days')"},
      {"date_trunc", "strftime('%Y-%m-01', column) for months"},
      {"extract", "strftime('%Y', column)"},
      {"to_char", "strftime(format, column)"},
      {"concat", "the || operator"},
      {"len", "length(column)"},
      {"isnull", "ifnull(a, b) or coalesce(a, b)"},
      {"nvl", "ifnull(a, b) or coalesce(a, b)"},
      {"ilike", "LIKE (case-insensitive for ASCII in SQLite)"},
      {"top", "LIMIT n at the end of the query"},
      {"string_agg", "group_concat(column, separator)"},
      {"listagg", "group_concat(column, separator)"},
      {"stddev", "sqrt(avg(x*x) - avg(x)*avg(x))"},
      {"median", "an ORDER BY ... LIMIT 1 OFFSET (count-1)/2 subquery"},
  };
  std::string name = text::Lower(After(message, "no such function:"));
  if (name.empty()) {
    // near "TOP": syntax error
    size_t p = message.find("near \"");
    if (p != std::string_view::npos) {
      size_t e = message.find('"', p + 6);
      if (e != std::string_view::npos) name = text::Lower(message.substr(p + 6, e - p - 6));
    }
  }
  for (const auto& [fn, instead] : kFunctions) {
    if (name == fn) {
      return fmt::format("SQLite has no {}; use {}", text::Lower(fn) == "top" ? "TOP" : name + "()",
                         instead);
    }
  }
  return "";
}

}  // namespace

std::string MissingName(std::string_view message) {
  for (std::string_view prefix : {"no such table:", "no such column:", "ambiguous column name:"}) {
    std::string name = After(message, prefix);
    if (name.empty()) continue;
    if (size_t dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
    return name;
  }
  return "";
}

std::string ComputeHint(ErrorKind kind, std::string_view message, std::string_view sql,
                        const Schema& schema) {
  switch (kind) {
    case ErrorKind::kTableNotFound:
      return TableHint(message, schema);
    case ErrorKind::kColumnNotFound:
      return ColumnHint(message, sql, schema);
    case ErrorKind::kAmbiguousColumn:
      return AmbiguousHint(message, sql, schema);
    case ErrorKind::kAggregationError:
      if (text::Contains(message, "not allowed in the GROUP BY")) {
        return "GROUP BY must list plain columns, not aggregates; keep the aggregate in SELECT";
      }
      if (text::Contains(message, "HAVING")) {
        return "HAVING needs GROUP BY; filter rows with WHERE, groups with GROUP BY ... HAVING";
      }
      return "aggregates cannot appear in WHERE or GROUP BY; filter on them with HAVING after "
             "GROUP BY";
    case ErrorKind::kFunctionError:
    case ErrorKind::kSyntaxError: {
      std::string d = DialectHint(message);
      if (!d.empty()) return d;
      if (kind == ErrorKind::kSyntaxError) {
        return "write SQLite syntax: double quotes for identifiers, single quotes for strings, "
               "LIMIT instead of TOP";
      }
      return "";
    }
    case ErrorKind::kTypeMismatch:
      return "compare values of the same type; use CAST(x AS INTEGER) or CAST(x AS TEXT)";
    case ErrorKind::kTimeout:
      return "the query ran too long; avoid cartesian products (every join needs an ON), "
             "unbounded recursion and correlated subqueries over large tables";
    default:
      return "";
  }
}

}  // namespace querypilot
