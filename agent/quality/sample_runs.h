// Running the samples: each other reply's first reading runs (or is found
// among the results at hand), is compared with the answer the run chose
// and, with three or more samples, votes (samples.h's VoteSamples). The
// agent calls RunSamples when it finishes (agent/run/finish.cpp) and
// returns the winner's rows when the vote replaces its answer.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/quality/candidates.h"
#include "agent/quality/samples.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"

namespace querypilot {

// How the samples run.
struct SampleRunner {
  // Where the readings run and how their SQL is checked
  // (agent/sql/check_connection.h).
  SqlTarget sql;
  // Their limits: the whole of them is half of `limits.timeout_ms`, shared
  // among those that run (at least 10 ms each). Never sqlite3_interrupt:
  // the caller gives a lookup stop (it would end the statement that asked).
  ExecutionLimits limits;
  // The connection can run no more SQL (the watchdog stopped a query).
  bool connection_stopped = false;
};

// What the samples are compared with.
struct SampleSubject {
  // Every reply's first reading, the first reply's (attempt 1's SQL)
  // first; "" for a reply that held none.
  std::vector<std::string> readings;
  std::string answer_sql;             // the answer chosen; "" when the run has none
  const LiveQuery* answer = nullptr;  // its rows, read so far (null: no answer)
  // The first reply's candidates: a sample with the same SQL as one that
  // ran gives its result without running again.
  const std::vector<Candidate>* candidates = nullptr;
};

// Every reply's outcome (the first first), each sample's result compared
// with the answer; a sample with the same SQL as the answer, a candidate
// that ran or an earlier sample is not run again. Never fails: a sample
// that cannot run says why.
std::vector<SampleOutcome> RunSamples(const SampleSubject& subject, const SampleRunner& runner);

// The vote of `samples` (VoteSamples, comparing their results as the
// candidates' are compared); with a winner, `samples` are judged again
// against its result (RejudgeAgainst).
SampleVote VoteAndRejudge(std::vector<SampleOutcome>* samples);

// The answer the vote returns in place of the run's.
struct VotedAnswer {
  std::unique_ptr<LiveQuery> query;     // its rows, read on the host's connection
  std::string sql;                      // the winning sample's first reading
  std::vector<ReflectionIssue> issues;  // the findings on it
};

// The vote of `*samples` (three or more; VoteAndRejudge) with its winner's
// SQL read again on `sql` under `limits` (the answer's) and checked with
// `check` (the agent's result checks, handed in): the answer to return in
// place of the run's, or nullopt where the answer stands (no winner, the
// winner failed to run again, or the checks like it less than the answer,
// whose findings are `answer_issues`: more critical findings, or a note
// that explains it away where the answer has none, as PickCandidate
// ranks readings); `*samples` are judged against the answer returned.
// `*stopped` says the watchdog stopped the connection reading it again.
struct VoteResult {
  SampleVote vote;
  std::optional<VotedAnswer> answer;
  bool stopped = false;
};
VoteResult VoteOnAnswer(std::vector<SampleOutcome>* samples, const SqlTarget& sql,
                        const ExecutionLimits& limits,
                        const std::vector<ReflectionIssue>& answer_issues,
                        const std::function<std::vector<ReflectionIssue>(
                            const std::string& sql, const LiveQuery& query)>& check);

}  // namespace querypilot
