#include "agent/prompt/extract.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "agent/base/text.h"

namespace querypilot {
namespace {

using text::Lower;
using text::Trim;

// Removes <think>...</think> blocks (reasoning models put their thoughts there).
std::string StripThinking(std::string_view reply) {
  std::string out(reply);
  for (;;) {
    size_t open = out.find("<think>");
    if (open == std::string::npos) break;
    size_t close = out.find("</think>", open);
    if (close == std::string::npos) {
      out.erase(open);
      break;
    }
    out.erase(open, close + 8 - open);
  }
  // A reply may also start mid-thought with a lone closing tag.
  if (size_t close = out.find("</think>"); close != std::string::npos) out.erase(0, close + 8);
  return out;
}

struct Fence {
  std::string lang;
  std::string body;
};

// All ``` fenced blocks, in order. An unterminated last fence runs to the end.
std::vector<Fence> FencedBlocks(const std::string& text) {
  std::vector<Fence> blocks;
  size_t pos = 0;
  while ((pos = text.find("```", pos)) != std::string::npos) {
    size_t line_end = text.find('\n', pos + 3);
    if (line_end == std::string::npos) break;
    Fence f;
    f.lang = Lower(Trim(std::string_view(text).substr(pos + 3, line_end - pos - 3)));
    size_t close = text.find("```", line_end + 1);
    f.body = text.substr(line_end + 1,
                         (close == std::string::npos ? text.size() : close) - line_end - 1);
    blocks.push_back(std::move(f));
    if (close == std::string::npos) break;
    pos = close + 3;
  }
  return blocks;
}

bool StartsWithSqlKeyword(std::string_view s) {
  std::string head = Lower(s.substr(0, std::min<size_t>(s.size(), 12)));
  for (const char* kw : {"select", "with", "values", "insert", "update", "delete", "create", "drop",
                         "alter", "pragma", "attach", "detach", "replace", "vacuum", "explain",
                         "begin", "reindex", "analyze", "("}) {
    size_t n = std::char_traits<char>::length(kw);
    if (head.size() >= n && head.compare(0, n, kw) == 0 &&
        (n == 1 || head.size() == n || !std::isalnum(static_cast<unsigned char>(head[n])))) {
      return true;
    }
  }
  return false;
}

// {"sql": "..."} anywhere in the text, possibly with prose around it.
std::optional<std::string> SqlFromJson(const std::string& text) {
  size_t open = text.find('{');
  size_t close = text.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  auto j = nlohmann::json::parse(text.substr(open, close - open + 1), nullptr,
                                 /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  for (const char* key : {"sql", "SQL", "query"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  return std::nullopt;
}

// Drops a leading "SQL:" / "Query:" label and trailing semicolons and space.
std::string Clean(std::string_view s) {
  std::string t = Trim(s);
  for (const char* label : {"sql:", "query:", "sqlite:"}) {
    size_t n = std::char_traits<char>::length(label);
    if (t.size() > n && Lower(t.substr(0, n)) == label) {
      t = Trim(std::string_view(t).substr(n));
      break;
    }
  }
  while (!t.empty() && (t.back() == ';' || std::isspace(static_cast<unsigned char>(t.back())))) {
    t.pop_back();
  }
  return t;
}

// In prose without fences: the text from the first line that starts with a SQL
// keyword up to the first blank line or the end of the statement.
std::optional<std::string> SqlFromProse(const std::string& text) {
  size_t line_start = 0;
  while (line_start <= text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string line = Trim(std::string_view(text).substr(line_start, line_end - line_start));
    if (StartsWithSqlKeyword(line)) {
      size_t end = text.find("\n\n", line_start);
      std::string sql =
          text.substr(line_start, end == std::string::npos ? std::string::npos : end - line_start);
      // Stop after the first ';' outside quotes: prose may follow on the same block.
      char quote = 0;
      for (size_t i = 0; i < sql.size(); ++i) {
        char c = sql[i];
        if (quote) {
          if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"' || c == '`') {
          quote = c;
        } else if (c == ';') {
          // Keep whatever follows if it is itself SQL (the critic must see it).
          std::string rest = Trim(std::string_view(sql).substr(i + 1));
          if (!StartsWithSqlKeyword(rest)) sql.resize(i);
          break;
        }
      }
      return sql;
    }
    if (line_end == text.size()) break;
    line_start = line_end + 1;
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> ExtractSql(std::string_view reply) {
  std::string text = StripThinking(reply);
  if (Trim(text).empty()) return Status(ErrorKind::kNoSql, "the model's reply was empty");

  std::vector<Fence> blocks = FencedBlocks(text);
  // The last ```sql block wins: models often show a draft, then the final query.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (it->lang == "sql" || it->lang == "sqlite") {
      std::string sql = Clean(it->body);
      if (!sql.empty()) return sql;
    }
  }
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (it->lang == "json") {
      if (auto sql = SqlFromJson(it->body)) {
        std::string s = Clean(*sql);
        if (!s.empty()) return s;
      }
    }
  }
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    std::string body = Clean(it->body);
    if (StartsWithSqlKeyword(body)) return body;
  }
  if (auto sql = SqlFromJson(text)) {
    std::string s = Clean(*sql);
    if (!s.empty()) return s;
  }
  std::string whole = Clean(text);
  if (StartsWithSqlKeyword(whole)) return whole;
  if (auto sql = SqlFromProse(text)) {
    std::string s = Clean(*sql);
    if (!s.empty()) return s;
  }
  return Status(ErrorKind::kNoSql,
                "the model's reply held no SQL: \"" + text::Truncate(Trim(text), 160) + "\"");
}

Result<std::vector<std::string>> ExtractCandidates(std::string_view reply, size_t max) {
  std::vector<std::string> out;
  if (max > 1) {
    for (const Fence& f : FencedBlocks(StripThinking(reply))) {
      if (f.lang != "sql" && f.lang != "sqlite") continue;
      std::string sql = Clean(f.body);
      if (sql.empty()) continue;
      out.push_back(std::move(sql));
      if (out.size() == max) break;
    }
  }
  if (out.empty()) {
    Result<std::string> one = ExtractSql(reply);
    if (!one.ok()) return one.status();
    out.push_back(std::move(one).value());
  }
  return out;
}

}  // namespace querypilot

namespace querypilot {

std::vector<std::string> ExtractClarification(std::string_view reply) {
  constexpr size_t kMaxQuestions = 5;
  constexpr size_t kMaxBytes = 300;
  std::string text = StripThinking(reply);
  std::vector<std::string> raw;
  for (const Fence& f : FencedBlocks(text)) {
    if (f.lang != "clarify" && f.lang != "clarification") continue;
    size_t start = 0;
    while (start <= f.body.size()) {
      size_t end = f.body.find('\n', start);
      if (end == std::string::npos) end = f.body.size();
      raw.emplace_back(f.body.substr(start, end - start));
      start = end + 1;
    }
  }
  if (raw.empty()) {
    std::string body = Trim(text);
    if (!body.empty() && body.front() == '{') {
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_object()) {
        for (const char* key : {"clarify", "clarification", "clarifications"}) {
          auto it = j.find(key);
          if (it == j.end()) continue;
          if (it->is_string()) raw.push_back(it->get<std::string>());
          if (it->is_array()) {
            for (const auto& q : *it) {
              if (q.is_string()) raw.push_back(q.get<std::string>());
            }
          }
        }
      }
    }
  }
  std::vector<std::string> out;
  for (std::string& line : raw) {
    std::string q = Trim(line);
    // List marks: "- ", "* ", "1. ", "2) ".
    size_t i = 0;
    while (i < q.size() && std::isdigit(static_cast<unsigned char>(q[i]))) ++i;
    if (i > 0 && i < q.size() && (q[i] == '.' || q[i] == ')')) {
      q = Trim(std::string_view(q).substr(i + 1));
    } else if (!q.empty() && (q[0] == '-' || q[0] == '*')) {
      q = Trim(std::string_view(q).substr(1));
    }
    if (q.empty()) continue;
    out.push_back(text::ToValidUtf8(text::Truncate(q, kMaxBytes)));
    if (out.size() == kMaxQuestions) break;
  }
  return out;
}

}  // namespace querypilot
