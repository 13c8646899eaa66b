// A small SQL tokenizer for analysis, not for execution.
//
// It splits SQLite SQL into identifiers (bare or quoted), string literals,
// numbers and punctuation, and drops white space and comments. The agent uses
// it to compare attempts, find table aliases for hints, and normalise SQL; it
// is never used to decide whether SQL is safe (SQLite decides that).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace querypilot {

enum class TokenKind { kWord, kQuotedIdentifier, kString, kNumber, kPunct };

struct Token {
  TokenKind kind;
  std::string text;  // as written, quotes included
  // For words and quoted identifiers: the name without quotes.
  std::string name() const;
};

std::vector<Token> TokenizeSql(std::string_view sql);

// The SQL in a canonical form for comparing attempts: two texts normalise
// alike when SQLite would read the same tokens from them. Comments, white
// space and trailing semicolons are dropped; keywords are lower-cased and
// left bare; every identifier, quoted ("x", [x], `x`) or not, is written
// double-quoted and case-folded (ASCII, as SQLite folds names), so a bare
// keyword never equals the identifier of the same letters (i.order is not
// i."order"); string literals and numbers are kept as written (numbers
// case-folded). A bare keyword that SQLite would read as a name in its place
// (t.key) still differs from the quoted name: at worst one more attempt,
// never a correction taken for a repeat.
std::string NormaliseSql(std::string_view sql);

}  // namespace querypilot
