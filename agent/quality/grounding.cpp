#include "agent/quality/grounding.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "agent/base/text.h"
#include "agent/sql/lookup.h"
#include "agent/sql/sqlrefs.h"

namespace querypilot {
namespace {

std::string Quoted(const std::vector<std::string>& values) {
  std::vector<std::string> q;
  for (const auto& v : values) q.push_back(text::QuoteSqlString(v));
  return fmt::format("{}", fmt::join(q, ", "));
}

void AddUnique(std::vector<std::string>& out, const std::string& v, size_t max) {
  if (out.size() < max && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
}

// The values of `from` nearest to `literal`, best first.
std::vector<std::string> NearValues(BoundedLookup& lookup, const LiteralComparison& c,
                                    const std::string& from, const std::string& col,
                                    const std::string& literal, const GroundingLimits& limits,
                                    const ValueLookup* values) {
  std::vector<std::string> out;
  const std::string k = std::to_string(limits.max_suggestions);
  for (const auto& v :
       lookup.Texts(fmt::format("SELECT DISTINCT {0} FROM {1} WHERE {0} IS NOT NULL "
                                "AND lower(trim({0})) = lower(trim(?1)) LIMIT {2}",
                                col, from, k),
                    {literal}, limits.max_suggestions)) {
    AddUnique(out, v, limits.max_suggestions);
  }
  if (!out.empty()) return out;
  if (text::Trim(literal).size() >= 3) {
    for (const auto& v :
         lookup.Texts(fmt::format("SELECT DISTINCT {0} FROM {1} WHERE typeof({0}) = 'text' AND "
                                  "(instr(lower({0}), lower(trim(?1))) > 0 OR "
                                  "(length({0}) >= 3 AND instr(lower(?1), lower({0})) > 0)) "
                                  "ORDER BY length({0}) LIMIT {2}",
                                  col, from, k),
                      {literal}, limits.max_suggestions)) {
      AddUnique(out, v, limits.max_suggestions);
    }
  }
  if (!out.empty()) return out;
  // Edit distance: over every value of a big column that the value index
  // holds whole, else over a bounded sample of distinct values of similar
  // length.
  const size_t len = literal.size();
  const size_t max_edits = std::max<size_t>(1, len / 4);
  if (values) {
    if (auto near = values->NearValues(c.table->database, c.table->name, c.column, literal,
                                       max_edits, limits.max_suggestions, limits.sample_values)) {
      return *near;
    }
  }
  std::vector<std::pair<size_t, std::string>> scored;
  for (auto& v : lookup.Texts(
           fmt::format("SELECT DISTINCT {0} FROM {1} WHERE typeof({0}) = 'text' AND length({0}) "
                       "BETWEEN {2} AND {3} LIMIT {4}",
                       col, from, len > max_edits ? len - max_edits : 1, len + max_edits,
                       limits.sample_values),
           {}, static_cast<size_t>(limits.sample_values))) {
    size_t d = text::EditDistance(v, literal);
    if (d <= max_edits) scored.emplace_back(d, std::move(v));
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [d, v] : scored) AddUnique(out, v, limits.max_suggestions);
  return out;
}

// Other text columns that hold `literal` (case-insensitive), as "table.column":
// the query's own tables first, then the rest of the schema.
std::vector<std::string> PlacesHolding(BoundedLookup& lookup, const Schema& schema,
                                       const QueryTables& query, const LiteralComparison& c,
                                       const GroundingLimits& limits) {
  std::vector<const TableInfo*> order = query.tables;
  for (const auto& t : schema.tables) {
    if (std::find(order.begin(), order.end(), &t) == order.end()) order.push_back(&t);
  }
  std::vector<std::string> places;
  size_t searched = 0;
  for (const TableInfo* t : order) {
    for (const auto& col : t->columns) {
      if ((t == c.table && col.name == c.column) || !col.HoldsText()) continue;
      if (++searched > limits.max_pivot_columns || lookup.expired() || places.size() >= 3) {
        return places;
      }
      std::string sql = fmt::format("SELECT 1 FROM {} WHERE {} = ?1 COLLATE NOCASE LIMIT 1",
                                    QuoteIdentifier(t->name), QuoteIdentifier(col.name));
      if (!lookup.Rows(sql, {c.literal}, 1).empty()) places.push_back(t->name + "." + col.name);
    }
  }
  return places;
}

// `column IS NULL` where the column holds no NULL: missing values are stored
// some other way, often as a row or value that means "none".
// Makes `issue` a finding of kind `f`, at its row's tier.
void Raise(ReflectionIssue& issue, Finding f) {
  issue.finding = f;
  issue.tier = RowOf(f).tier;
}

std::optional<ReflectionIssue> CheckNullTest(BoundedLookup& lookup, const Schema& schema,
                                             const LiteralComparison& c) {
  const std::string from = c.table->SqlName();
  const std::string col = QuoteIdentifier(c.column);
  if (!lookup.Rows(fmt::format("SELECT 1 FROM {} WHERE {} IS NULL LIMIT 1", from, col), {}, 1)
           .empty() ||
      lookup.expired()) {
    return std::nullopt;
  }
  ReflectionIssue issue(Finding::kNullAbsent, "");
  issue.column = c.table->name + "." + c.column;
  // Values that look like "none", in the column or in the table it refers to.
  std::vector<std::pair<const TableInfo*, std::string>> places;
  if (const ColumnInfo* info = c.table->FindColumn(c.column); info && info->HoldsText()) {
    places.emplace_back(c.table, c.column);
  }
  for (const ForeignKeyInfo& fk : c.table->foreign_keys) {
    if (!text::EqualsIgnoreCase(fk.from_column, c.column)) continue;
    if (const TableInfo* target = schema.FindTable(fk.to_table, c.table->database)) {
      for (const ColumnInfo& tc : target->columns) {
        if (tc.HoldsText()) places.emplace_back(target, tc.name);
      }
    }
  }
  for (const auto& [table, column] : places) {
    std::string q = QuoteIdentifier(column);
    for (const auto& v : lookup.Texts(
             fmt::format(
                 "SELECT DISTINCT {0} FROM {1} WHERE lower(trim({0})) IN ('none', 'unknown', "
                 "'n/a', 'na', '-', 'no', 'null', '') OR lower({0}) LIKE 'no %' LIMIT 3",
                 q, table->SqlName()),
             {}, 3)) {
      issue.values.push_back(
          fmt::format("{}.{} = {}", table->name, column, text::QuoteSqlString(v)));
    }
  }
  issue.message = fmt::format("{} is never NULL, so IS NULL matches nothing", issue.column);
  if (!issue.values.empty()) {
    issue.message +=
        fmt::format("; a missing value may be stored as {}", fmt::join(issue.values, " or "));
  }
  return issue;
}

std::string StripWildcards(const std::string& pattern) {
  std::string out;
  for (char ch : pattern) {
    if (ch != '%' && ch != '_') out.push_back(ch);
  }
  return out;
}

}  // namespace

std::vector<ReflectionIssue> GroundLiterals(const SqlTarget& target, const Schema& schema,
                                            std::string_view sql, const GroundingLimits& limits,
                                            const ValueLookup* values) {
  std::vector<ReflectionIssue> issues;
  std::vector<LiteralComparison> comparisons = FindLiteralComparisons(sql, schema);
  if (comparisons.empty()) return issues;
  QueryTables query = FindQueryTables(sql, schema);
  BoundedLookup lookup(target, limits.budget_ms, limits.stop);
  size_t looked = 0;
  for (const LiteralComparison& c : comparisons) {
    if (++looked > limits.max_literals || lookup.expired()) break;
    const std::string from = c.table->SqlName();
    const std::string col = QuoteIdentifier(c.column);
    if (c.op == "is null") {
      if (std::optional<ReflectionIssue> issue = CheckNullTest(lookup, schema, c)) {
        issues.push_back(std::move(*issue));
      }
      continue;
    }
    const bool like = c.op == "like";
    std::string exists =
        fmt::format("SELECT 1 FROM {} WHERE {} {} ?1 LIMIT 1", from, col, like ? "LIKE" : "=");
    if (!lookup.Rows(exists, {c.literal}, 1).empty()) continue;
    if (lookup.expired()) break;  // an unfinished lookup proves nothing
    const std::string plain = like ? StripWildcards(c.literal) : c.literal;
    const std::string where = c.table->name + "." + c.column;
    ReflectionIssue issue;
    issue.literal = c.literal;
    issue.column = where;
    issue.values = plain.empty() ? std::vector<std::string>{}
                                 : NearValues(lookup, c, from, col, plain, limits, values);
    if (!issue.values.empty()) {
      Raise(issue, Finding::kValueNotFound);
      issue.message = fmt::format("{} does not occur in {}; it has {}",
                                  text::QuoteSqlString(c.literal), where, Quoted(issue.values));
      issues.push_back(std::move(issue));
      continue;
    }
    // A column with no value at all says nothing of where the literal
    // belongs: the result is empty because the column is.
    const bool column_empty =
        lookup.Rows(fmt::format("SELECT 1 FROM {} WHERE {} IS NOT NULL LIMIT 1", from, col), {}, 1)
            .empty();
    if (lookup.expired()) break;
    if (!plain.empty() && !column_empty) {
      LiteralComparison search = c;
      search.literal = plain;
      issue.values = PlacesHolding(lookup, schema, query, search, limits);
    }
    if (!issue.values.empty()) {
      Raise(issue, Finding::kValueElsewhere);
      issue.message =
          fmt::format("{} does not occur in {}, but it does in {}", text::QuoteSqlString(c.literal),
                      where, fmt::join(issue.values, ", "));
    } else {
      // A compared value that occurs nowhere, with nothing near it: the
      // empty answer may be right (the value truly does not occur), and
      // nothing in the data says what else was meant. A note, not a reason
      // to ask again.
      Raise(issue, Finding::kValueMissing);
      issue.message =
          column_empty
              ? fmt::format("{} does not occur in {}, which holds no values",
                            text::QuoteSqlString(c.literal), where)
              : fmt::format("{} does not occur in {} nor in any other text column searched",
                            text::QuoteSqlString(c.literal), where);
    }
    issues.push_back(std::move(issue));
  }
  return issues;
}

}  // namespace querypilot
