// Shared pieces of the libFuzzer harnesses: a small fixed schema, and a
// splitter for inputs that carry several strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/text.h"
#include "agent/knowledge/schema.h"
#include "agent/providers/wire.h"

namespace querypilot::fuzz {

// customers, orders, products: the shape of sql/shop.sql.
inline const Schema& ShopSchema() {
  static const Schema schema = [] {
    Schema s;
    TableInfo customers{
        "customers",
        false,
        {{"id", "INTEGER", true}, {"name", "TEXT"}, {"email", "TEXT"}, {"country", "TEXT"}},
        {},
        {{"1", "'Ana'", "'ana@example.com'", "'Spain'"}}};
    TableInfo orders{"orders",
                     false,
                     {{"id", "INTEGER", true},
                      {"customer_id", "INTEGER"},
                      {"status", "TEXT"},
                      {"total", "REAL"}},
                     {{"customer_id", "customers", ""}},
                     {}};
    TableInfo products{
        "products", false, {{"id", "INTEGER", true}, {"name", "TEXT"}, {"price", "REAL"}}, {}, {}};
    TableInfo view{"big spenders", true, {{"name", "TEXT"}, {"spent", ""}}, {}, {}};
    s.tables = {customers, orders, products, view};
    return s;
  }();
  return schema;
}

// The input cut at each NUL byte, into at most `n` parts (the last holds the rest).
inline std::vector<std::string> Split(const uint8_t* data, size_t size, size_t n) {
  std::vector<std::string> parts;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (parts.size() + 1 < n) {
    size_t cut = in.find('\0');
    if (cut == std::string_view::npos) break;
    parts.emplace_back(in.substr(0, cut));
    in.remove_prefix(cut + 1);
  }
  parts.emplace_back(in);
  while (parts.size() < n) parts.emplace_back();
  return parts;
}

// A provider's reply: the first byte picks an HTTP status, the rest is the
// body. Every error message must be able to go straight into
// sqlite3_result_error, so it must be UTF-8.
inline int FuzzProviderReply(const uint8_t* data, size_t size,
                             Result<ChatReply> (*parse)(long, std::string_view)) {
  static const long kStatuses[] = {200, 200, 200, 201, 400, 401, 403, 404, 429, 500, 502, 503};
  if (size == 0) return 0;
  long status = kStatuses[data[0] % (sizeof(kStatuses) / sizeof(kStatuses[0]))];
  Result<ChatReply> r =
      parse(status, std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (!r.ok() && !text::IsValidUtf8(r.status().message())) __builtin_trap();
  return 0;
}

}  // namespace querypilot::fuzz
