// Scoring: execution accuracy, the way the Spider and BIRD benchmarks do it.
//
// A query's result is reduced to canonical row keys (one string per row) so
// that two results can be compared as sets (BIRD: set(pred) == set(gold)),
// as bags (Spider: multiset equality under some order of the columns, as
// Spider's own evaluator compares, and row order too when the gold SQL has
// ORDER BY), or as sets with floats compared to 9 significant digits (answers
// that differ only in the last digits of a float). As in the benchmarks'
// Python scorers, an integer and a float of the same value are equal
// (1 == 1.0); text and numbers never are ('1' != 1).
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/value.h"

struct sqlite3;

namespace querypilot::eval {

struct QueryResult {
  bool ok = false;
  bool timed_out = false;
  std::string error;                  // when !ok
  std::vector<std::string> rows;      // canonical keys, in result order
  std::vector<std::string> tolerant;  // the same rows with floats rounded
  // The result as values, for the user's comparison (Verdict::user_ok); kept
  // for results of at most kUserRows rows.
  std::vector<std::string> columns;
  std::deque<Row> values;
  bool values_kept = false;
  static constexpr size_t kUserRows = 20000;
};

// Runs `sql` on `db` (which the caller opened read-only) with the agent's
// executor and returns its rows as canonical keys. Stops with timed_out after
// `timeout_ms` of execution, and with an error past `max_rows` rows.
QueryResult ExecuteForScoring(sqlite3* db, std::string_view sql, int timeout_ms,
                              size_t max_rows = 2000000);

// True when `gold_sql` has ORDER BY (outside strings and comments): Spider's
// rule for when row order counts.
bool HasOrderBy(std::string_view gold_sql);

struct Verdict {
  bool set_ok = false;       // BIRD
  bool bag_ok = false;       // Spider: columns in any order, as many as gold's
  bool tolerant_ok = false;  // BIRD's set comparison, floats to 9 digits
  // As a user compares (agent/quality/agreement.h's CompareResults): the
  // same rows as a set, columns in any order, one extra column allowed,
  // reals to six significant digits. Not a benchmark's rule: it is what a
  // user reading the answer would call right, for the confidence's
  // calibration beside the benchmark's own comparison.
  bool user_ok = false;
};

// Compares a prediction's result with the gold result. A failed prediction
// scores false everywhere; `ordered` makes the bag comparison respect order.
Verdict Compare(const QueryResult& gold, const QueryResult& pred, bool ordered);

// The canonical key of one value, exposed for tests. `tolerant` rounds
// non-integral floats to 9 significant digits.
std::string IntegerKey(long long v);
std::string RealKey(double v, bool tolerant);
std::string TextKey(std::string_view v);
std::string BlobKey(std::string_view v);
std::string NullKey();

}  // namespace querypilot::eval
