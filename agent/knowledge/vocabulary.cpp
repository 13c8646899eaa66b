// Linking's words and a schema's vocabulary (agent/knowledge/vocabulary.h).
#include "agent/knowledge/vocabulary.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <utility>

#include "agent/base/text.h"
#include "agent/base/thread_annotations.h"

namespace querypilot::vocab {
namespace {

// Undirected foreign-key graph over table indexes (keys join tables of one
// database).
std::vector<std::vector<size_t>> FkGraph(const Schema& schema) {
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < schema.tables.size(); ++i) {
    index[{schema.tables[i].database, text::Lower(schema.tables[i].name)}] = i;
  }
  std::vector<std::vector<size_t>> g(schema.tables.size());
  for (size_t i = 0; i < schema.tables.size(); ++i) {
    for (const ForeignKeyInfo& fk : schema.tables[i].foreign_keys) {
      auto it = index.find({schema.tables[i].database, text::Lower(fk.to_table)});
      if (it == index.end() || it->second == i) continue;
      g[i].push_back(it->second);
      g[it->second].push_back(i);
    }
  }
  return g;
}

}  // namespace

Term MakeTerm(std::string w) {
  auto cut = [&w](std::string_view suffix, std::string_view with = "") {
    if (w.size() < suffix.size() + 3 || !w.ends_with(suffix)) return false;
    w.resize(w.size() - suffix.size());
    w += with;
    return true;
  };
  if (!cut("ies", "y") && !cut("sses", "ss") && !cut("ches", "ch") && !cut("shes", "sh") &&
      !cut("xes", "x") && !w.ends_with("ss") && !w.ends_with("is"))
    cut("s");
  Term t{w, {}};
  static const char* const kSuffixes[] = {"ation", "ment", "ity", "ing", "ers", "er",
                                          "ed",    "al",   "ly",  "es",  "e"};
  for (const char* suffix : kSuffixes) {
    if (cut(suffix)) break;
  }
  t.stem = std::move(w);
  return t;
}

double Alike(const Term& a, const Term& b) {
  if (a.word == b.word) return 1.0;
  if (a.stem == b.stem) return 0.8;
  const std::string& x = a.word;
  const std::string& y = b.word;
  const size_t shorter = std::min(x.size(), y.size()), longer = std::max(x.size(), y.size());
  if (shorter < 5) return 0.0;
  size_t prefix = 0;
  while (prefix < shorter && x[prefix] == y[prefix]) ++prefix;
  if (prefix >= 5 && 4 * prefix >= 3 * longer) return 0.6;
  if (longer - shorter <= 1 && 2 * (prefix + 1) >= shorter && text::OneEditApart(x, y)) return 0.6;
  return 0.0;
}

std::vector<Term> Terms(std::string_view s) {
  std::vector<Term> out;
  std::string cur;
  auto flush = [&] {
    if (cur.size() >= 3 && !text::IsStopWord(cur) &&
        !std::all_of(cur.begin(), cur.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      Term t = MakeTerm(std::move(cur));
      if (std::none_of(out.begin(), out.end(), [&](const Term& o) { return o.word == t.word; }))
        out.push_back(std::move(t));
    }
    cur.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80 && !std::isalnum(c)) {
      flush();
      continue;
    }
    if (c < 0x80 && std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(s[i - 1])))
      flush();
    cur.push_back(c < 0x80 ? static_cast<char>(std::tolower(c)) : static_cast<char>(c));
  }
  flush();
  return out;
}

Vocabulary::Vocabulary(const Schema& schema) {
  const size_t n = schema.tables.size();
  std::unordered_map<std::string, size_t> ids;
  std::vector<size_t> last_table;  // per term, the last table counted
  auto intern = [&](std::string_view s, std::vector<size_t>* into, size_t table) {
    for (Term& t : Terms(s)) {
      auto [it, fresh] = ids.emplace(t.word, words.size());
      if (fresh) {
        words.push_back(std::move(t));
        carried_by.emplace_back();
        last_table.push_back(SIZE_MAX);
      }
      if (last_table[it->second] != table) {
        last_table[it->second] = table;
        carried_by[it->second].push_back(table);
      }
      into->push_back(it->second);
    }
  };
  tables.resize(n);
  first_column.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const TableInfo& t = schema.tables[i];
    first_column[i + 1] = first_column[i] + t.columns.size();
    intern(t.name, &tables[i].name, i);
    intern(t.note, &tables[i].note, i);
    tables[i].per_column.resize(t.columns.size());
    for (size_t c = 0; c < t.columns.size(); ++c) {
      intern(t.columns[c].name, &tables[i].per_column[c], i);
      intern(t.columns[c].note, &tables[i].per_column[c], i);
    }
  }
  const double count = static_cast<double>(std::max<size_t>(n, 1));
  for (size_t v = 0; v < words.size(); ++v) {
    rarity.push_back(std::log(1.0 + count / static_cast<double>(carried_by[v].size())));
  }
  graph = FkGraph(schema);
}

// The Vocabulary of `schema`, kept for the four schemas (by what they say:
// their databases, tables, columns, descriptions and keys) linked last, so
// that a big schema is read once and not at every ask. A schema a shared_ptr
// holds (SchemaCache's, an ask's) is found by its identity first: such a
// schema is not changed (schema_model.h), and reading what it says to find
// its vocabulary costs a thousand-table ask as much as the rest of linking.
std::shared_ptr<const Vocabulary> VocabularyOf(const Schema& schema) {
  const std::weak_ptr<const Schema> self = schema.weak_from_this();
  auto is_self = [&](const std::weak_ptr<const Schema>& owner) {
    if (self.expired() || owner.owner_before(self) || self.owner_before(owner)) return false;
    const std::shared_ptr<const Schema> held = owner.lock();
    return held.get() == &schema;
  };
  // The last few vocabularies made, shared by every connection's asks:
  // process-wide because connections to one database (a pool, a tool that
  // opens one per query) have one schema, and its vocabulary is made once.
  struct Entry {
    uint64_t key = 0;
    std::weak_ptr<const Schema> owner;  // the schema last found by this key
    std::shared_ptr<const Vocabulary> vocabulary;
  };
  struct Kept {
    Mutex mu;
    std::deque<Entry> entries GUARDED_BY(mu);
  };
  static auto* kept = new Kept();  // never destroyed: asks may run after static destructors
  if (!self.expired()) {
    MutexLock lock(&kept->mu);
    for (const Entry& e : kept->entries) {
      if (is_self(e.owner)) return e.vocabulary;
    }
  }
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view part) {
    h = (h ^ std::hash<std::string_view>{}(part)) * 1099511628211ull;
  };
  size_t columns = 0;
  for (const TableInfo& t : schema.tables) {
    mix(t.database);
    mix(t.name);
    mix(t.note);
    columns += t.columns.size();
    for (const ColumnInfo& c : t.columns) {
      mix(c.name);
      mix(c.note);
    }
    for (const ForeignKeyInfo& fk : t.foreign_keys) mix(fk.to_table);
    mix("\n");
  }
  {
    MutexLock lock(&kept->mu);
    for (Entry& e : kept->entries) {
      // (The sizes too: Relevance reads a table's columns by the vocabulary's places.)
      if (e.key != h || e.vocabulary->tables.size() != schema.tables.size() ||
          e.vocabulary->first_column.back() != columns)
        continue;
      if (!self.expired()) e.owner = self;
      return e.vocabulary;
    }
  }
  auto made = std::make_shared<const Vocabulary>(schema);
  MutexLock lock(&kept->mu);
  kept->entries.push_front(Entry{h, self, made});
  if (kept->entries.size() > 4) kept->entries.pop_back();
  return made;
}

}  // namespace querypilot::vocab
