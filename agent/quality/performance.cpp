#include "agent/quality/performance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/critic.h"
#include "agent/sql/lookup.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

// The table or alias a plan line scans in full, or "" (an index is used, or
// it is not a table scan). "SCAN o", "SCAN orders AS o" and the older
// "SCAN TABLE orders AS o" all name one.
std::string FullScanName(const std::string& detail) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : detail + " ") {
    if (c == ' ') {
      if (!cur.empty()) w.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (w.size() < 2 || w[0] != "SCAN") return "";
  size_t i = 1;
  if (w[i] == "TABLE" && w.size() > 2) ++i;
  if (w[i] == "CONSTANT" || w[i] == "SUBQUERY" || w[i].front() == '(') return "";
  std::string name = w[i];
  for (size_t j = i + 1; j < w.size(); ++j) {
    if (w[j] == "USING" || w[j] == "VIRTUAL") return "";  // an index, or not a real table
    if (w[j] == "AS" && j + 1 < w.size()) name = w[j + 1];
  }
  return name;
}

// The table and columns of an automatic index in a plan's detail line
// ("SEARCH o USING AUTOMATIC COVERING INDEX (email=?)"): SQLite reads all of
// that table to build the index, at every run, so a lasting index on those
// columns is what the query lacks. {"", {}} for any other line.
std::pair<std::string, std::vector<std::string>> AutomaticIndexScan(const std::string& detail) {
  if (!detail.starts_with("SEARCH ")) return {};
  const size_t automatic = detail.find(" USING AUTOMATIC ");
  const size_t open = detail.find('(', automatic == std::string::npos ? 0 : automatic);
  const size_t close = detail.find(')', open == std::string::npos ? 0 : open);
  if (automatic == std::string::npos || open == std::string::npos || close == std::string::npos)
    return {};
  std::vector<std::string> w;
  std::string cur;
  for (char c : detail.substr(0, automatic) + " ") {
    if (c == ' ') {
      if (!cur.empty()) w.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (w.size() < 2) return {};
  std::string name = w.size() >= 4 && w[2] == "AS" ? w[3] : w[1];
  std::vector<std::string> columns;
  std::string terms = detail.substr(open + 1, close - open - 1);  // "a=? AND b>?"
  size_t start = 0;
  while (start < terms.size()) {
    size_t end = terms.find(" AND ", start);
    std::string term =
        terms.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const size_t op = term.find_first_of("=<>");
    if (op != std::string::npos && op > 0) columns.push_back(term.substr(0, op));
    if (end == std::string::npos) break;
    start = end + 5;
  }
  return {name, columns};
}

bool IsComparison(const Token& t) {
  if (t.kind == TokenKind::kPunct) {
    return t.text == "=" || t.text == "==" || t.text == "<" || t.text == ">" || t.text == "<=" ||
           t.text == ">=";
  }
  return t.kind == TokenKind::kWord && text::Lower(t.text) == "between";
}

bool IsNumber(const std::vector<Token>& tokens, size_t i) {
  if (i < tokens.size() && tokens[i].kind == TokenKind::kNumber) return true;
  // A signed number: "- 5".
  return i + 1 < tokens.size() && tokens[i].kind == TokenKind::kPunct && tokens[i].text == "-" &&
         tokens[i + 1].kind == TokenKind::kNumber;
}

bool IsName(const Token& t) {
  return t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier;
}

// The table a column reference belongs to: through its qualifier, or the one
// table of the query that has such a column.
const TableInfo* OwnerOf(const std::string& qualifier, const std::string& column,
                         const QueryTables& q) {
  if (!qualifier.empty()) {
    auto it = q.by_alias.find(text::Lower(qualifier));
    if (it == q.by_alias.end() || !it->second->FindColumn(column)) return nullptr;
    return it->second;
  }
  const TableInfo* owner = nullptr;
  for (const TableInfo* t : q.tables) {
    if (!t->FindColumn(column)) continue;
    if (owner && owner != t) return nullptr;  // ambiguous
    owner = t;
  }
  return owner;
}

struct ColumnRef {
  const TableInfo* table;
  std::string column;  // as the schema spells it
};

// Columns compared with a number: `o.amount > 100`, `100 <= amount`,
// `year BETWEEN 2020 AND 2024`.
std::vector<ColumnRef> NumericComparisons(std::string_view sql, const QueryTables& q) {
  std::vector<ColumnRef> out;
  const std::vector<Token> tokens = TokenizeSql(sql);
  auto reference_ending_at = [&](size_t end, std::string* qualifier, std::string* column) {
    // tokens[end] is the column name; a qualifier may stand before a dot.
    if (!IsName(tokens[end])) return false;
    *column = tokens[end].name();
    qualifier->clear();
    if (end >= 2 && tokens[end - 1].text == "." && IsName(tokens[end - 2]))
      *qualifier = tokens[end - 2].name();
    return true;
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!IsComparison(tokens[i])) continue;
    std::string qualifier, column;
    bool found = false;
    if (i >= 1 && IsNumber(tokens, i + 1) && reference_ending_at(i - 1, &qualifier, &column)) {
      found = true;  // column OP number
    } else if (i >= 1 && tokens[i - 1].kind == TokenKind::kNumber && i + 1 < tokens.size()) {
      // number OP column (qualified or not)
      size_t end = i + 1;
      if (end + 2 < tokens.size() && tokens[end + 1].text == ".") end += 2;
      found = reference_ending_at(end, &qualifier, &column);
    }
    if (!found) continue;
    const TableInfo* owner = OwnerOf(qualifier, column, q);
    if (owner) out.push_back({owner, owner->FindColumn(column)->name});
  }
  return out;
}

void AddColumn(std::vector<std::string>* columns, const std::string& column) {
  for (const std::string& c : *columns) {
    if (text::EqualsIgnoreCase(c, column)) return;
  }
  columns->push_back(column);
}

// The table's INTEGER PRIMARY KEY, which is its rowid: always indexed.
bool IsRowid(const TableInfo& t, const std::string& column) {
  if (text::EqualsIgnoreCase(column, "rowid")) return true;
  size_t keys = 0;
  const ColumnInfo* key = nullptr;
  for (const ColumnInfo& c : t.columns) {
    if (c.primary_key) {
      ++keys;
      key = &c;
    }
  }
  return keys == 1 && text::EqualsIgnoreCase(key->name, column) &&
         text::EqualsIgnoreCase(key->type, "INTEGER");
}

std::string IndexName(const std::string& table, const std::string& column) {
  std::string name = "idx_" + table + "_" + column;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text::Lower(name);
}

int64_t AsInt(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* s = std::get_if<std::string>(&v)) return std::strtoll(s->c_str(), nullptr, 10);
  return -1;
}

}  // namespace

std::vector<std::string> ReadQueryPlan(const SqlTarget& target, std::string_view sql) {
  std::vector<std::string> plan;
  // The query is checked; its plan is then read on the connection as it is
  // (EXPLAIN QUERY PLAN runs nothing of the query).
  if (!CheckSql(target, sql).ok()) return plan;
  Result<Statement> stmt =
      Statement::Prepare(target.db(), "EXPLAIN QUERY PLAN " + std::string(sql));
  if (!stmt.ok() || !*stmt || sqlite3_stmt_isexplain(stmt->get()) != 2) return plan;
  while (stmt->Step() == SQLITE_ROW && plan.size() < 200) plan.push_back(stmt->ColumnText(3));
  return plan;
}

std::vector<ScanCandidate> ScanCandidates(const std::vector<std::string>& plan,
                                          std::string_view sql, const Schema& schema) {
  std::vector<ScanCandidate> out;
  const QueryTables q = FindQueryTables(sql, schema);
  // What the query compares, read once for all the scans of its plan.
  std::vector<LiteralComparison> literals;
  std::vector<ColumnRef> numbers;
  std::vector<ColumnEquality> joins;
  bool read = false;
  for (const std::string& line : plan) {
    std::string name = FullScanName(line);
    const auto [automatic_table, automatic_columns] = AutomaticIndexScan(line);
    if (name.empty()) name = automatic_table;
    if (name.empty()) continue;
    auto it = q.by_alias.find(text::Lower(name));
    const TableInfo* table = it != q.by_alias.end() ? it->second : schema.FindTable(name);
    if (!table || table->is_view) continue;
    if (std::any_of(out.begin(), out.end(),
                    [&](const ScanCandidate& c) { return c.table == table; }))
      continue;
    if (!automatic_columns.empty()) {
      // The inner side of a join: the columns SQLite indexes for itself.
      ScanCandidate c;
      c.table = table;
      for (const std::string& col : automatic_columns) AddColumn(&c.columns, col);
      std::erase_if(c.columns, [&](const std::string& col) { return IsRowid(*table, col); });
      if (!c.columns.empty()) out.push_back(std::move(c));
      continue;
    }
    if (!read) {
      literals = FindLiteralComparisons(sql, schema);
      numbers = NumericComparisons(sql, q);
      joins = FindColumnEqualities(sql, schema);
      read = true;
    }
    ScanCandidate c;
    c.table = table;
    for (const LiteralComparison& lc : literals) {
      if (lc.table == table && (lc.op == "=" || lc.op == "in")) AddColumn(&c.columns, lc.column);
    }
    for (const ColumnRef& r : numbers) {
      if (r.table == table) AddColumn(&c.columns, r.column);
    }
    for (const ColumnEquality& e : joins) {
      if (e.left == table) AddColumn(&c.columns, e.left_column);
      if (e.right == table) AddColumn(&c.columns, e.right_column);
    }
    std::erase_if(c.columns, [&](const std::string& col) { return IsRowid(*table, col); });
    if (!c.columns.empty()) out.push_back(std::move(c));
  }
  return out;
}

std::vector<SlowScan> FindSlowScans(const SqlTarget& target, const std::vector<std::string>& plan,
                                    std::string_view sql, const Schema& schema,
                                    const PerformanceLimits& limits) {
  std::vector<SlowScan> out;
  std::vector<ScanCandidate> candidates = ScanCandidates(plan, sql, schema);
  if (candidates.empty()) return out;
  BoundedLookup lookup(target, limits.budget_ms);
  for (const ScanCandidate& c : candidates) {
    // The leading column of each index: such a column is served already.
    std::set<std::string> indexed;
    for (Row& r : lookup.Rows(
             "SELECT ii.name FROM pragma_index_list(?1) AS il, pragma_index_info(il.name) AS ii "
             "WHERE ii.seqno = 0",
             {c.table->name}, 1000)) {
      if (!r.empty()) {
        if (const auto* s = std::get_if<std::string>(&r[0])) indexed.insert(text::Lower(*s));
      }
    }
    std::string column;
    for (const std::string& col : c.columns) {
      if (!indexed.count(text::Lower(col))) {
        column = col;
        break;
      }
    }
    if (column.empty() || lookup.expired()) continue;
    SlowScan scan;
    scan.table = c.table->name;
    scan.column = column;
    // ANALYZE's count when there is one; else the largest rowid (one step
    // down the b-tree, at least the row count when rows were never deleted);
    // else a count that stops at min_rows.
    std::vector<Row> stat =
        lookup.Rows("SELECT stat FROM sqlite_stat1 WHERE tbl = ?1 ORDER BY idx IS NOT NULL LIMIT 1",
                    {c.table->name}, 1);
    std::vector<Row> top =
        stat.empty()
            ? lookup.Rows(fmt::format("SELECT max(rowid) FROM {}", c.table->SqlName()), {}, 1)
            : std::vector<Row>{};
    if (!stat.empty() && !stat[0].empty() && AsInt(stat[0][0]) >= 0) {
      scan.rows = AsInt(stat[0][0]);
      scan.rows_estimated = true;
    } else if (!top.empty() && !top[0].empty() && AsInt(top[0][0]) >= 0) {
      scan.rows = AsInt(top[0][0]);
      scan.rows_estimated = true;
    } else {
      std::vector<Row> n =
          lookup.Rows(fmt::format("SELECT count(*) FROM (SELECT 1 FROM {} LIMIT {})",
                                  c.table->SqlName(), limits.min_rows),
                      {}, 1);
      if (n.empty() || n[0].empty()) continue;  // unknown: say nothing
      scan.rows = AsInt(n[0][0]);
    }
    if (scan.rows < limits.min_rows) continue;
    scan.create_index = CreateIndexStatement(c.table->name, column);
    out.push_back(std::move(scan));
  }
  return out;
}

std::string CreateIndexStatement(const std::string& table, const std::string& column) {
  return fmt::format("CREATE INDEX IF NOT EXISTS {} ON {}({});",
                     QuoteIdentifier(IndexName(table, column)), QuoteIdentifier(table),
                     QuoteIdentifier(column));
}

namespace {

std::string SizeText(const SlowScan& scan, const PerformanceLimits& limits = {}) {
  if (scan.rows_estimated) return fmt::format("about {} rows", scan.rows);
  return scan.rows >= limits.min_rows ? fmt::format("at least {} rows", scan.rows)
                                      : fmt::format("{} rows", scan.rows);
}

}  // namespace

ReflectionIssue SlowScanIssue(const SlowScan& scan, double exec_ms) {
  ReflectionIssue issue(
      Finding::kSlowScan,
      fmt::format("the query read all of {} ({}) to find rows by {}, which no index serves; it ran "
                  "{:.0f} ms. An index would let SQLite look them up: {}",
                  scan.table, SizeText(scan), scan.column, exec_ms, scan.create_index));
  issue.column = scan.table + "." + scan.column;
  issue.values = {scan.create_index};
  return issue;
}

std::string SlowScanSentence(const std::vector<SlowScan>& scans) {
  if (scans.empty()) return "";
  std::vector<std::string> parts;
  for (const SlowScan& s : scans) {
    parts.push_back(
        fmt::format("it reads all of {} ({}) to find rows by {}, which no index serves ({})",
                    s.table, SizeText(s), s.column, s.create_index));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace querypilot
