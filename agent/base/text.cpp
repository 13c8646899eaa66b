#include "agent/base/text.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

namespace querypilot::text {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

TextNumber ReadsAsNumber(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  size_t i = b;
  if (i < e && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0, whole_digits = 0;
  bool decimal = false;
  for (; i < e && std::isdigit(static_cast<unsigned char>(s[i])); ++i) ++whole_digits;
  digits = whole_digits;
  if (i < e && s[i] == '.') {
    decimal = true;
    for (++i; i < e && std::isdigit(static_cast<unsigned char>(s[i])); ++i) ++digits;
  }
  if (digits == 0) return TextNumber::kNone;
  if (i < e && (s[i] == 'e' || s[i] == 'E')) {
    decimal = true;
    ++i;
    if (i < e && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exponent = 0;
    for (; i < e && std::isdigit(static_cast<unsigned char>(s[i])); ++i) ++exponent;
    if (exponent == 0) return TextNumber::kNone;
  }
  if (i != e) return TextNumber::kNone;
  // 18 digits always fit in 64 bits; a longer whole number is read as a REAL.
  return decimal || whole_digits > 18 ? TextNumber::kDecimal : TextNumber::kWhole;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string Truncate(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes;
  // Step back over continuation bytes so no character is split.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size() || (n == 2 && c < 0xC2) || c > 0xF4) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  if (n >= 3) {
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if (n == 3 && ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0))) return 0;
    if (n == 4 && ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))) return 0;
  }
  return n;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string EscapeMarkup(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string QuoteSqlString(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    out.push_back(c);
    if (c == '\'') out.push_back('\'');
  }
  return out + "'";
}

std::string UnquoteSqlString(std::string_view q) {
  if (q.size() < 2 || q.front() != '\'' || q.back() != '\'') return std::string(q);
  std::string out;
  for (size_t i = 1; i + 1 < q.size(); ++i) {
    out.push_back(q[i]);
    if (q[i] == '\'' && i + 2 < q.size() && q[i + 1] == '\'') ++i;
  }
  return out;
}

bool IsStopWord(std::string_view w) {
  static const std::set<std::string, std::less<>> kStop = {
      "a",     "an",        "the",     "of",     "in",     "on",      "at",         "to",
      "for",   "from",      "by",      "with",   "and",    "or",      "not",        "no",
      "is",    "are",       "was",     "were",   "be",     "been",    "has",        "have",
      "had",   "do",        "does",    "did",    "what",   "which",   "who",        "whom",
      "whose", "when",      "where",   "why",    "how",    "many",    "much",       "all",
      "any",   "each",      "every",   "some",   "list",   "show",    "give",       "find",
      "name",  "names",     "number",  "count",  "total",  "average", "percentage", "percent",
      "than",  "more",      "less",    "most",   "least",  "top",     "it",         "its",
      "their", "they",      "them",    "this",   "that",   "these",   "those",      "there",
      "as",    "if",        "between", "among",  "please", "refers",  "refer",      "hint",
      "s",     "i",         "me",      "my",     "we",     "our",     "you",        "your",
      "can",   "could",     "would",   "should", "will",   "also",    "only",       "other",
      "same",  "different", "per",     "into",   "out",    "up",      "down",       "over",
      "under", "about",     "after",   "before", "during", "yes",     "id",         "ids",
      "value", "values"};
  return kStop.find(w) != kStop.end();
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool OneEditApart(std::string_view a, std::string_view b) {
  if (a.size() < b.size()) std::swap(a, b);  // `a` the longer
  if (a.size() - b.size() > 1) return false;
  // ASCII letters compared in either case, as std::tolower does them in any
  // locale's single bytes; it is not called, since this runs in hot loops.
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  auto same = [&lower](std::string_view x, std::string_view y) {
    for (size_t k = 0; k < x.size(); ++k) {
      if (lower(x[k]) != lower(y[k])) return false;
    }
    return true;
  };
  size_t i = 0;
  while (i < b.size() && same(a.substr(i, 1), b.substr(i, 1))) ++i;
  if (i == b.size()) return a.size() != b.size();  // one letter added at the end, or none
  // At the first difference a letter was changed (sizes equal) or added to
  // `a`; past it, the rest is the same.
  return a.size() == b.size() ? same(a.substr(i + 1), b.substr(i + 1))
                              : same(a.substr(i + 1), b.substr(i));
}

}  // namespace querypilot::text
