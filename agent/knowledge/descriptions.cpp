#include "agent/knowledge/descriptions.h"

#include <fmt/format.h>

#include <optional>

#include "agent/base/text.h"
#include "agent/knowledge/linking.h"

namespace querypilot {
namespace {

// The dot-separated names of `target`, each trimmed. A name may be quoted as
// SQL quotes one ("invoice lines", [order], `order`; "" inside double quotes
// is one "): it is taken as written, dots and spaces included. nullopt when a
// quote is left open or text follows a closing quote.
std::optional<std::vector<std::string>> SplitDots(std::string_view target) {
  std::vector<std::string> parts;
  std::string cur;
  bool quoted = false;  // the current name was quoted: nothing may follow it
  for (size_t i = 0; i < target.size(); ++i) {
    char c = target[i];
    if (c == '.') {
      parts.push_back(quoted ? cur : text::Trim(cur));
      cur.clear();
      quoted = false;
      continue;
    }
    if (quoted) {
      if (c != ' ' && c != '\t') return std::nullopt;
      continue;
    }
    if ((c == '"' || c == '`' || c == '[') && text::Trim(cur).empty()) {
      char close = c == '[' ? ']' : c;
      std::string name;
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= target.size()) return std::nullopt;
        if (target[j] != close) {
          name.push_back(target[j]);
        } else if (close != ']' && j + 1 < target.size() && target[j + 1] == close) {
          name.push_back(close);
          ++j;
        } else {
          break;
        }
      }
      cur = std::move(name);
      quoted = true;
      i = j;
      continue;
    }
    cur.push_back(c);
  }
  parts.push_back(quoted ? cur : text::Trim(cur));
  return parts;
}

}  // namespace

Result<Description> ResolveTarget(const Schema& schema, std::string_view target) {
  std::optional<std::vector<std::string>> split = SplitDots(target);
  if (!split) {
    return Status::InvalidArgument(fmt::format(
        "'{}' is not a table or column: a quoted name needs its closing quote and nothing after it",
        target));
  }
  std::vector<std::string> parts = std::move(*split);
  for (const std::string& p : parts) {
    if (p.empty()) {
      return Status::InvalidArgument(fmt::format(
          "'{}' is not a table or column: name one as 'table' or 'table.column'", target));
    }
  }
  // database.table[.column] when the first part is a database of the
  // connection; table[.column] otherwise.
  std::optional<std::string> database;
  if (parts.size() >= 2 && schema.HasDatabase(parts[0]) && schema.FindTable(parts[1], parts[0])) {
    database = parts[0];
    parts.erase(parts.begin());
  }
  if (parts.size() > 2) {
    return Status::InvalidArgument(fmt::format(
        "'{}' is not a table or column: name one as 'table' or 'table.column'", target));
  }
  const TableInfo* t =
      database ? schema.FindTable(parts[0], *database) : schema.FindTable(parts[0]);
  if (!t) return Status::InvalidArgument(fmt::format("no such table: {}", parts[0]));
  Description d;
  d.database = t->database;
  d.table = t->name;
  if (parts.size() == 2) {
    const ColumnInfo* c = t->FindColumn(parts[1]);
    if (!c) return Status::InvalidArgument(fmt::format("no such column: {}.{}", t->name, parts[1]));
    d.column = c->name;
  }
  return d;
}

std::shared_ptr<const Schema> WithDescriptions(std::shared_ptr<const Schema> schema,
                                               const std::vector<Description>& descriptions) {
  if (descriptions.empty() || !schema) return schema;
  std::optional<Schema> copy;
  for (const Description& d : descriptions) {
    const TableInfo* t = schema->FindTable(d.table, d.database);
    if (!t) continue;  // a table dropped since: kept, shown again if it returns
    if (!copy) copy = *schema;
    TableInfo& table = copy->tables[static_cast<size_t>(t - schema->tables.data())];
    if (d.column.empty()) {
      table.note = d.text;
      continue;
    }
    for (ColumnInfo& c : table.columns) {
      if (!text::EqualsIgnoreCase(c.name, d.column)) continue;
      c.note = c.note.empty() ? d.text : c.note + "; " + d.text;
    }
  }
  if (!copy) return schema;
  RenderInto(&*copy);
  return std::make_shared<const Schema>(std::move(*copy));
}

}  // namespace querypilot
