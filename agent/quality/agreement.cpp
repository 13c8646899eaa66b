#include "agent/quality/agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "agent/base/text.h"

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

bool LostOnAgreement(Lost why) {
  return why == Lost::kFewerAgree || why == Lost::kTiedWithEarlier;
}

std::string LostText(Lost why, std::string_view detail) {
  switch (why) {
    case Lost::kNot:
      return "";
    case Lost::kDidNotRun:
      return "it did not run: " + std::string(detail);
    case Lost::kCriticalFinding:
      return "its result has a critical finding";
    case Lost::kExplainedAway:
      return "a note explains it away (" + std::string(detail) + ")";
    case Lost::kFewerAgree:
      return "fewer candidates agree with its result";
    case Lost::kTiedWithEarlier:
      return "as many agree with an earlier reading";
    case Lost::kNotSelected:
      return "the selection call chose another answer";
  }
  return "";
}

ConfidenceVerdict JudgeConfidence(const ConfidenceInputs& in) {
  ConfidenceVerdict out;
  // The signal: how the readings agree with the answer.
  const int others = in.ran - 1;
  ConfidenceRule start;
  if (others <= 0) {
    start = ConfidenceRule::kOneReading;
  } else if (in.agreeing == in.ran) {
    start = ConfidenceRule::kAllAgree;
  } else if (in.agreeing >= 2) {
    start = ConfidenceRule::kMostAgree;
  } else if (in.unknown == others) {
    start = ConfidenceRule::kTooBigToCompare;
  } else {
    start = ConfidenceRule::kNoOtherAgrees;
  }
  const int disagreeing = in.ran - in.agreeing - in.unknown;
  std::string detail;
  // Independent samples, where two or more compared, say more than the
  // model's own readings, which differ on purpose (eval/recordings).
  if (std::optional<ConfidenceRule> sampled = SamplesRule(in.samples, in.samples_agreeing)) {
    start = *sampled;
    const int differ = in.samples - in.samples_agreeing;
    detail = in.voted ? fmt::format("{} of {} samples give this result, chosen by their vote",
                                    in.samples_agreeing, in.samples)
             : differ == 0
                 ? fmt::format("{} of {}", in.samples_agreeing, in.samples)
                 : fmt::format("{} of {} disagree{}", differ, in.samples, differ == 1 ? "s" : "");
    if (differ > 0 && !in.other_answer.empty() && !in.voted) {
      detail +=
          fmt::format("; {} gives {}", differ == 1 ? "the other" : "another", in.other_answer);
    }
  } else if (start == ConfidenceRule::kAllAgree) {
    detail = fmt::format("{} of {}", in.agreeing, in.ran);
  } else if (start == ConfidenceRule::kTooBigToCompare) {
    detail = fmt::format("{} other{}", others, others == 1 ? "" : "s");
  } else if (start == ConfidenceRule::kMostAgree || start == ConfidenceRule::kNoOtherAgrees) {
    detail = start == ConfidenceRule::kMostAgree
                 ? fmt::format("{} of {}", in.agreeing, in.ran)
                 : fmt::format("{} of {} disagree", disagreeing, in.ran);
    if (start == ConfidenceRule::kMostAgree && disagreeing > 0) {
      detail += fmt::format(", {} disagree{}", disagreeing, disagreeing == 1 ? "s" : "");
    }
    if (in.unknown > 0) detail += fmt::format(", {} too big to compare", in.unknown);
    if (!in.other_answer.empty()) {
      detail +=
          fmt::format("; {} gives {}", disagreeing == 1 ? "the other" : "another", in.other_answer);
    }
  }
  std::vector<std::string> parts;
  auto said = [](const ConfidenceRow& row, const std::string& what) {
    return what.empty() ? std::string(row.reason) : fmt::format("{} ({})", row.reason, what);
  };
  auto joined = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  double score = ConfidenceRowOf(start).number;
  out.applied.push_back(start);
  parts.push_back(said(ConfidenceRowOf(start), detail));
  // The adjustments, in the table's order, each as often as it applies.
  for (const ConfidenceRow& row : ConfidenceRows()) {
    if (row.effect == RuleEffect::kStart) continue;
    size_t times = 0;
    std::string what;
    switch (row.rule) {
      case ConfidenceRule::kCriticalFinding:
        times = in.critical > 0 ? 1 : 0;
        what = joined(in.critical_names);
        break;
      case ConfidenceRule::kHollowNote:
        times = in.hollow ? 1 : 0;
        what = in.hollow_name;
        break;
      case ConfidenceRule::kOtherNote:
        times = in.notes;
        what = joined(in.note_names);
        break;
      case ConfidenceRule::kFromCorrection:
        times = in.answer_attempt > 1 ? 1 : 0;
        if (times) what = fmt::format("attempt {}", in.answer_attempt);
        break;
      case ConfidenceRule::kVerifiedExample:
        times = in.example_reused ? 1 : 0;
        break;
      case ConfidenceRule::kReviewAccepted:
        times = in.review == ReviewOutcome::kAccepted ? 1 : 0;
        break;
      case ConfidenceRule::kReviewNotAccepted:
        times = in.review == ReviewOutcome::kNotAccepted ? 1 : 0;
        what = text::Truncate(in.review_reasoning, 300);
        break;
      default:
        break;
    }
    if (times == 0) continue;
    out.applied.push_back(row.rule);
    if (row.effect == RuleEffect::kCap) {
      score = std::min(score, static_cast<double>(row.number));
    } else {
      score += row.number * static_cast<double>(std::min<size_t>(times, row.most));
    }
    parts.push_back(said(row, what));
  }
  if (in.critical == 0 && !in.hollow && in.notes == 0) {
    // Where no finding row applied, the reason says the checks found nothing.
    parts.insert(parts.begin() + 1, "no finding");
  }
  out.score = static_cast<int>(std::clamp(score, 0.0, 100.0));
  out.reason = out.score < kLowConfidenceBelow ? "low: " : "";
  for (size_t i = 0; i < parts.size(); ++i) out.reason += (i ? ", " : "") + parts[i];
  return out;
}

std::optional<ConfidenceRule> SamplesRule(int compared, int agreeing) {
  if (compared < 2) return std::nullopt;
  if (agreeing == compared) return ConfidenceRule::kSamplesAllAgree;
  if (agreeing >= 2) return ConfidenceRule::kSamplesMostAgree;
  return ConfidenceRule::kSamplesNoOtherAgrees;
}

std::string DescribeAnswer(const ResultRows& r) {
  if (r.complete && r.rows->size() == 1 && r.columns->size() == 1 && r.rows->front().size() == 1) {
    const Value& v = r.rows->front().front();
    switch (v.index()) {
      case 0:
        return "NULL";
      case 1:
        return std::to_string(std::get<int64_t>(v));
      case 2:
        return fmt::format("{:.6g}", std::get<double>(v));
      case 3: {
        return "'" + text::Truncate(std::get<std::string>(v), 40) + "'";
      }
      default:
        break;
    }
  }
  const size_t n = r.rows->size();
  if (!r.complete) return fmt::format("more than {} rows", n);
  return n == 0 ? "no rows" : n == 1 ? "1 row" : fmt::format("{} rows", n);
}

}  // namespace querypilot
