#include "agent/sql/sqltokens.h"

#include <cctype>

#include "agent/base/schema_model.h"

namespace querypilot {
namespace {

bool IsIdentStart(unsigned char c) {
  return std::isalpha(c) || c == '_' || c >= 0x80;
}
bool IsIdentChar(unsigned char c) {
  return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

}  // namespace

std::string Token::name() const {
  if (kind != TokenKind::kQuotedIdentifier || text.size() < 2) return text;
  char close = text.front() == '[' ? ']' : text.front();
  std::string out;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    out.push_back(text[i]);
    if (text[i] == close && close != ']' && i + 2 < text.size() && text[i + 1] == close) ++i;
  }
  return out;
}

std::vector<Token> TokenizeSql(std::string_view sql) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = sql.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(sql[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (c == '-' && i + 1 < n && sql[i + 1] == '-') {
      while (i < n && sql[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
      size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
    } else if (c == '\'' || c == '"' || c == '`' || c == '[') {
      char close = c == '[' ? ']' : static_cast<char>(c);
      size_t j = i + 1;
      while (j < n) {
        if (sql[j] == close) {
          if (close != ']' && j + 1 < n && sql[j + 1] == close) {
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      size_t end = j < n ? j + 1 : n;
      out.push_back({c == '\'' ? TokenKind::kString : TokenKind::kQuotedIdentifier,
                     std::string(sql.substr(i, end - i))});
      i = end;
    } else if (std::isdigit(c) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(sql[i + 1])))) {
      size_t j = i;
      while (j < n &&
             (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '.' ||
              ((sql[j] == '+' || sql[j] == '-') && (sql[j - 1] == 'e' || sql[j - 1] == 'E')))) {
        ++j;
      }
      out.push_back({TokenKind::kNumber, std::string(sql.substr(i, j - i))});
      i = j;
    } else if (IsIdentStart(c)) {
      size_t j = i;
      while (j < n && IsIdentChar(static_cast<unsigned char>(sql[j]))) ++j;
      out.push_back({TokenKind::kWord, std::string(sql.substr(i, j - i))});
      i = j;
    } else {
      // Two-character operators stay together.
      static constexpr std::string_view kTwo[] = {
          "<=", ">=", "<>", "!=", "==", "||", "<<", ">>", "->"};
      size_t len = 1;
      for (auto op : kTwo) {
        if (sql.substr(i, 2) == op) {
          len = 2;
          if (op == "->" && i + 2 < n && sql[i + 2] == '>') len = 3;
          break;
        }
      }
      out.push_back({TokenKind::kPunct, std::string(sql.substr(i, len))});
      i += len;
    }
  }
  return out;
}

std::string NormaliseSql(std::string_view sql) {
  std::vector<Token> tokens = TokenizeSql(sql);
  while (!tokens.empty() && tokens.back().kind == TokenKind::kPunct && tokens.back().text == ";") {
    tokens.pop_back();
  }
  // SQLite folds the case of ASCII letters only, in keywords and identifiers.
  auto fold = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
  };
  std::string out;
  for (const Token& t : tokens) {
    if (!out.empty()) out.push_back(' ');
    const bool keyword = t.kind == TokenKind::kWord && IsSqliteKeyword(t.text);
    if (t.kind == TokenKind::kString) {
      out += t.text;
    } else if (t.kind == TokenKind::kQuotedIdentifier || (t.kind == TokenKind::kWord && !keyword)) {
      // One spelling for an identifier however it was quoted: "Name", [name],
      // `name` and name are the same. Written double-quoted, so a keyword
      // (bare, below) never equals an identifier of the same letters.
      std::string name = fold(t.name());
      out.push_back('"');
      for (char c : name) {
        out.push_back(c);
        if (c == '"') out.push_back('"');
      }
      out.push_back('"');
    } else {
      out += fold(t.text);
    }
  }
  return out;
}

}  // namespace querypilot
