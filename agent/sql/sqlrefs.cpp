#include "agent/sql/sqlrefs.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "agent/base/text.h"
#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

bool IsName(const Token& t) {
  return t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier;
}

std::string Unquote(const Token& t) {
  return t.kind == TokenKind::kString ? text::UnquoteSqlString(t.text) : t.name();
}

struct ColumnRef {
  const TableInfo* table = nullptr;
  std::string column;
};

class ComparisonFinder {
 public:
  ComparisonFinder(std::string_view sql, const Schema& schema)
      : tokens_(TokenizeSql(sql)), q_(FindQueryTables(sql, schema)) {}

  std::vector<LiteralComparison> Find() {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const std::string word = text::Lower(tokens_[i].text);
      if (word == "in" && tokens_[i].kind == TokenKind::kWord && i > 0 && i + 1 < tokens_.size() &&
          tokens_[i + 1].text == "(") {
        InList(i);
        continue;
      }
      // column IS NULL (not IS NOT NULL)
      if (word == "is" && tokens_[i].kind == TokenKind::kWord && i > 0 && i + 1 < tokens_.size() &&
          text::EqualsIgnoreCase(tokens_[i + 1].text, "null")) {
        if (auto col = RefEndingAt(i - 1)) Add(*col, "is null", "");
        continue;
      }
      if (!IsLiteral(i)) continue;
      // column op 'literal'
      if (i >= 2) {
        std::string op = Op(i - 1);
        if (!op.empty()) {
          if (auto col = RefEndingAt(i - 2)) Add(*col, op, Unquote(tokens_[i]));
          continue;
        }
      }
      // 'literal' = column
      if (i + 2 < tokens_.size() && Op(i + 1) == "=") {
        if (auto col = RefStartingAt(i + 2)) Add(*col, "=", Unquote(tokens_[i]));
      }
    }
    return std::move(out_);
  }

  const std::vector<Token>& tokens() const { return tokens_; }

  // The helpers below also serve FindColumnEqualities().
  // "=", "like" or "" for the operator token at k.
  std::string Op(size_t k) const {
    const Token& t = tokens_[k];
    if (t.kind == TokenKind::kPunct && (t.text == "=" || t.text == "==")) return "=";
    if (t.kind == TokenKind::kWord && text::EqualsIgnoreCase(t.text, "like")) return "like";
    return "";
  }

  bool NamesQueryColumn(const std::string& name) const {
    for (const TableInfo* t : q_.tables) {
      if (t->FindColumn(name)) return true;
    }
    return false;
  }

  bool IsLiteral(size_t k) const {
    const Token& t = tokens_[k];
    if (t.kind == TokenKind::kString) return true;
    // SQLite reads "word" as a string when no column has that name.
    return t.kind == TokenKind::kQuotedIdentifier && !t.text.empty() && t.text.front() == '"' &&
           !NamesQueryColumn(t.name()) && !(k > 0 && tokens_[k - 1].text == ".") &&
           !(k + 1 < tokens_.size() && tokens_[k + 1].text == ".");
  }

  std::optional<ColumnRef> Resolve(const std::string* qualifier, const std::string& column) const {
    if (qualifier) {
      auto it = q_.by_alias.find(text::Lower(*qualifier));
      if (it == q_.by_alias.end()) return std::nullopt;
      const ColumnInfo* c = it->second->FindColumn(column);
      if (!c) return std::nullopt;
      return ColumnRef{it->second, c->name};
    }
    for (const TableInfo* t : q_.tables) {
      if (const ColumnInfo* c = t->FindColumn(column)) return ColumnRef{t, c->name};
    }
    return std::nullopt;
  }

  // A column reference whose last token is at k: col, or q.col.
  std::optional<ColumnRef> RefEndingAt(size_t k) const {
    if (!IsName(tokens_[k])) return std::nullopt;
    if (k + 1 < tokens_.size() && tokens_[k + 1].text == "(") return std::nullopt;
    const std::string column = tokens_[k].name();
    if (k >= 2 && tokens_[k - 1].text == "." && IsName(tokens_[k - 2])) {
      const std::string qualifier = tokens_[k - 2].name();
      return Resolve(&qualifier, column);
    }
    return Resolve(nullptr, column);
  }

  // A column reference whose first token is at k.
  std::optional<ColumnRef> RefStartingAt(size_t k) const {
    if (!IsName(tokens_[k])) return std::nullopt;
    if (k + 2 < tokens_.size() && tokens_[k + 1].text == "." && IsName(tokens_[k + 2])) {
      if (k + 3 < tokens_.size() && tokens_[k + 3].text == "(") return std::nullopt;
      const std::string qualifier = tokens_[k].name();
      return Resolve(&qualifier, tokens_[k + 2].name());
    }
    if (k + 1 < tokens_.size() && tokens_[k + 1].text == "(") return std::nullopt;
    return Resolve(nullptr, tokens_[k].name());
  }

  // column IN ('a', 'b'): only lists made entirely of text literals.
  void InList(size_t in) {
    auto col = RefEndingAt(in - 1);
    if (!col) return;
    std::vector<std::string> values;
    for (size_t k = in + 2; k < tokens_.size(); ++k) {
      if (tokens_[k].text == ")") {
        for (auto& v : values) Add(*col, "in", std::move(v));
        return;
      }
      if (tokens_[k].text == ",") continue;
      if (!IsLiteral(k)) return;
      values.push_back(Unquote(tokens_[k]));
    }
  }

 private:
  void Add(const ColumnRef& col, const std::string& op, std::string literal) {
    for (const auto& c : out_) {
      if (c.table == col.table && c.column == col.column && c.op == op && c.literal == literal)
        return;
    }
    out_.push_back({col.table, col.column, op, std::move(literal)});
  }

  std::vector<Token> tokens_;
  QueryTables q_;
  std::vector<LiteralComparison> out_;
};

}  // namespace

std::set<std::string> IdentifierWords(std::string_view name) {
  std::set<std::string> words;
  std::string cur;
  auto flush = [&] {
    if (cur.size() >= 2) words.insert(text::Lower(cur));
    cur.clear();
  };
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(c) && c < 0x80) {
      flush();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1]))) flush();
    cur.push_back(static_cast<char>(c));
  }
  flush();
  // Crude singular forms so "customer" meets "customers".
  std::set<std::string> out = words;
  for (const auto& w : words) {
    if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's')
      out.insert(w.substr(0, w.size() - 1));
    if (w.size() > 4 && w.ends_with("ies")) out.insert(w.substr(0, w.size() - 3) + "y");
    if (w.size() > 4 && w.ends_with("es")) out.insert(w.substr(0, w.size() - 2));  // heroes
  }
  return out;
}

QueryTables FindQueryTables(std::string_view sql, const Schema& schema) {
  static const std::set<std::string> kNotAlias = {
      "where",   "join",   "inner",     "left",   "right",  "full",      "cross",
      "natural", "on",     "using",     "group",  "order",  "limit",     "having",
      "union",   "except", "intersect", "window", "as",     "and",       "or",
      "outer",   "select", "from",      "set",    "values", "returning", "offset"};
  QueryTables q;
  std::vector<Token> tokens = TokenizeSql(sql);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (!IsName(t)) continue;
    if (i > 0 && tokens[i - 1].text == ".") continue;                  // x.name is a column
    if (i + 1 < tokens.size() && tokens[i + 1].text == "(") continue;  // a function
    const TableInfo* table = nullptr;
    if (i + 2 < tokens.size() && tokens[i + 1].text == "." && IsName(tokens[i + 2]) &&
        schema.HasDatabase(t.name())) {
      // database.table ("world.city")
      table = schema.FindTable(tokens[i + 2].name(), t.name());
      if (table) i += 2;
    } else {
      table = schema.FindTable(t.name());
    }
    if (!table) continue;
    if (std::find(q.tables.begin(), q.tables.end(), table) == q.tables.end())
      q.tables.push_back(table);
    q.by_alias[text::Lower(table->name)] = table;
    size_t j = i + 1;
    if (j < tokens.size() && text::Lower(tokens[j].text) == "as") ++j;
    if (j < tokens.size() && IsName(tokens[j]) && !kNotAlias.count(text::Lower(tokens[j].text))) {
      q.by_alias[text::Lower(tokens[j].name())] = table;
    }
  }
  return q;
}

std::vector<LiteralComparison> FindLiteralComparisons(std::string_view sql, const Schema& schema) {
  return ComparisonFinder(sql, schema).Find();
}

std::vector<ColumnEquality> FindColumnEqualities(std::string_view sql, const Schema& schema) {
  ComparisonFinder f(sql, schema);
  std::vector<ColumnEquality> out;
  const auto& tokens = f.tokens();
  for (size_t i = 3; i + 3 < tokens.size(); ++i) {
    if (f.Op(i) != "=" || tokens[i - 2].text != "." || tokens[i + 2].text != ".") continue;
    auto left = f.RefEndingAt(i - 1);
    auto right = f.RefStartingAt(i + 1);
    if (left && right) out.push_back({left->table, left->column, right->table, right->column});
  }
  return out;
}

std::vector<std::string> ClosestNames(std::string_view name,
                                      const std::vector<std::string>& candidates, size_t limit) {
  if (name.empty()) return {};
  std::set<std::string> name_words = IdentifierWords(name);
  const size_t max_distance = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<double, std::string>> scored;
  std::set<std::string> seen;
  for (const auto& c : candidates) {
    std::string lc = text::Lower(c);
    if (!seen.insert(lc).second) continue;
    size_t d = text::EditDistance(name, c);
    size_t shared = 0;
    for (const auto& w : IdentifierWords(c)) shared += name_words.count(w);
    if (d == 0) continue;  // the name itself is not a suggestion
    if (d > max_distance && shared == 0) continue;
    // Fewer edits is better; a shared word counts as much as several edits.
    double score = static_cast<double>(d) - 3.0 * static_cast<double>(shared);
    scored.emplace_back(score, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [score, c] : scored) {
    if (out.size() == limit) break;
    out.push_back(c);
  }
  return out;
}

}  // namespace querypilot
