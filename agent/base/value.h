// Value and Row: one result cell and one result row, owned.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace querypilot {

struct Blob {
  std::string bytes;
};

// NULL, INTEGER, REAL, TEXT, BLOB: SQLite's five storage classes.
using Value = std::variant<std::monostate, int64_t, double, std::string, Blob>;
using Row = std::vector<Value>;

// One row as a JSON object keyed by column name, in column order.
// REAL uses the shortest text that reads back to the same double; an
// infinity is 9.0e+999 (-9.0e+999), as SQLite's json functions write it, and
// NaN is null; text that is not valid UTF-8 has each bad byte
// replaced by U+FFFD; BLOBs become lower-case hex strings. `names` should come
// from UniqueColumnNames() so that no value is hidden by a repeated key.
std::string RowToJson(const std::vector<std::string>& names, const Row& row);
// The same, appended to `out` (so that a caller can reuse one buffer).
void AppendRowJson(std::string& out, const std::vector<std::string>& names, const Row& row);

// Column names made unique for JSON keys: a repeat gets a suffix ("total:1"),
// an empty name becomes "columnN".
std::vector<std::string> UniqueColumnNames(const std::vector<std::string>& names);

// A JSON string literal of `s` (quotes included), with the same UTF-8 repair.
void AppendJsonString(std::string& out, std::string_view s);

// The parts AppendRowJson writes, for a caller that reads values straight
// from a statement: each member's key with its separator ('{"id":',
// ',"name":'), and one value of each storage class as AppendRowJson writes it.
std::vector<std::string> JsonMemberKeys(const std::vector<std::string>& names);
void AppendJsonInteger(std::string& out, int64_t v);
void AppendJsonReal(std::string& out, double v);
void AppendJsonHex(std::string& out, std::string_view bytes);

}  // namespace querypilot
