// The keys values are stored and looked up under, and the lookup of a
// question's phrases: pure text, with no SQLite (agent/knowledge/value_index.h).
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "agent/base/text.h"
#include "agent/knowledge/value_index.h"

namespace querypilot {
namespace {

// ASCII bytes are classed and lower-cased by the C locale's rules, whatever
// the host's locale (a key is the same in every process that shares an
// index), without a call into the C library: keys are made of every value a
// scan reads. Other bytes ask the C library, as the host's locale says.
constexpr bool IsAsciiBreak(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case '"':
    case '?':
    case ',':
    case '!':
    case ';':
    case ':':
    case '(':
    case ')':
    case '[':
    case ']':
    case '{':
    case '}':
    case '.':
      return true;
    default:
      return false;
  }
}

bool IsValueBreak(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 128 ? IsAsciiBreak(c) : std::isspace(u) != 0;
}

char KeyLower(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 128) return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  return static_cast<char>(std::tolower(u));
}

// Lower-case words, split on white space and punctuation (hyphens and inner
// apostrophes stay: "3-D", "O'Neil"), quotes trimmed from their ends.
std::vector<std::string> ValueWords(std::string_view s) {
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
    if (IsValueBreak(c)) {
      flush();
    } else {
      cur.push_back(KeyLower(c));
    }
  }
  flush();
  return words;
}

std::string JoinValueWords(const std::vector<std::string>& words, size_t from, size_t n) {
  std::string out;
  for (size_t i = from; i < from + n; ++i) {
    if (i > from) out.push_back(' ');
    out += words[i];
  }
  return out;
}

bool AllValueDigits(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

std::string ValueIndex::Key(std::string_view value) {
  std::string out;
  KeyInto(value, &out);
  return out;
}

void ValueIndex::KeyInto(std::string_view value, std::string* key) {
  // JoinValueWords(ValueWords(value)) without its allocations: it runs once per value read.
  std::string& out = *key;
  out.clear();
  out.reserve(value.size());
  size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && IsValueBreak(value[i])) ++i;
    size_t start = i;
    while (i < value.size() && !IsValueBreak(value[i])) ++i;
    size_t b = start, e = i;
    while (b < e && value[b] == '\'') ++b;
    while (e > b && value[e - 1] == '\'') --e;
    if (e == b) continue;
    if (!out.empty()) out.push_back(' ');
    for (size_t k = b; k < e; ++k) out.push_back(KeyLower(value[k]));
  }
}

bool ValueIndex::Indexed(const std::string& key) {
  return !key.empty() && !AllValueDigits(key);
}

std::vector<ValueHint> LookupValues(
    std::string_view question,
    const std::function<std::vector<ValueHint>(const std::string&)>& find, size_t max_hints,
    const HintRelevance& relevance) {
  std::vector<ValueHint> hints;
  const std::vector<std::string> words = ValueWords(question);
  std::vector<bool> used(words.size(), false);
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  constexpr size_t kMaxPhrase = 5, kMaxColumnsPerPhrase = 3;
  for (size_t n = std::min(kMaxPhrase, words.size()); n >= 1; --n) {
    for (size_t i = 0; i + n <= words.size(); ++i) {
      if (std::any_of(used.begin() + i, used.begin() + i + n, [](bool u) { return u; })) continue;
      if (n == 1 && (text::IsStopWord(words[i]) || words[i].size() < 2 || AllValueDigits(words[i])))
        continue;
      std::string key = JoinValueWords(words, i, n);
      std::vector<ValueHint> found = find(key);
      if (found.empty() && key.size() > 2 && key.ends_with("'s")) {
        found = find(key.substr(0, key.size() - 2));  // "Copycat's race" -> Copycat
      }
      if (found.empty() && n == 1) {
        for (const std::string& v : WordVariants(key)) {
          found = find(v);
          if (!found.empty()) break;
        }
      }
      if (found.empty()) continue;
      if (relevance && found.size() > 1) {
        std::vector<std::pair<double, size_t>> order;
        for (size_t k = 0; k < found.size(); ++k) order.emplace_back(-relevance(found[k]), k);
        std::stable_sort(order.begin(), order.end());
        std::vector<ValueHint> sorted;
        for (const auto& [score, k] : order) sorted.push_back(std::move(found[k]));
        found = std::move(sorted);
      }
      size_t added = 0;
      for (ValueHint& h : found) {
        if (added == kMaxColumnsPerPhrase || hints.size() == max_hints) break;
        if (!seen.insert({h.database, h.table, h.column, h.value}).second) continue;
        hints.push_back(std::move(h));
        ++added;
      }
      std::fill(used.begin() + i, used.begin() + i + n, true);
      if (hints.size() == max_hints) return hints;
    }
  }
  return hints;
}

std::vector<std::string> WordVariants(const std::string& word) {
  std::vector<std::string> variants;
  auto add = [&variants](std::string v) {
    if (v.size() >= 3 && std::find(variants.begin(), variants.end(), v) == variants.end()) {
      variants.push_back(std::move(v));
    }
  };
  // A plural ("aliens" -> alien), or the first part of a compound
  // ("gold-eyed" -> gold, "blue-haired" -> blue).
  if (word.size() > 3 && word.ends_with("s")) add(word.substr(0, word.size() - 1));
  if (word.size() > 4 && word.ends_with("es")) add(word.substr(0, word.size() - 2));
  if (size_t dash = word.find('-'); dash != std::string::npos && dash >= 2) {
    std::string head = word.substr(0, dash);
    if (!text::IsStopWord(head)) add(head);
  }
  // Demonyms and adjectives of places that are not the place with a suffix.
  static const std::map<std::string, std::vector<std::string>> kIrregular = {
      {"french", {"france"}},
      {"dutch", {"netherlands", "the netherlands"}},
      {"british", {"united kingdom", "uk", "great britain", "britain"}},
      {"english", {"england"}},
      {"welsh", {"wales"}},
      {"scottish", {"scotland"}},
      {"irish", {"ireland"}},
      {"swiss", {"switzerland"}},
      {"greek", {"greece"}},
      {"spanish", {"spain"}},
      {"danish", {"denmark"}},
      {"swedish", {"sweden"}},
      {"finnish", {"finland"}},
      {"polish", {"poland"}},
      {"turkish", {"turkey"}},
      {"norwegian", {"norway"}},
      {"german", {"germany"}},
      {"portuguese", {"portugal"}},
      {"chinese", {"china"}},
      {"thai", {"thailand"}},
      {"filipino", {"philippines"}},
      {"peruvian", {"peru"}},
      {"american", {"united states", "usa", "america"}},
      {"arab", {"arabia"}},
      {"icelandic", {"iceland"}},
      {"flemish", {"flanders"}},
      {"belgian", {"belgium"}},
      {"argentine", {"argentina"}},
      {"argentinian", {"argentina"}},
      {"czech", {"czech republic", "czechia"}},
  };
  if (auto it = kIrregular.find(word); it != kIrregular.end()) {
    for (const std::string& v : it->second) add(v);
  }
  // Regular ones: the suffix off, and the place's ending back on
  // ("european" -> europe, "asian" -> asia, "canadian" -> canada,
  // "italian" -> italy, "japanese" -> japan, "african" -> africa,
  // "israeli" -> israel, "brazilian" -> brazil).
  if (word.size() >= 5) {
    static const char* const kSuffixes[] = {"ian", "ean", "an", "n", "ese", "ish", "i"};
    static const char* const kEndings[] = {"", "a", "e", "y", "ia"};
    for (const char* suffix : kSuffixes) {
      std::string_view sfx(suffix);
      if (!word.ends_with(sfx) || word.size() - sfx.size() < 3) continue;
      const std::string base = word.substr(0, word.size() - sfx.size());
      for (const char* ending : kEndings) add(base + ending);
    }
  }
  return variants;
}

std::vector<std::string> EditVariants(const std::string& key, size_t max) {
  if (key.empty()) return {};  // names nothing
  std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 .-'@_";
  for (char c : key) {
    if (alphabet.find(c) == std::string::npos) alphabet.push_back(c);
  }
  std::vector<std::string> out;
  std::set<std::string> seen{key};
  auto add = [&](std::string v) {
    if (out.size() < max && !v.empty() && seen.insert(v).second) out.push_back(std::move(v));
  };
  for (size_t i = 0; i < key.size(); ++i) add(key.substr(0, i) + key.substr(i + 1));
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    std::string v = key;
    std::swap(v[i], v[i + 1]);
    add(std::move(v));
  }
  for (size_t i = 0; i <= key.size(); ++i) {
    for (char c : alphabet) add(key.substr(0, i) + c + key.substr(i));
  }
  for (size_t i = 0; i < key.size(); ++i) {
    for (char c : alphabet) {
      std::string v = key;
      v[i] = c;
      add(std::move(v));
    }
  }
  return out;
}

}  // namespace querypilot
