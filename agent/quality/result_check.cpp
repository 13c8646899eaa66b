#include "agent/quality/result_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "agent/base/text.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

std::vector<std::string> LowerWords(std::string_view s) {
  std::vector<std::string> words;
  std::string cur;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c >= 0x80) {
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else if (!cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

int NumberWord(const std::string& w) {
  static const std::map<std::string, int> kWords = {
      {"two", 2},   {"three", 3}, {"four", 4}, {"five", 5},    {"six", 6},      {"seven", 7},
      {"eight", 8}, {"nine", 9},  {"ten", 10}, {"twelve", 12}, {"fifteen", 15}, {"twenty", 20}};
  if (auto it = kWords.find(w); it != kWords.end()) return it->second;
  if (w.empty() || w.size() > 3 || !std::all_of(w.begin(), w.end(), ::isdigit)) return 0;
  int n = std::stoi(w);
  return n >= 2 && n <= 100 ? n : 0;
}

bool IsSuperlative(const std::vector<std::string>& words, size_t i) {
  static const std::set<std::string> kWords = {
      "highest",  "lowest",    "largest", "smallest", "biggest",  "oldest",   "youngest", "newest",
      "latest",   "earliest",  "tallest", "shortest", "heaviest", "lightest", "longest",  "fastest",
      "slowest",  "greatest",  "best",    "worst",    "maximum",  "minimum",  "fewest",   "richest",
      "cheapest", "strongest", "weakest", "hottest",  "coldest",  "busiest",  "poorest"};
  static const std::set<std::string> kNotSuperlative = {
      "interest", "request", "forest", "honest",   "modest", "contest",  "protest",
      "suggest",  "harvest", "digest", "arrest",   "invest", "manifest", "guest",
      "quest",    "chest",   "nest",   "rest",     "test",   "west",     "pest",
      "priest",   "vest",    "crest",  "conquest", "inquest"};
  const std::string& w = words[i];
  if (kWords.count(w)) return true;
  // "the dumbest", "the smartest": a word in -est after "the".
  if (i > 0 && words[i - 1] == "the" && w.size() >= 5 && w.ends_with("est") &&
      !kNotSuperlative.count(w)) {
    return true;
  }
  // "the most", "the least" ("at most" and "at least" are limits, not superlatives).
  if ((w == "most" || w == "least") && i > 0 && words[i - 1] == "the") return true;
  return false;
}

bool IsZero(const Value& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i == 0;
  if (auto* d = std::get_if<double>(&v)) return *d == 0.0;
  return false;
}

bool IsNull(const Value& v) {
  return std::holds_alternative<std::monostate>(v);
}

// The SQL's lower-case words and punctuation, without literals.
std::vector<std::string> SqlWords(std::string_view sql) {
  std::vector<std::string> out;
  for (const Token& t : TokenizeSql(sql)) {
    if (t.kind == TokenKind::kWord || t.kind == TokenKind::kPunct)
      out.push_back(text::Lower(t.text));
  }
  return out;
}

// For `x = (SELECT MAX(...) ...)` (or MIN): whether the subquery filters by
// the same text literals as the rest of the query, so that its extreme is
// taken over the same rows. A filter on one side only (the outer query
// picks 'Marvel Comics' heroes, the subquery the tallest of all; or the
// subquery takes the highest 'Speed', the outer query any attribute's value)
// means the extreme belongs to other rows. nullopt when the SQL has no such
// subquery.
std::optional<bool> ExtremeOverSameRows(std::string_view sql) {
  std::vector<Token> t = TokenizeSql(sql);
  auto lower = [&t](size_t i) { return text::Lower(t[i].text); };
  for (size_t i = 0; i + 3 < t.size(); ++i) {
    if (!(t[i].text == "=" && t[i + 1].text == "(" && lower(i + 2) == "select" &&
          (lower(i + 3) == "max" || lower(i + 3) == "min"))) {
      continue;
    }
    size_t depth = 0, end = i + 1;
    for (; end < t.size(); ++end) {
      if (t[end].text == "(") ++depth;
      if (t[end].text == ")" && --depth == 0) break;
    }
    std::set<std::string> inside, outside;
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k].kind != TokenKind::kString) continue;
      (k > i + 1 && k < end ? inside : outside).insert(t[k].text);
    }
    return inside == outside;
  }
  return std::nullopt;
}

bool HasCall(const std::vector<std::string>& w, std::string_view fn) {
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] == fn && w[i + 1] == "(") return true;
  }
  return false;
}

bool Has(const std::vector<std::string>& w, std::string_view word) {
  return std::find(w.begin(), w.end(), word) != w.end();
}

std::string Plural(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

bool LinkedByForeignKey(const TableInfo& from, std::string_view column, const TableInfo& to) {
  for (const ForeignKeyInfo& fk : from.foreign_keys) {
    if (text::EqualsIgnoreCase(fk.from_column, column) &&
        text::EqualsIgnoreCase(fk.to_table, to.name)) {
      return true;
    }
  }
  return false;
}

bool ReferencesTable(const TableInfo& from, const TableInfo& to) {
  for (const ForeignKeyInfo& fk : from.foreign_keys) {
    if (text::EqualsIgnoreCase(fk.to_table, to.name)) return true;
  }
  return false;
}

// `column` is the whole primary key of `t`: one column of a key of several
// (visits(shop_id, day)) identifies no row by itself.
bool IsPrimaryKey(const TableInfo& t, std::string_view column) {
  const ColumnInfo* c = t.FindColumn(column);
  if (!c || !c->primary_key) return false;
  return std::count_if(t.columns.begin(), t.columns.end(),
                       [](const ColumnInfo& k) { return k.primary_key; }) == 1;
}

// The table `column` of `t` refers to through a foreign key, or "".
std::string ReferencedTable(const TableInfo& t, std::string_view column) {
  for (const ForeignKeyInfo& fk : t.foreign_keys) {
    if (text::EqualsIgnoreCase(fk.from_column, column)) return text::Lower(fk.to_table);
  }
  return "";
}

// A join that equates the primary keys of two tables that no foreign key links.
std::optional<ReflectionIssue> JoinOnKeys(std::string_view sql, const Schema& schema) {
  for (const ColumnEquality& e : FindColumnEqualities(sql, schema)) {
    if (e.left == e.right || !IsPrimaryKey(*e.left, e.left_column) ||
        !IsPrimaryKey(*e.right, e.right_column) ||
        LinkedByForeignKey(*e.left, e.left_column, *e.right) ||
        LinkedByForeignKey(*e.right, e.right_column, *e.left)) {
      continue;
    }
    // Two keys that are both foreign keys to the same table hold that
    // table's ids: one row each per parent, a join the schema declares.
    const std::string parent = ReferencedTable(*e.left, e.left_column);
    if (!parent.empty() && parent == ReferencedTable(*e.right, e.right_column)) continue;
    std::string msg = fmt::format(
        "the join equates {}.{} and {}.{}, the primary keys of two tables that no foreign key "
        "links",
        e.left->name, e.left_column, e.right->name, e.right_column);
    std::vector<std::string> bridges;
    for (const TableInfo& t : schema.tables) {
      if (&t != e.left && &t != e.right && ReferencesTable(t, *e.left) &&
          ReferencesTable(t, *e.right)) {
        bridges.push_back(t.name);
      }
    }
    if (!bridges.empty()) msg += fmt::format("; {} links them", fmt::join(bridges, " or "));
    return ReflectionIssue(Finding::kJoinOnKeys, std::move(msg));
  }
  return std::nullopt;
}

// The words of the identifier `name` ("department_name", "DepartmentName")
// occur in `question` one after the other, in order: the question names
// that column, not just words that happen to be in it.
bool NamedAsPhrase(std::string_view question, std::string_view name) {
  std::vector<std::string> want;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) want.push_back(text::Lower(cur));
    cur.clear();
  };
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(c)) {
      flush();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1]))) flush();
    cur.push_back(static_cast<char>(c));
  }
  flush();
  if (want.empty()) return false;
  const std::vector<std::string> words = LowerWords(question);
  auto same = [](const std::string& q, const std::string& w) {
    return q == w || q == w + "s" || q == w + "es" || (w.size() > 3 && q + "s" == w);
  };
  for (size_t i = 0; i + want.size() <= words.size(); ++i) {
    size_t k = 0;
    while (k < want.size() && same(words[i + k], want[k])) ++k;
    if (k == want.size()) return true;
  }
  return false;
}

// `SELECT *`, `SELECT DISTINCT *` or `t.*`: columns read that the SQL does
// not name.
bool SelectsEveryColumn(const std::vector<Token>& tokens) {
  for (size_t i = 1; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::kPunct || tokens[i].text != "*") continue;
    const Token& before = tokens[i - 1];
    if (text::EqualsIgnoreCase(before.text, "select") ||
        text::EqualsIgnoreCase(before.text, "distinct") || before.text == "." ||
        before.text == ",") {
      return true;
    }
  }
  return false;
}

// Every name the SQL reads, lower-cased (words and quoted identifiers).
std::set<std::string> ReadNames(const std::vector<Token>& tokens) {
  std::set<std::string> read;
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier)
      read.insert(text::Lower(t.name()));
  }
  return read;
}

// A result column that is a foreign key's ids, when the question asks for no ids.
std::optional<ReflectionIssue> ForeignKeyIds(std::string_view question, std::string_view sql,
                                             const ResultView& result) {
  if (!result.origins || !result.schema) return std::nullopt;
  // `SELECT *` (or `t.*`) asks for every column, ids among them.
  const std::vector<Token> tokens = TokenizeSql(sql);
  if (SelectsEveryColumn(tokens)) return std::nullopt;
  for (const std::string& w : LowerWords(question)) {
    if (w == "id" || w == "ids" || w == "identifier" || w == "identifiers") return std::nullopt;
  }
  const std::set<std::string> question_words = IdentifierWords(question);
  // A column whose every word the question uses is asked for by name
  // ("country codes": CountryCode), whatever it holds.
  auto named = [&](std::string_view name) {
    const std::set<std::string> words = IdentifierWords(name);
    return !words.empty() && std::all_of(words.begin(), words.end(), [&](const std::string& w) {
      return question_words.count(w) > 0;
    });
  };
  const std::set<std::string> read = ReadNames(tokens);
  std::optional<ReflectionIssue> note;
  for (size_t i = 0; i < result.origins->size(); ++i) {
    const auto& [table, column] = (*result.origins)[i];
    const TableInfo* t = table.empty() ? nullptr : result.schema->FindTable(table);
    if (!t || named(column) || named((*result.columns)[i])) continue;
    for (const ForeignKeyInfo& fk : t->foreign_keys) {
      if (!text::EqualsIgnoreCase(fk.from_column, column)) continue;
      const TableInfo* target = result.schema->FindTable(fk.to_table, t->database);
      if (!target) continue;
      // What the ids stand for, by the schema: a text column of the table
      // they refer to that the question names word for word ("race" for
      // race.race) and the query never reads. Then the question asks for it
      // and the ids are not it: critical. Otherwise the question's words are
      // all there is to go on (a code may be what it asks for): a note.
      std::string stands_for;
      for (const ColumnInfo& c : target->columns) {
        if (c.primary_key || !c.HoldsText() || read.count(text::Lower(c.name)) ||
            !NamedAsPhrase(question, c.name)) {
          continue;
        }
        stands_for = c.name;
        break;
      }
      if (!stands_for.empty()) {
        return ReflectionIssue(
            Finding::kForeignKeyIds,
            fmt::format(
                "column \"{}\" returns {}.{}, ids of {} rows, and the question asks for {}.{}: "
                "join {} and return {}",
                (*result.columns)[i], t->name, column, target->name, target->name, stands_for,
                target->name, stands_for));
      }
      if (!note) {
        note = ReflectionIssue::Note(
            Finding::kForeignKeyIds,
            fmt::format(
                "column \"{}\" returns {}.{}, ids of {} rows; the question does not ask for "
                "ids: join {} and return what it names",
                (*result.columns)[i], t->name, column, target->name, target->name));
      }
    }
  }
  return note;
}

// A hint that says what a phrase means by naming one column ("name of
// superheroes refers to superhero_name", "price means unit_price") is the
// user's own reading of the question, and it wins over the model's: SQL that
// never reads that column did not follow it. Only a clause whose whole
// meaning is one column of the schema counts; a clause with a comparison or a
// formula ("blue refers to colour = 'Blue'") says more than which column.
std::optional<ReflectionIssue> HintColumnUnused(std::string_view question, std::string_view sql,
                                                const Schema& schema) {
  size_t at = question.find("\nHint:");
  if (at == std::string_view::npos) return std::nullopt;
  // `SELECT *` or `t.*` reads columns it does not name.
  const std::vector<Token> tokens = TokenizeSql(sql);
  if (SelectsEveryColumn(tokens)) return std::nullopt;
  const std::set<std::string> read = ReadNames(tokens);
  std::string_view hint = question.substr(at + 6);
  size_t start = 0;
  while (start <= hint.size()) {
    size_t end = hint.find_first_of(";\n", start);
    if (end == std::string_view::npos) end = hint.size();
    std::string clause = text::Trim(hint.substr(start, end - start));
    start = end + 1;
    while (!clause.empty() && (clause.back() == '.' || clause.back() == ' ')) clause.pop_back();
    const std::string lower = text::Lower(clause);
    for (std::string_view marker : {" refers to ", " means "}) {
      size_t m = lower.rfind(marker);
      if (m == std::string::npos) continue;
      std::string phrase = text::Trim(std::string_view(clause).substr(0, m));
      std::string ref = text::Trim(std::string_view(clause).substr(m + marker.size()));
      if (text::Lower(ref).rfind("the ", 0) == 0) ref = text::Trim(std::string_view(ref).substr(4));
      std::vector<Token> parts = TokenizeSql(ref);
      // `column` or `table.column`, nothing else.
      const bool qualified = parts.size() == 3 && parts[1].text == ".";
      if (phrase.empty() || !(parts.size() == 1 || qualified)) break;
      auto is_name = [](const Token& t) {
        return t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier;
      };
      if (!is_name(parts.front()) || !is_name(parts.back())) break;
      const std::string column = parts.back().name();
      bool exists = false;
      if (qualified) {
        const TableInfo* t = schema.FindTable(parts.front().name());
        exists = t && t->FindColumn(column);
      } else {
        exists = std::any_of(schema.tables.begin(), schema.tables.end(),
                             [&](const TableInfo& t) { return t.FindColumn(column) != nullptr; });
      }
      if (!exists || read.count(text::Lower(column))) break;
      return ReflectionIssue(
          Finding::kHintColumnUnused,
          fmt::format("the hint says \"{}\" refers to {}, and the query never reads "
                      "{}: follow the hint",
                      phrase, ref, column));
    }
  }
  return std::nullopt;
}

}  // namespace

QuestionShape ReadQuestionShape(std::string_view question) {
  // Only the question itself: a "Hint:" line after it explains, it does not ask.
  size_t hint = question.find("\nHint:");
  std::vector<std::string> words = LowerWords(question.substr(0, hint));
  static const std::set<std::string> kPerGroup = {"each",         "per",        "every",
                                                  "respectively", "respective", "individually"};
  // Words that ask for rows in an order rather than for one item. "order"
  // and "rank" alone are nouns as often ("the largest order", "the highest
  // ranked"): only "in order", "ordered by", "ranked by" and the like count.
  static const std::set<std::string> kOrdering = {
      "sort",           "sorted",       "sorting",         "descending",   "ascending",
      "alphabetically", "alphabetical", "chronologically", "chronological"};
  auto bigram = [&](size_t i, std::string_view a, std::initializer_list<std::string_view> b) {
    if (i + 1 >= words.size() || words[i] != a) return false;
    return std::find(b.begin(), b.end(), words[i + 1]) != b.end();
  };
  QuestionShape shape;
  size_t first_superlative = words.size();
  std::vector<size_t> superlatives;
  for (size_t i = 0; i < words.size(); ++i) {
    if (IsSuperlative(words, i)) {
      shape.superlative = true;
      superlatives.push_back(i);
      first_superlative = std::min(first_superlative, i);
      // "oldest first", "the most recent first": an order of all rows.
      if (i + 1 < words.size() && (words[i + 1] == "first" || words[i + 1] == "last"))
        shape.ordering = true;
      if (i + 2 < words.size() && words[i + 2] == "first" && words[i] == "most")
        shape.ordering = true;
    }
    if (kOrdering.count(words[i]) || bigram(i, "in", {"order"}) ||
        bigram(i, "order", {"by", "of"}) || bigram(i, "ordered", {"by", "from"}) ||
        bigram(i, "ranked", {"by", "from"}) || bigram(i, "rank", {"by"})) {
      shape.ordering = true;
    }
  }
  // "from youngest to oldest", "from the most populous to the least": a
  // superlative after "from" and another after a later "to".
  for (size_t a = 0; a < superlatives.size() && !shape.ordering; ++a) {
    for (size_t b = a + 1; b < superlatives.size(); ++b) {
      bool from = false, to = false;
      for (size_t k = superlatives[a] >= 3 ? superlatives[a] - 3 : 0; k < superlatives[a]; ++k)
        from |= words[k] == "from";
      for (size_t k = superlatives[a] + 1; k < superlatives[b]; ++k) to |= words[k] == "to";
      if (from && to) shape.ordering = true;
    }
  }
  for (size_t i = 0; i < words.size(); ++i) {
    if (kPerGroup.count(words[i])) shape.per_group = true;
    if (words[i] == "how" && i + 1 < words.size() && words[i + 1] == "many") shape.how_many = true;
    if (words[i] == "percent" || words[i] == "percentage") shape.percentage = true;
  }
  for (size_t i = 0; i < words.size(); ++i) {
    int n = NumberWord(words[i]);
    if (n == 0) continue;
    // "top 5", "first 10", or a number before the superlative ("the 3 oldest",
    // "which five customers spent the most").
    bool after_top = i > 0 && (words[i - 1] == "top" || words[i - 1] == "first");
    if (after_top || (shape.superlative && i < first_superlative)) {
      shape.top_n = n;
      break;
    }
  }
  return shape;
}

std::vector<ReflectionIssue> CheckResult(std::string_view question, std::string_view sql,
                                         const ResultView& result) {
  std::vector<ReflectionIssue> issues;
  const std::deque<Row>& rows = *result.rows;
  const size_t ncols = result.columns->size();
  const std::vector<std::string> sql_words = SqlWords(sql);
  const bool aggregates = HasCall(sql_words, "count") || HasCall(sql_words, "sum") ||
                          HasCall(sql_words, "avg") || HasCall(sql_words, "max") ||
                          HasCall(sql_words, "min") || HasCall(sql_words, "total");

  QuestionShape shape = ReadQuestionShape(question);
  std::optional<ReflectionIssue> join =
      result.schema ? JoinOnKeys(sql, *result.schema) : std::nullopt;
  if (result.complete && rows.empty()) {
    // An empty result is an answer when its filters are sound; value
    // grounding sends it back when a compared value does not occur.
    issues.push_back({Finding::kEmptyResult,
                      shape.superlative && !shape.per_group
                          ? "the query returned no rows for a question about the top item(s); a "
                            "filter or a subquery (a MAX over other rows?) may have matched nothing"
                          : "the query returned no rows"});
    if (join) issues.push_back(std::move(*join));
    return issues;
  }
  if (join) issues.push_back(std::move(*join));
  if (result.schema) {
    if (auto unused = HintColumnUnused(question, sql, *result.schema))
      issues.push_back(std::move(*unused));
  }
  if (result.complete && rows.size() == 1 && HasCall(sql_words, "count") &&
      std::all_of(rows[0].begin(), rows[0].end(),
                  [](const Value& v) { return IsZero(v) || IsNull(v); }) &&
      std::any_of(rows[0].begin(), rows[0].end(), IsZero)) {
    issues.push_back(
        {Finding::kZeroCount, "the query counted 0 rows: none matched its filters and joins"});
  }
  if (result.complete && !rows.empty()) {
    for (size_t c = 0; c < ncols; ++c) {
      bool all_null =
          std::all_of(rows.begin(), rows.end(), [&](const Row& r) { return IsNull(r[c]); });
      if (!all_null) continue;
      std::string msg =
          rows.size() == 1 && aggregates
              ? fmt::format(
                    "column \"{}\" is NULL: an aggregate over no rows (its filters or joins "
                    "matched nothing)",
                    (*result.columns)[c])
              : fmt::format("column \"{}\" is NULL in all {}", (*result.columns)[c],
                            Plural(rows.size(), "row", "rows"));
      // A column NULL in every row may be the data itself (a column the
      // question names, never filled in): a note, and value grounding looks
      // at the query's literals.
      issues.push_back({Finding::kAllNull, std::move(msg)});
      break;
    }
  }
  // `= (SELECT MAX(...))` asks for every row that ties for the top. The
  // ties are the answer when the subquery's extreme is taken over the rows
  // the outer query filters (both compare with the same literals), however
  // many they are; when it is not, its extreme may belong to other rows, and
  // the rows are suspect, whatever their number.
  const std::optional<bool> extreme = ExtremeOverSameRows(sql);
  const bool asks_for_ties = extreme.has_value();
  if (shape.single() && rows.size() > 1 && asks_for_ties && *extreme) {
    issues.push_back(
        {Finding::kTies, fmt::format("{}{} tie for the top", result.complete ? "" : "at least ",
                                     Plural(rows.size(), "row", "rows"))});
  } else if (shape.single() && rows.size() > 1) {
    // What was seen, not a reading of the question: the model decides.
    // A reading of the question's words ("the oldest" may be each row's
    // oldest): a note only.
    issues.push_back(
        {Finding::kTooManyRows,
         fmt::format("the result has {}{}{}. If the question asks for one top item, "
                     "return only it; if it asks for all of them in order, answer with "
                     "the same query",
                     result.complete ? "" : "at least ", Plural(rows.size(), "row", "rows"),
                     asks_for_ties ? "; the subquery's MAX or MIN does not filter by "
                                     "every value the outer query does, so it may be "
                                     "taken over other rows"
                                   : "")});
  } else if (shape.top_n > 0 && !shape.per_group &&
             rows.size() > static_cast<size_t>(shape.top_n)) {
    issues.push_back(
        {Finding::kTooManyRows,
         fmt::format("the result has {}{}, and the question names {}. If it asks for "
                     "the top {}, return only them; if it asks for all of them, answer "
                     "with the same query",
                     result.complete ? "" : "at least ", Plural(rows.size(), "row", "rows"),
                     shape.top_n, shape.top_n)});
  }
  if (shape.percentage && result.complete && rows.size() == 1 && ncols == 1) {
    const Value& v = rows[0][0];
    std::optional<double> x;
    if (auto* i = std::get_if<int64_t>(&v)) x = static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&v)) x = *d;
    if (x && (*x <= 0 || *x >= 100)) {
      issues.push_back(
          {Finding::kPercentageBounds,
           fmt::format("the percentage is {}: {}", *x,
                       *x < 0 || *x > 100 ? "outside 0 to 100"
                                          : "all or nothing, as if the numerator and the "
                                            "denominator counted the same rows (or none)")});
    }
  }
  if (auto ids = ForeignKeyIds(question, sql, result)) issues.push_back(std::move(*ids));
  if (rows.size() >= 2 && !Has(sql_words, "distinct") && !Has(sql_words, "group")) {
    std::set<std::string> seen;
    size_t dups = 0;
    for (const Row& r : rows) {
      if (!seen.insert(RowToJson(*result.columns, r)).second) ++dups;
    }
    if (dups > 0) {
      issues.push_back(
          {Finding::kDuplicateRows,
           fmt::format("{} of the first {} are repeats{}", Plural(dups, "row", "rows"), rows.size(),
                       Has(sql_words, "join") ? "; a join may have multiplied rows" : "")});
    }
  }
  return issues;
}

bool ResultSuggestsMissingValue(const std::vector<ReflectionIssue>& issues) {
  for (const auto& i : issues) {
    if (i.finding && RowOf(*i.finding).hollow) return true;
  }
  return false;
}

}  // namespace querypilot
