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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/confidence.h"
#include "agent/base/value.h"
#include "agent/quality/review.h"

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
};

// Why a candidate was not returned. Code branches on the value; its text
// (LostText) is what agent_runs.alternatives shows.
enum class Lost {
  kNot,              // the one returned, or one that gave the same answer
  kDidNotRun,        // it failed the checks or SQLite's run
  kCriticalFinding,  // its result has a critical finding
  kExplainedAway,    // a note explains its answer away (FindingRow::hollow)
  kFewerAgree,       // fewer candidates agree with its result
  kTiedWithEarlier,  // as many agree with an earlier reading
  kNotSelected,      // the selection call (candidate_select) chose another answer
};

// True for the reasons that leave an answer in contention: it lost on the
// count of agreeing readings alone, so a selection call may still choose it.
bool LostOnAgreement(Lost why);

// The reason as a user reads it. `detail` completes kDidNotRun (the
// failure) and kExplainedAway (the note's name); the rest ignore it.
// "" for kNot.
std::string LostText(Lost why, std::string_view detail = {});

struct Pick {
  size_t index = 0;  // the candidate returned
  // Per candidate: why it was not returned (Lost::kNot for the one returned
  // and for those that gave the same answer).
  std::vector<Lost> lost;
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
  // Independent samples (agent/quality/samples.h): the replies to the first
  // prompt whose result compared with the answer, the first included (0 or
  // 1: no samples, the readings' agreement is the signal), and of those the
  // ones giving it. With two or more, they are the signal instead.
  int samples = 0;
  int samples_agreeing = 0;
  // The samples' vote returned this answer in place of the one the run
  // chose (samples.h's VoteSamples): the reason says how many give it.
  bool voted = false;
  // For the reason only: the findings' names (critical ones, the note that
  // explains it away, the other notes), and what the first reading that
  // disagrees gives ("412", "3 rows"; DescribeAnswer), "" when none does.
  std::vector<std::string> critical_names;
  std::string hollow_name;
  std::vector<std::string> note_names;
  std::string other_answer;
  // The model's review of the answer returned (review.h), and for a review
  // not accepting it, its reasoning for the reason.
  ReviewOutcome review = ReviewOutcome::kNotReviewed;
  std::string review_reasoning;
};

// An answer's confidence and why.
struct ConfidenceVerdict {
  int score = 0;  // 0..100
  // The rows that applied, in the table's order (agent/base/confidence.h).
  std::vector<ConfidenceRule> applied;
  // A short reason built from those rows' words and the inputs' details,
  // "low: ..." below kLowConfidenceBelow: "one reading, no finding",
  // "low: no other reading gives it (2 of 3 disagree; the other gives 412)".
  std::string reason;
};

// 0..100: how often an answer like this one was right, on data the rules
// were not tuned on (README: "How sure"), and why: the rows of the
// confidence table (agent/base/confidence.h) that apply, in order. Agreement
// between independent readings counts most; findings and retries take from
// it.
ConfidenceVerdict JudgeConfidence(const ConfidenceInputs& in);
inline int Confidence(const ConfidenceInputs& in) {
  return JudgeConfidence(in).score;
}

// The signal of independent samples: every one compared gives the answer,
// two or more give it (not all), or at most one does; nullopt with fewer
// than two compared.
std::optional<ConfidenceRule> SamplesRule(int compared, int agreeing);

// What a result gives, as a reason names it: its one value ("412",
// "'Paris'"), else its row count ("no rows", "1 row", "3 rows", "more
// than 256 rows" when read in part).
std::string DescribeAnswer(const ResultRows& rows);

// --- template definition -----------------------------------------------------

template <typename Compare, typename Exact>
Pick PickCandidate(const std::vector<CandidateOutcome>& c, Compare agree, Exact exact) {
  Pick pick;
  pick.lost.assign(c.size(), Lost::kNot);
  std::vector<size_t> left;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].ran) {
      left.push_back(i);
      ++pick.ran;
    } else {
      pick.lost[i] = Lost::kDidNotRun;
    }
  }
  if (left.empty()) return pick;
  auto keep_if = [&](auto pred, Lost reason) {
    std::vector<size_t> kept;
    for (size_t i : left)
      if (pred(i)) kept.push_back(i);
    if (kept.empty() || kept.size() == left.size()) return;
    for (size_t i : left)
      if (!pred(i)) pick.lost[i] = reason;
    left = std::move(kept);
  };
  keep_if([&](size_t i) { return c[i].critical == 0; }, Lost::kCriticalFinding);
  keep_if([&](size_t i) { return !c[i].hollow; }, Lost::kExplainedAway);
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
    pick.lost[i] = votes[i] < best_votes ? Lost::kFewerAgree : Lost::kTiedWithEarlier;
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
