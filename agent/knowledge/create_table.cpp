// The columns and foreign keys a CREATE TABLE text declares
// (agent/knowledge/create_table.h).
#include "agent/knowledge/create_table.h"

#include <algorithm>
#include <cstddef>

#include "agent/base/text.h"
#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

using Tokens = std::vector<Token>;

bool IsWord(const Token& t, std::string_view word) {
  return t.kind == TokenKind::kWord && text::EqualsIgnoreCase(t.text, word);
}

bool IsPunct(const Token& t, std::string_view p) {
  return t.kind == TokenKind::kPunct && t.text == p;
}

bool IsName(const Token& t) {
  return t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier;
}

// A list of bare names, `( a, b, ... )`, from `*i` (at its "("); advances
// past its ")". Nullopt for anything else (COLLATE, ASC, an expression).
std::optional<std::vector<std::string>> NameList(const Tokens& part, size_t* i) {
  if (*i >= part.size() || !IsPunct(part[*i], "(")) return std::nullopt;
  std::vector<std::string> names;
  for (++*i; *i < part.size(); ++*i) {
    if (!IsName(part[*i])) return std::nullopt;
    names.push_back(part[*i].name());
    ++*i;
    if (*i >= part.size()) return std::nullopt;
    if (IsPunct(part[*i], ")")) {
      ++*i;
      return names;
    }
    if (!IsPunct(part[*i], ",")) return std::nullopt;
  }
  return std::nullopt;
}

// `REFERENCES t` or `REFERENCES t(c, ...)` from `*i` (at REFERENCES):
// the parent table and its columns (none named: empty); advances past them.
std::optional<std::pair<std::string, std::vector<std::string>>> References(const Tokens& part,
                                                                           size_t* i) {
  ++*i;
  if (*i >= part.size() || !IsName(part[*i])) return std::nullopt;
  std::pair<std::string, std::vector<std::string>> out{part[*i].name(), {}};
  ++*i;
  if (*i < part.size() && IsPunct(part[*i], "(")) {
    auto names = NameList(part, i);
    if (!names) return std::nullopt;
    out.second = std::move(*names);
  }
  return out;
}

// The words that begin a table constraint rather than a column.
bool StartsConstraint(const Token& t) {
  return IsWord(t, "CONSTRAINT") || IsWord(t, "PRIMARY") || IsWord(t, "UNIQUE") ||
         IsWord(t, "CHECK") || IsWord(t, "FOREIGN");
}

}  // namespace

std::optional<DeclaredTable> ReadCreateTable(std::string_view sql) {
  const Tokens tokens = TokenizeSql(sql);
  if (tokens.size() < 2 || !IsWord(tokens[0], "CREATE")) return std::nullopt;
  // A generated column (AS, GENERATED ALWAYS AS): SQLite hides it from
  // table_info and computes it; left to SQLite's pragmas.
  for (const Token& t : tokens) {
    if (IsWord(t, "AS") || IsWord(t, "GENERATED")) return std::nullopt;
  }
  size_t open = 0;
  while (open < tokens.size() && !IsPunct(tokens[open], "(")) ++open;
  // The definitions between the first "(" and its ")", split at the commas
  // outside parentheses.
  std::vector<Tokens> parts(1);
  int depth = 0;
  bool closed = false;
  for (size_t i = open + 1; i < tokens.size() && !closed; ++i) {
    const Token& t = tokens[i];
    if (IsPunct(t, "(")) {
      ++depth;
    } else if (IsPunct(t, ")")) {
      if (depth == 0) {
        closed = true;
        continue;
      }
      --depth;
    } else if (depth == 0 && IsPunct(t, ",")) {
      parts.emplace_back();
      continue;
    }
    parts.back().push_back(t);
  }
  if (!closed) return std::nullopt;
  DeclaredTable out;
  // Each declaration's foreign keys, in the text's order.
  std::vector<std::vector<ForeignKeyInfo>> keys;
  bool constraints = false;  // the table constraints come after every column
  for (const Tokens& part : parts) {
    if (part.empty()) return std::nullopt;
    if (StartsConstraint(part[0])) constraints = true;
    if (!constraints) {
      if (!IsName(part[0])) return std::nullopt;  // a name written as a string
      const std::string column = part[0].name();
      out.columns.push_back(column);
      int level = 0;
      for (size_t i = 1; i < part.size();) {
        if (IsPunct(part[i], "(")) ++level;
        if (IsPunct(part[i], ")")) --level;
        if (!IsWord(part[i], "REFERENCES")) {
          ++i;
          continue;
        }
        if (level != 0) return std::nullopt;
        auto parent = References(part, &i);
        if (!parent || parent->second.size() > 1) return std::nullopt;
        keys.push_back({ForeignKeyInfo{column, parent->first,
                                       parent->second.empty() ? "" : parent->second[0]}});
      }
      continue;
    }
    if (!StartsConstraint(part[0])) return std::nullopt;
    size_t i = 0;
    if (IsWord(part[0], "CONSTRAINT")) i = 2;
    if (i >= part.size() || !IsWord(part[i], "FOREIGN")) {
      // PRIMARY KEY, UNIQUE or CHECK: no foreign key can be in it.
      if (std::any_of(part.begin(), part.end(),
                      [](const Token& t) { return IsWord(t, "REFERENCES"); }))
        return std::nullopt;
      continue;
    }
    ++i;
    if (i >= part.size() || !IsWord(part[i], "KEY")) return std::nullopt;
    ++i;
    auto from = NameList(part, &i);
    if (!from || i >= part.size() || !IsWord(part[i], "REFERENCES")) return std::nullopt;
    auto parent = References(part, &i);
    if (!parent || (!parent->second.empty() && parent->second.size() != from->size()))
      return std::nullopt;
    for (size_t j = i; j < part.size(); ++j) {
      if (IsWord(part[j], "REFERENCES")) return std::nullopt;
    }
    std::vector<ForeignKeyInfo> key;
    for (size_t k = 0; k < from->size(); ++k) {
      // SQLite names the child column as the table declares it.
      auto declared = std::find_if(out.columns.begin(), out.columns.end(), [&](const auto& c) {
        return text::EqualsIgnoreCase(c, (*from)[k]);
      });
      if (declared == out.columns.end()) return std::nullopt;
      key.push_back({*declared, parent->first, parent->second.empty() ? "" : parent->second[k]});
    }
    keys.push_back(std::move(key));
  }
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    for (ForeignKeyInfo& k : *it) out.foreign_keys.push_back(std::move(k));
  }
  return out;
}

}  // namespace querypilot
