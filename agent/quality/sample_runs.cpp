#include "agent/quality/sample_runs.h"

#include <fmt/format.h>

#include <algorithm>

#include "agent/sql/interrupt.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

int64_t RowsOf(const ResultRows& r) {
  return r.complete ? static_cast<int64_t>(r.rows->size()) : int64_t{-1};
}

// The outcome of a sample whose result is `rows`, compared with `answer`.
void Judged(SampleOutcome& o, const ResultRows& rows, const ResultRows& answer, bool same) {
  o.ran = true;
  o.agreement = same ? Agreement::kSame : CompareResults(rows, answer);
  o.rows = RowsOf(rows);
  o.gives = DescribeAnswer(rows);
  o.columns = *rows.columns;
  o.result = *rows.rows;
  o.complete = rows.complete;
}

}  // namespace

std::vector<SampleOutcome> RunSamples(const SampleSubject& subject, const SampleRunner& runner) {
  const std::deque<Row> no_rows;
  const std::vector<std::string> no_columns;
  const bool answered = !subject.answer_sql.empty() && subject.answer;
  const ResultRows returned =
      answered ? ResultRows{&subject.answer->column_names(), &subject.answer->buffered_rows(),
                            subject.answer->complete_after_probe()}
               : ResultRows{&no_columns, &no_rows, false};
  const std::string answer = NormaliseSql(subject.answer_sql);
  const std::vector<std::string>& readings = subject.readings;
  std::vector<std::string> normalised;
  for (const std::string& sql : readings) normalised.push_back(NormaliseSql(sql));
  auto candidate_of = [&](const std::string& norm) -> const Candidate* {
    if (!subject.candidates) return nullptr;
    for (const Candidate& c : *subject.candidates) {
      if (c.ran && NormaliseSql(c.sql) == norm) return &c;
    }
    return nullptr;
  };
  auto first_same = [&](size_t i) {
    return static_cast<size_t>(
        std::find(normalised.begin(), normalised.begin() + static_cast<long>(i), normalised[i]) -
        normalised.begin());
  };
  int to_run = 0;
  for (size_t i = 0; i < readings.size(); ++i) {
    to_run += answered && !readings[i].empty() && normalised[i] != answer &&
              !candidate_of(normalised[i]) && first_same(i) == i;
  }
  ExecutionLimits limits = runner.limits;
  limits.timeout_ms = std::max(10, runner.limits.timeout_ms / 2 / std::max(1, to_run));
  std::vector<SampleOutcome> samples;
  for (size_t i = 0; i < readings.size(); ++i) {
    SampleOutcome o;
    o.sql = readings[i];
    const size_t same = first_same(i);
    if (o.sql.empty()) {
      o.failure = "the reply holds no SQL";
    } else if (!answered) {
      o.failure = "not run: the run has no answer to compare with";
    } else if (normalised[i] == answer) {
      Judged(o, returned, returned, true);
    } else if (const Candidate* c = candidate_of(normalised[i])) {
      Judged(o, c->View(), returned, false);
    } else if (same < i) {  // written again: the same answer
      o = samples[same];
    } else if (runner.connection_stopped) {
      o.failure = "not run: the connection was stopped";
    } else {
      auto query = RunVerified(runner.sql, o.sql, limits);
      if (!query.ok()) {
        o.failure = query.status().kind() == ErrorKind::kTimeout
                        ? fmt::format("past its share of the time budget ({} ms): dropped",
                                      limits.timeout_ms)
                        : query.status().message();
      } else {
        const LiveQuery& q = **query;
        Judged(o, {&q.column_names(), &q.buffered_rows(), q.complete_after_probe()}, returned,
               false);
      }
    }
    samples.push_back(std::move(o));
  }
  return samples;
}

SampleVote VoteAndRejudge(std::vector<SampleOutcome>* samples) {
  const std::vector<SampleOutcome>& s = *samples;
  auto agrees = [&s](size_t i, size_t j) {
    return i == j ? Agreement::kSame : CompareResults(s[i].View(), s[j].View());
  };
  SampleVote vote = VoteSamples(s, agrees);
  if (vote.winner) RejudgeAgainst(samples, *vote.winner, agrees);
  return vote;
}

VoteResult VoteOnAnswer(std::vector<SampleOutcome>* samples, const SqlTarget& sql,
                        const ExecutionLimits& limits,
                        const std::vector<ReflectionIssue>& answer_issues,
                        const std::function<std::vector<ReflectionIssue>(
                            const std::string& sql, const LiveQuery& query)>& check) {
  VoteResult out;
  std::vector<SampleOutcome> judged = *samples;
  out.vote = VoteAndRejudge(&judged);
  if (!out.vote.winner) return out;
  const std::string winner = judged[*out.vote.winner].sql;
  auto again = RunVerified(sql, winner, limits);
  if (!again.ok()) {
    out.stopped = again.status().kind() == ErrorKind::kTimeout && ConnectionInterrupted(sql.db());
    out.vote.winner.reset();
    return out;
  }
  std::vector<ReflectionIssue> issues = check(winner, **again);
  const size_t critical = CountCritical(issues);
  const size_t answer_critical = CountCritical(answer_issues);
  if (critical > answer_critical ||
      (critical == answer_critical && HollowNote(issues) && !HollowNote(answer_issues))) {
    out.vote.winner.reset();
    return out;
  }
  *samples = std::move(judged);
  out.answer = VotedAnswer{std::move(again).value(), winner, std::move(issues)};
  return out;
}

}  // namespace querypilot
