// Agreement: candidate answers to one question compared as a user compares
// them, the one to return picked, and how sure QueryPilot is of it.
//
// A model may answer with more than one query (the `candidates` setting):
// the most likely reading first, then readings or ways of computing it that
// could give a different answer. Each runs under the same checks and limits
// (agent/sql/verified.h) and its result is checked (result_check.h). Where
// independent answers agree, the answer is more often right; where they do
// not, the findings and the majority decide, and the confidence says so.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "agent/base/value.h"

namespace querypilot {

// A result as far as it was read.
struct ResultRows {
  const std::vector<std::string>* columns = nullptr;
  const std::deque<Row>* rows = nullptr;
  bool complete = false;  // every row was read
};

enum class Agreement {
  kSame,       // the same answer
  kDifferent,  // another answer
  kUnknown,    // too big to tell from the rows read
};

// Compares two results as a user would: the same rows as a set, in any
// column order, one result allowed one column more than the other (a count
// shown beside the names asked for), an integer equal to the same real, and
// reals equal to six significant digits. Results read only in part are the
// same when their first rows are, in order; else unknown.
Agreement CompareResults(const ResultRows& a, const ResultRows& b);

// Whether two results agree to the letter: read whole, as many columns, the
// same rows as a bag (each row as often), columns in any order. Of readings
// that give the same answer, the one most others reproduce exactly is the
// one returned: an extra column or a repeated row few readings share is
// likelier an accident of how it was written than what was asked.
bool SameExactly(const ResultRows& a, const ResultRows& b);

// What the checks found of one candidate.
struct CandidateOutcome {
  bool ran = false;     // it passed the checks and ran (or started streaming)
  size_t critical = 0;  // critical findings on its result
  bool hollow = false;  // a note explains it away (FindingRow::hollow)
  std::string hollow_name;
  std::string failure;  // why it did not run, when it did not
};

struct Pick {
  size_t index = 0;  // the candidate returned
  // Per candidate: why it was not returned ("" for the one returned and for
  // those that gave the same answer).
  std::vector<std::string> lost;
  // Candidates that ran and gave the returned answer, itself included.
  int agreeing = 0;
  // Candidates that ran and whose answer could not be compared with it.
  int unknown = 0;
  // Candidates that ran.
  int ran = 0;
  // More than one answer was left once findings had spoken: the pick was
  // made by the majority or, in a tie, by the reading's order.
  bool contested = false;
};

// The candidate to return: one that ran; of those, one with no critical
// finding; of those, one no note explains away; then the one most others
// agree with; then the earliest (the model's most likely reading). Of the
// readings that give that answer, the one most of them reproduce exactly
// (`exact(i, j)`, SameExactly), the earliest in a tie.
// `agree(i, j)` compares candidates i and j. With none that ran, index 0.
template <typename Compare, typename Exact>
Pick PickCandidate(const std::vector<CandidateOutcome>& c, Compare agree, Exact exact);
template <typename Compare>
Pick PickCandidate(const std::vector<CandidateOutcome>& c, Compare agree) {
  return PickCandidate(c, agree, [](size_t, size_t) { return false; });
}

// What the confidence of an answer is computed from.
struct ConfidenceInputs {
  int ran = 1;       // candidates that ran
  int agreeing = 1;  // of those, with the returned answer's result
  int unknown = 0;   // of those, not comparable with it
  bool contested = false;
  size_t critical = 0;  // critical findings on the returned result
  size_t notes = 0;     // notes on it (slow scans and facts not counted)
  bool hollow = false;  // a note explains it away
  int answer_attempt = 1;
  bool example_reused = false;  // its SQL is a verified example's
  // What independent samples say (samples.h: kSampleRows' row for the
  // verdict): the agreement score is raised to the floor before findings
  // take from it, and the score is capped after. 0 and 100 with no samples.
  int samples_floor = 0;
  int samples_cap = 100;
};

// 0..100: how often an answer like this one was right, on data the rules
// were not tuned on (README: "How sure"). Agreement between independent
// readings counts most; findings and retries take from it.
int Confidence(const ConfidenceInputs& in);

// --- template definition -----------------------------------------------------

template <typename Compare, typename Exact>
Pick PickCandidate(const std::vector<CandidateOutcome>& c, Compare agree, Exact exact) {
  Pick pick;
  pick.lost.assign(c.size(), "");
  std::vector<size_t> left;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].ran) {
      left.push_back(i);
      ++pick.ran;
    } else {
      pick.lost[i] = "it did not run: " + c[i].failure;
    }
  }
  if (left.empty()) return pick;
  auto keep_if = [&](auto pred, auto reason) {
    std::vector<size_t> kept;
    for (size_t i : left)
      if (pred(i)) kept.push_back(i);
    if (kept.empty() || kept.size() == left.size()) return;
    for (size_t i : left)
      if (!pred(i)) pick.lost[i] = reason(i);
    left = std::move(kept);
  };
  keep_if([&](size_t i) { return c[i].critical == 0; },
          [&](size_t) { return std::string("its result has a critical finding"); });
  keep_if([&](size_t i) { return !c[i].hollow; },
          [&](size_t i) { return "a note explains it away (" + c[i].hollow_name + ")"; });
  // The majority of what is left; a tie goes to the earliest reading.
  size_t best = left.front();
  int best_votes = -1;
  std::vector<int> votes(c.size(), 0);
  for (size_t i : left) {
    for (size_t j : left) votes[i] += i == j || agree(i, j) == Agreement::kSame;
    if (votes[i] > best_votes) {
      best = i;
      best_votes = votes[i];
    }
  }
  // Of the readings that give that answer, the one most reproduce exactly.
  std::vector<size_t> same;
  for (size_t i : left) {
    if (i == best || agree(i, best) == Agreement::kSame) same.push_back(i);
  }
  int best_exact = -1;
  for (size_t i : same) {
    int n = 0;
    for (size_t j : same) n += i == j || exact(i, j);
    if (n > best_exact) {
      best_exact = n;
      pick.index = i;
    }
  }
  // Agreement is not transitive (one extra column allowed): the majority
  // is counted around the answer picked.
  if (pick.index != best) {
    int votes_here = 0;
    for (size_t j : left) votes_here += j == pick.index || agree(pick.index, j) == Agreement::kSame;
    if (votes_here < best_votes) pick.index = best;
  }
  best = pick.index;
  for (size_t i : left) {
    if (i == best) continue;
    if (agree(i, best) == Agreement::kSame) continue;
    pick.contested = true;
    pick.lost[i] = votes[i] < best_votes ? "fewer candidates agree with its result"
                                         : "as many agree with an earlier reading";
  }
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c[i].ran) continue;
    const Agreement a = i == best ? Agreement::kSame : agree(i, best);
    pick.agreeing += a == Agreement::kSame;
    pick.unknown += a == Agreement::kUnknown;
  }
  return pick;
}

}  // namespace querypilot
