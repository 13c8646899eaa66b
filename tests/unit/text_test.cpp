// The shared text helpers (agent/base/text.h).
#include "agent/base/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace querypilot {
namespace {

// Each of the five characters markup gives a meaning becomes its character
// reference, wherever it stands; everything else, UTF-8 included, is kept.
TEST(EscapeMarkup, TheFiveCharactersAndNothingElse) {
  struct Case {
    std::string in;
    std::string out;
  } cases[] = {
      {"&", "&amp;"},
      {"<", "&lt;"},
      {">", "&gt;"},
      {"\"", "&quot;"},
      {"'", "&#39;"},
      {"a<b & c>d \"e\" 'f'", "a&lt;b &amp; c&gt;d &quot;e&quot; &#39;f&#39;"},
      {"&amp;", "&amp;amp;"},  // already escaped text is escaped again
      {"<<>>", "&lt;&lt;&gt;&gt;"},
      {"", ""},
      {"plain text, 100% (ok) = fine; caf\xC3\xA9 \xE2\x82\xAC",
       "plain text, 100% (ok) = fine; caf\xC3\xA9 \xE2\x82\xAC"},
      {std::string("nul\0byte\n\ttab", 13), std::string("nul\0byte\n\ttab", 13)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    EXPECT_EQ(text::EscapeMarkup(c.in), c.out);
  }
}

// OneEditApart is EditDistance(a, b) == 1, on every pair of short words over
// a small alphabet (so that most pairs are near), both cases.
TEST(OneEditApart, IsEditDistanceOfOne) {
  std::vector<std::string> words = {""};
  for (size_t length = 1; length <= 4; ++length) {
    std::vector<std::string> longer;
    for (const std::string& w : words) {
      if (w.size() + 1 != length) continue;
      for (char c : {'a', 'b', 'B'}) longer.push_back(w + c);
    }
    words.insert(words.end(), longer.begin(), longer.end());
  }
  size_t ones = 0;
  for (const std::string& a : words) {
    for (const std::string& b : words) {
      const bool one = text::EditDistance(a, b) == 1;
      ones += one;
      EXPECT_EQ(text::OneEditApart(a, b), one) << a << " " << b;
    }
  }
  EXPECT_GT(ones, 1000u);
}

}  // namespace
}  // namespace querypilot
