// ValueIndex: the short text values of a database, for matching the words of
// a question before any SQL is written.
//
// "How many heroes have blue eyes?" is answered right only if the model
// writes colour = 'Blue', not 'blue'. The index holds the distinct short text
// values of every text column (read with bounded, read-only queries), keyed
// case- and space-insensitively; Lookup() matches the question's phrases of
// one to five words against it, longest first, and returns the real values
// with their columns, which the first prompt then lists.
//
// Building is lazy (on the first ask), capped in values and in time, and
// cached per connection until the schema or the data changes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/sql/executor.h"
#include "agent/knowledge/schema.h"

struct sqlite3;

namespace querypilot {

struct ValueIndexLimits {
  size_t max_values = 200000;     // values held in all
  size_t per_column = 20000;      // distinct values read per column
  size_t max_value_bytes = 64;    // longer values are prose, not names
  int budget_ms = 500;            // for the whole build
  // How a lookup past the budget stops: never by interrupting the connection.
  StopMethod stop = StopMethod::kBetweenSteps;
};

struct ValueHint {
  std::string table;
  std::string column;
  std::string value;  // as stored
};

class ValueIndex {
 public:
  ValueIndex() = default;

  // Reads the distinct short text values of every text column of the
  // schema's tables, until the limits are reached.
  static ValueIndex Build(sqlite3* db, const Schema& schema, const ValueIndexLimits& limits = {});

  // The values the question names, longest phrase first; a phrase inside a
  // longer one that matched is skipped; at most `max_hints`, and at most 3
  // columns per phrase. Stop words alone never match.
  std::vector<ValueHint> Lookup(std::string_view question, size_t max_hints = 12) const;

  size_t size() const { return entries_.size(); }
  // False when a limit stopped the build before every column was read.
  bool complete() const { return complete_; }

  // The key values are stored under: lower case, trimmed, inner runs of
  // white space as one space.
  static std::string Key(std::string_view value);

 private:
  struct Entry {
    uint32_t table;   // index into names_
    uint32_t column;  // index into names_
    std::string value;
  };
  using KeyMap = std::unordered_map<std::string, std::vector<uint32_t>>;
  KeyMap::const_iterator FindWordVariant(const std::string& word) const;

  std::vector<std::string> names_;
  std::vector<Entry> entries_;
  KeyMap by_key_;
  bool complete_ = true;
};

// A connection's ValueIndex, rebuilt when PRAGMA schema_version, PRAGMA
// data_version or the connection's own change count moves.
class ValueIndexCache {
 public:
  ValueIndexCache() = default;
  ValueIndexCache(const ValueIndexCache&) = delete;
  ValueIndexCache& operator=(const ValueIndexCache&) = delete;

  std::shared_ptr<const ValueIndex> Get(sqlite3* db, const Schema& schema,
                                        const ValueIndexLimits& limits = {});
  int64_t builds() const;  // for tests

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const ValueIndex> index_;
  int64_t schema_version_ = -1, data_version_ = -1, changes_ = -1;
  int64_t builds_ = 0;
};

}  // namespace querypilot
