#include <charconv>
#include <cmath>
#include <set>

#include "agent/base/text.h"
#include "agent/base/value.h"

namespace querypilot {
namespace {}  // namespace

std::vector<std::string> UniqueColumnNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> used;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name = names[i].empty() ? "column" + std::to_string(i + 1) : names[i];
    for (int k = 1; !used.insert(name).second; ++k) name = names[i] + ":" + std::to_string(k);
    out.push_back(std::move(name));
  }
  return out;
}

void AppendJsonString(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied as they are
  auto flush = [&](size_t end) {
    if (end > run) out.append(s.data() + run, end - run);
  };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t n = text::Utf8SequenceLength(s, i);
      if (n > 0) {
        i += n;  // valid UTF-8 stays in the run
        continue;
      }
      flush(i);
      out += "\xEF\xBF\xBD";  // U+FFFD
      run = ++i;
      continue;
    }
    flush(i);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
    run = ++i;
  }
  flush(s.size());
  out.push_back('"');
}

std::string RowToJson(const std::vector<std::string>& names, const Row& row) {
  std::string out;
  AppendRowJson(out, names, row);
  return out;
}

std::vector<std::string> JsonMemberKeys(const std::vector<std::string>& names) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string key(i ? "," : "{");
    AppendJsonString(key, names[i]);
    key.push_back(':');
    keys.push_back(std::move(key));
  }
  return keys;
}

void AppendJsonInteger(std::string& out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(p - buf));
}

void AppendJsonReal(std::string& out, double v) {
  // JSON has no Infinity. SQLite's own json functions (3.45 on) write an
  // infinity as 9.0e+999, a number every JSON reader accepts and reads back
  // as infinity (SQLite's ->> included, so row ->> '$.x' equals an answer
  // table's x); NaN, which SQLite never stores (it becomes NULL), as null.
  if (std::isnan(v)) {
    out += "null";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-9.0e+999" : "9.0e+999";
    return;
  }
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string_view num(buf, static_cast<size_t>(p - buf));
  out += num;
  if (num.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void AppendJsonHex(std::string& out, std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  out.push_back('"');
}

void AppendRowJson(std::string& out, const std::vector<std::string>& names, const Row& row) {
  out.push_back('{');
  for (size_t i = 0; i < row.size(); ++i) {
    if (i) out.push_back(',');
    if (i < names.size()) {
      AppendJsonString(out, names[i]);
    } else {
      AppendJsonString(out, "column" + std::to_string(i + 1));
    }
    out.push_back(':');
    const Value& v = row[i];
    if (std::holds_alternative<std::monostate>(v)) {
      out += "null";
    } else if (auto* iv = std::get_if<int64_t>(&v)) {
      AppendJsonInteger(out, *iv);
    } else if (auto* dv = std::get_if<double>(&v)) {
      AppendJsonReal(out, *dv);
    } else if (auto* sv = std::get_if<std::string>(&v)) {
      AppendJsonString(out, *sv);
    } else {
      AppendJsonHex(out, std::get<Blob>(v).bytes);
    }
  }
  out.push_back('}');
}

}  // namespace querypilot
