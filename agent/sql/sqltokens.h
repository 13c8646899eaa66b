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

// The SQL in a canonical form for comparing attempts: comments and extra
// white space removed, everything but string literals lower-cased, no
// trailing semicolon.
std::string NormaliseSql(std::string_view sql);

}  // namespace querypilot
