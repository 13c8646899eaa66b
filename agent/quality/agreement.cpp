#include "agent/quality/agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace querypilot {
namespace {

// One value as a user reads it: 1 and 1.0 alike, reals to six significant
// digits, text and numbers never alike.
std::string Key(const Value& v) {
  switch (v.index()) {
    case 0:
      return "n";
    case 1:
      return fmt::format("r{:.6g}", static_cast<double>(std::get<int64_t>(v)));
    case 2: {
      const double d = std::get<double>(v);
      if (std::isnan(d)) return "n";
      return fmt::format("r{:.6g}", d == 0 ? 0.0 : d);
    }
    case 3:
      return "t" + std::get<std::string>(v);
    default:
      return "b" + std::get<Blob>(v).bytes;
  }
}

using Keys = std::vector<std::vector<std::string>>;  // [row][column]

Keys KeysOf(const std::deque<Row>& rows) {
  Keys out;
  out.reserve(rows.size());
  for (const Row& r : rows) {
    std::vector<std::string> k;
    k.reserve(r.size());
    for (const Value& v : r) k.push_back(Key(v));
    out.push_back(std::move(k));
  }
  return out;
}

std::set<std::string> ColumnSet(const Keys& rows, size_t c) {
  std::set<std::string> s;
  for (const auto& r : rows) s.insert(r[c]);
  return s;
}

std::string Joined(const std::vector<std::string>& row, const std::vector<size_t>& columns) {
  std::string out;
  for (size_t c : columns) {
    out += row[c];
    out += '\x1f';
  }
  return out;
}

// How rows are compared: as lists in order (results read only in part), as
// sets (as a user reads them), or as bags (each row as often).
enum class RowsAs { kList, kSet, kBag };

// Whether `narrow`'s columns, each matched to a distinct column of `wide`
// whose values are the same set, give the same rows.
bool SameRows(const Keys& narrow, size_t n_cols, const Keys& wide, size_t w_cols, RowsAs as) {
  const bool ordered = as == RowsAs::kList;
  std::vector<std::set<std::string>> wide_sets(w_cols);
  for (size_t c = 0; c < w_cols; ++c) wide_sets[c] = ColumnSet(wide, c);
  std::vector<std::vector<size_t>> options(n_cols);
  for (size_t c = 0; c < n_cols; ++c) {
    const std::set<std::string> mine = ColumnSet(narrow, c);
    for (size_t w = 0; w < w_cols; ++w) {
      if (wide_sets[w] == mine) options[c].push_back(w);
    }
    if (options[c].empty()) return false;
  }
  std::vector<size_t> own(n_cols);
  for (size_t c = 0; c < n_cols; ++c) own[c] = c;
  std::set<std::string> narrow_rows;
  std::vector<std::string> narrow_list;
  for (const auto& r : narrow) {
    if (as == RowsAs::kSet)
      narrow_rows.insert(Joined(r, own));
    else
      narrow_list.push_back(Joined(r, own));
  }
  if (as == RowsAs::kBag) std::sort(narrow_list.begin(), narrow_list.end());
  // Each assignment of columns is tried (few columns have the same values;
  // the search stops after a bounded number of tries).
  std::vector<size_t> mapping(n_cols);
  std::vector<bool> used(w_cols, false);
  int tries = 0;
  std::function<bool(size_t)> assign = [&](size_t c) -> bool {
    if (c == n_cols) {
      if (++tries > 64) return false;
      if (ordered) {
        for (size_t i = 0; i < wide.size(); ++i) {
          if (Joined(wide[i], mapping) != narrow_list[i]) return false;
        }
        return true;
      }
      if (as == RowsAs::kBag) {
        std::vector<std::string> wide_list;
        for (const auto& r : wide) wide_list.push_back(Joined(r, mapping));
        std::sort(wide_list.begin(), wide_list.end());
        return wide_list == narrow_list;
      }
      std::set<std::string> wide_rows;
      for (const auto& r : wide) wide_rows.insert(Joined(r, mapping));
      return wide_rows == narrow_rows;
    }
    for (size_t w : options[c]) {
      if (used[w]) continue;
      used[w] = true;
      mapping[c] = w;
      if (assign(c + 1)) return true;
      used[w] = false;
      if (tries > 64) return false;
    }
    return false;
  };
  return assign(0);
}

}  // namespace

Agreement CompareResults(const ResultRows& a, const ResultRows& b) {
  size_t a_cols = a.columns->size(), b_cols = b.columns->size();
  const bool a_narrow = a_cols <= b_cols;
  const ResultRows& narrow = a_narrow ? a : b;
  const ResultRows& wide = a_narrow ? b : a;
  const size_t n_cols = std::min(a_cols, b_cols), w_cols = std::max(a_cols, b_cols);
  if (w_cols > n_cols + 1 || n_cols == 0) return Agreement::kDifferent;
  Keys nk = KeysOf(*narrow.rows), wk = KeysOf(*wide.rows);
  if (narrow.complete && wide.complete) {
    return SameRows(nk, n_cols, wk, w_cols, RowsAs::kSet) ? Agreement::kSame
                                                          : Agreement::kDifferent;
  }
  // Read in part: the same first rows, in the same order, are taken as the
  // same answer (the same query written another way); anything else cannot
  // be told from the rows read.
  if (!narrow.complete && !wide.complete && nk.size() == wk.size() && !nk.empty() &&
      SameRows(nk, n_cols, wk, w_cols, RowsAs::kList)) {
    return Agreement::kSame;
  }
  return Agreement::kUnknown;
}

bool SameExactly(const ResultRows& a, const ResultRows& b) {
  const size_t cols = a.columns->size();
  if (!a.complete || !b.complete || cols == 0 || b.columns->size() != cols ||
      a.rows->size() != b.rows->size()) {
    return false;
  }
  return SameRows(KeysOf(*a.rows), cols, KeysOf(*b.rows), cols, RowsAs::kBag);
}

int Confidence(const ConfidenceInputs& in) {
  // The base is what agreement says, measured on published systems' answers
  // to the same questions (README: "How sure"): an answer every reading
  // gives is right far more often than one no other reading gives.
  double score;
  const int others = in.ran - 1;
  if (others <= 0) {
    score = 70;  // one reading: the model saw no other
  } else if (in.agreeing == in.ran) {
    score = 90;  // every reading gives it
  } else if (in.agreeing >= 2) {
    score = 60;  // more readings give it than any other answer
  } else if (in.unknown == others) {
    score = 55;  // too big to compare
  } else {
    score = 30;  // no other reading gives it
  }
  // Independent replies that all give the answer say more than the model's
  // own alternatives, which differ on purpose.
  score = std::max(score, static_cast<double>(in.samples_floor));
  if (in.critical > 0) score = std::min(score, 15.0);
  if (in.hollow) score -= 25;
  score -= 10.0 * static_cast<double>(std::min<size_t>(in.notes, 2));
  if (in.answer_attempt > 1) score -= 15;
  if (in.example_reused) score += 10;
  score = std::min(score, static_cast<double>(in.samples_cap));
  return static_cast<int>(std::clamp(score, 0.0, 100.0));
}

}  // namespace querypilot
