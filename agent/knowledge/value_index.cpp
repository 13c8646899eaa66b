#include "agent/knowledge/value_index.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "agent/sql/lookup.h"
#include "agent/base/sqlite.h"
#include "agent/sql/statement.h"
#include "agent/base/text.h"

namespace querypilot {
namespace {

bool IsBreak(char c) {
  switch (c) {
    case '"': case '?': case ',': case '!': case ';': case ':': case '(': case ')':
    case '[': case ']': case '{': case '}': case '.':
      return true;
    default:
      return std::isspace(static_cast<unsigned char>(c)) != 0;
  }
}

// Lower-case words, split on white space and punctuation (hyphens and inner
// apostrophes stay: "3-D", "O'Neil"), quotes trimmed from their ends.
std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> words;
  std::string cur;
  auto flush = [&] {
    size_t b = 0, e = cur.size();
    while (b < e && cur[b] == '\'') ++b;
    while (e > b && cur[e - 1] == '\'') --e;
    if (e > b) words.push_back(cur.substr(b, e - b));
    cur.clear();
  };
  for (char c : s) {
    if (IsBreak(c)) {
      flush();
    } else {
      cur.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  flush();
  return words;
}

std::string Join(const std::vector<std::string>& words, size_t from, size_t n) {
  std::string out;
  for (size_t i = from; i < from + n; ++i) {
    if (i > from) out.push_back(' ');
    out += words[i];
  }
  return out;
}

bool AllDigits(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string ValueIndex::Key(std::string_view value) {
  std::vector<std::string> words = Words(value);
  return Join(words, 0, words.size());
}

ValueIndex ValueIndex::Build(sqlite3* db, const Schema& schema, const ValueIndexLimits& limits) {
  ValueIndex index;
  BoundedLookup lookup(db, limits.budget_ms, limits.stop);
  for (const TableInfo& t : schema.tables) {
    if (t.is_view) continue;
    for (const ColumnInfo& c : t.columns) {
      if (!c.HoldsText()) continue;
      if (lookup.expired() || index.entries_.size() >= limits.max_values) {
        index.complete_ = false;
        return index;
      }
      const std::string col = QuoteIdentifier(c.name);
      const size_t room = std::min(limits.per_column, limits.max_values - index.entries_.size());
      std::vector<std::string> values = lookup.Texts(
          fmt::format("SELECT DISTINCT {0} FROM {1} WHERE typeof({0}) = 'text' AND length({0}) "
                      "BETWEEN 1 AND {2} LIMIT {3}",
                      col, QuoteIdentifier(t.name), limits.max_value_bytes, room + 1),
          {}, room + 1);
      if (values.size() > room) {
        index.complete_ = false;
        values.resize(room);
      }
      if (values.empty()) continue;
      const auto table_id = static_cast<uint32_t>(index.names_.size());
      index.names_.push_back(t.name);
      const auto column_id = static_cast<uint32_t>(index.names_.size());
      index.names_.push_back(c.name);
      for (std::string& v : values) {
        std::string key = Key(v);
        if (key.empty() || AllDigits(key)) continue;
        index.by_key_[key].push_back(static_cast<uint32_t>(index.entries_.size()));
        index.entries_.push_back({table_id, column_id, std::move(v)});
      }
    }
  }
  return index;
}

std::vector<ValueHint> ValueIndex::Lookup(std::string_view question, size_t max_hints) const {
  std::vector<ValueHint> hints;
  if (by_key_.empty()) return hints;
  const std::vector<std::string> words = Words(question);
  std::vector<bool> used(words.size(), false);
  std::set<std::pair<uint32_t, std::string>> seen;  // (column, value)
  constexpr size_t kMaxPhrase = 5, kMaxColumnsPerPhrase = 3;
  for (size_t n = std::min(kMaxPhrase, words.size()); n >= 1; --n) {
    for (size_t i = 0; i + n <= words.size(); ++i) {
      if (std::any_of(used.begin() + i, used.begin() + i + n, [](bool u) { return u; })) continue;
      if (n == 1 && (text::IsStopWord(words[i]) || words[i].size() < 2 || AllDigits(words[i]))) continue;
      std::string key = Join(words, i, n);
      auto it = by_key_.find(key);
      if (it == by_key_.end() && key.size() > 2 && key.ends_with("'s")) {
        it = by_key_.find(key.substr(0, key.size() - 2));  // "Copycat's race" -> Copycat
      }
      if (it == by_key_.end() && n == 1) it = FindWordVariant(key);
      if (it == by_key_.end()) continue;
      size_t added = 0;
      for (uint32_t e : it->second) {
        const Entry& entry = entries_[e];
        if (added == kMaxColumnsPerPhrase || hints.size() == max_hints) break;
        if (!seen.insert({entry.column, entry.value}).second) continue;
        hints.push_back({names_[entry.table], names_[entry.column], entry.value});
        ++added;
      }
      std::fill(used.begin() + i, used.begin() + i + n, true);
      if (hints.size() == max_hints) return hints;
    }
  }
  return hints;
}

ValueIndex::KeyMap::const_iterator ValueIndex::FindWordVariant(const std::string& word) const {
  // A plural ("aliens" -> alien), or the first part of a compound
  // ("gold-eyed" -> gold, "blue-haired" -> blue).
  std::vector<std::string> variants;
  if (word.size() > 3 && word.ends_with("s")) variants.push_back(word.substr(0, word.size() - 1));
  if (word.size() > 4 && word.ends_with("es")) variants.push_back(word.substr(0, word.size() - 2));
  if (size_t dash = word.find('-'); dash != std::string::npos && dash >= 2) {
    std::string head = word.substr(0, dash);
    if (!text::IsStopWord(head)) variants.push_back(head);
  }
  for (const std::string& v : variants) {
    if (auto it = by_key_.find(v); it != by_key_.end()) return it;
  }
  return by_key_.end();
}

std::shared_ptr<const ValueIndex> ValueIndexCache::Get(sqlite3* db, const Schema& schema,
                                                       const ValueIndexLimits& limits) {
  auto pragma = [db](const char* sql) -> int64_t {
    Result<Statement> s = Statement::Prepare(db, sql);
    return s.ok() && s->Step() == SQLITE_ROW ? s->ColumnInt(0) : -1;
  };
  const int64_t schema_version = schema.schema_version;
  const int64_t data_version = pragma("PRAGMA main.data_version");
  const int64_t changes = sqlite3_total_changes64(db);
  std::lock_guard<std::mutex> lock(mu_);
  if (index_ && schema_version == schema_version_ && data_version == data_version_ &&
      changes == changes_) {
    return index_;
  }
  index_ = std::make_shared<const ValueIndex>(ValueIndex::Build(db, schema, limits));
  schema_version_ = schema_version;
  data_version_ = data_version;
  changes_ = changes;
  ++builds_;
  return index_;
}

int64_t ValueIndexCache::builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return builds_;
}

}  // namespace querypilot
