// Small text helpers shared by the agent's pure modules.
#pragma once

#include <string>
#include <string_view>

namespace querypilot::text {

// `s` without leading and trailing ASCII white space.
std::string Trim(std::string_view s);

// ASCII lower case (SQL identifiers and keywords compare this way in SQLite).
std::string Lower(std::string_view s);

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

inline bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// At most `max_bytes` bytes of `s`, cut on a UTF-8 character boundary, with
// "..." appended when anything was cut.
std::string Truncate(std::string_view s, size_t max_bytes);

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when the
// bytes there are not one (overlong, surrogate, out of range, cut short).
size_t Utf8SequenceLength(std::string_view s, size_t i);

// True when `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// `s` with each byte that does not start a well-formed UTF-8 sequence
// replaced by U+FFFD, so that it can go into an error message.
std::string ToValidUtf8(std::string_view s);

// `s` with & < > " and ' written as the character references &amp; &lt;
// &gt; &quot; and &#39;, every other byte as it is: safe as the text of an
// HTML or XML element and inside an attribute value of either quote.
std::string EscapeMarkup(std::string_view s);

// `s` as a SQL string literal: it's -> 'it''s'.
std::string QuoteSqlString(std::string_view s);

// The text of a SQL string literal: 'it''s' -> it's. Input without the
// surrounding single quotes is returned as it is.
std::string UnquoteSqlString(std::string_view quoted);

// True for common English words that name nothing in a database ("the",
// "how", "many", "list", ...), given in lower case.
bool IsStopWord(std::string_view word);

// What a number written as text reads as: a decimal number (an optional
// sign, digits with an optional '.', an optional exponent), white space
// around it allowed, as SQLite's CAST reads it: kWhole ("370", "-12"; fits
// in 64 bits), kDecimal ("12.5", "1e3", a whole number too big for 64 bits),
// kNone for anything else ("", "12a", "0x1A", "inf", "1,000").
enum class TextNumber { kNone, kWhole, kDecimal };
TextNumber ReadsAsNumber(std::string_view s);

// Levenshtein distance, case-insensitive.
size_t EditDistance(std::string_view a, std::string_view b);

// Whether EditDistance(a, b) == 1 (one letter added, taken out or changed,
// case-insensitive), found in one pass and no allocation: the check linking
// makes against every word of a schema.
bool OneEditApart(std::string_view a, std::string_view b);

}  // namespace querypilot::text
