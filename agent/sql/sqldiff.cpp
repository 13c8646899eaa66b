#include "agent/sql/sqldiff.h"

#include <fmt/format.h>

#include <vector>

#include "agent/base/text.h"
#include "agent/sql/sqltokens.h"

namespace querypilot {
namespace {

std::string Key(const Token& t) {
  return t.kind == TokenKind::kString ? t.text : text::Lower(t.name());
}

std::string Join(const std::vector<Token>& tokens, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    bool tight = tokens[i].text == "," || tokens[i].text == ")" || tokens[i].text == "." ||
                 (i > from && (tokens[i - 1].text == "." || tokens[i - 1].text == "("));
    if (!out.empty() && !tight) out.push_back(' ');
    out += tokens[i].text;
  }
  return "'" + text::Truncate(out, 120) + "'";
}

// A run of tokens as the diff compares them (Key), one string a token.
std::vector<std::string> TokenKeys(const std::vector<Token>& tokens, size_t from, size_t to) {
  std::vector<std::string> out;
  for (size_t i = from; i < to; ++i) out.push_back(Key(tokens[i]));
  return out;
}

// One change: the tokens it replaced and those it put in their place, as
// shown (from its first place), and at how many places it was made.
struct SqlEdit {
  std::vector<std::string> before, after;
  std::string shown;
  size_t places = 1;
};

}  // namespace

std::string DiffSql(std::string_view before, std::string_view after) {
  std::vector<Token> a = TokenizeSql(before);
  std::vector<Token> b = TokenizeSql(after);
  // Trim the common prefix and suffix first: attempts usually differ in one place.
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && Key(a[pre]) == Key(b[pre])) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         Key(a[a.size() - 1 - suf]) == Key(b[b.size() - 1 - suf])) {
    ++suf;
  }
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  if (n == 0 && m == 0) return "";
  if (n * m > 4'000'000)
    return Join(a, pre, a.size() - suf) + " -> " + Join(b, pre, b.size() - suf);

  // LCS table over the middle parts.
  std::vector<std::vector<uint16_t>> lcs(n + 1, std::vector<uint16_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = Key(a[pre + i]) == Key(b[pre + j]) ? static_cast<uint16_t>(lcs[i + 1][j + 1] + 1)
                                                     : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  // The changed runs, in order. One change made at several places (a name
  // renamed wherever it occurs) is one edit, counted once per place: the diff
  // says what changed, and a run of tokens holds no position to tell its
  // places apart by.
  std::vector<SqlEdit> edits;
  auto emit = [&](size_t a0, size_t a1, size_t b0, size_t b1) {
    if (a0 == a1 && b0 == b1) return;
    SqlEdit e{TokenKeys(a, pre + a0, pre + a1), TokenKeys(b, pre + b0, pre + b1), {}, 1};
    for (SqlEdit& seen : edits) {
      if (seen.before == e.before && seen.after == e.after) {
        ++seen.places;
        return;
      }
    }
    if (a0 == a1) {
      e.shown = "+ " + Join(b, pre + b0, pre + b1);
    } else if (b0 == b1) {
      e.shown = "- " + Join(a, pre + a0, pre + a1);
    } else {
      e.shown = Join(a, pre + a0, pre + a1) + " -> " + Join(b, pre + b0, pre + b1);
    }
    edits.push_back(std::move(e));
  };
  size_t i = 0, j = 0, ri = 0, rj = 0;  // r*: start of the current changed run
  while (i < n || j < m) {
    if (i < n && j < m && Key(a[pre + i]) == Key(b[pre + j])) {
      emit(ri, i, rj, j);
      ++i;
      ++j;
      ri = i;
      rj = j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      ++j;
    } else {
      ++i;
    }
  }
  emit(ri, n, rj, m);
  std::string out;
  for (const SqlEdit& e : edits) {
    if (!out.empty()) out += "; ";
    out += e.shown;
    if (e.places > 1) out += fmt::format(" ({} places)", e.places);
  }
  return out;
}

}  // namespace querypilot
