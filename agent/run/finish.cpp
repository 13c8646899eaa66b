// The finish node: the answer returned (a held or kept one where the
// retries did no better), the samples judged and their vote
// (agent/quality/sample_runs.h), the confidence (agent/quality/candidates.h),
// a doubtful empty answer's reason, and the record. agent.cpp runs it last
// (agent.h).
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "agent/prompt/extract.h"
#include "agent/quality/sample_runs.h"
#include "agent/run/run_state.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

using Clock = std::chrono::steady_clock;

// A failed run's error after retries: the first real cause (its kind, and
// SQLite's or the check's words), then what each later attempt did. A model
// repeating a query is a guard that stopped the run, never its cause.
Status FirstCause(const std::vector<AttemptRecord>& attempts, const Status& last) {
  size_t first = attempts.size();
  for (size_t i = 0; i < attempts.size(); ++i) {
    const std::string& type = attempts[i].error_type;
    if (!type.empty() && type != ErrorKindName(ErrorKind::kUnchangedSql)) {
      first = i;
      break;
    }
  }
  if (first + 1 >= attempts.size()) return last;  // the last attempt is its own cause
  ErrorKind kind = ErrorKindFromName(attempts[first].error_type);
  if (kind == ErrorKind::kNone) kind = last.kind();
  std::string message = fmt::format("{} (attempt {})", attempts[first].error, first + 1);
  // Later attempts, with runs of the same outcome said once.
  struct Span {
    size_t from, to;
    std::string what;
  };
  std::vector<Span> later;
  for (size_t j = first + 1; j < attempts.size(); ++j) {
    const AttemptRecord& a = attempts[j];
    std::string what = a.error == attempts[first].error ? "the same"
                       : !a.error.empty()               ? a.error
                       : !a.sql.empty() ? "its query ran, but its result was sent back"
                                        : "";
    if (what.empty()) continue;
    if (!later.empty() && later.back().to + 1 == j && later.back().what == what) {
      later.back().to = j;
    } else {
      later.push_back({j, j, std::move(what)});
    }
  }
  for (const Span& span : later) {
    message += span.from == span.to
                   ? fmt::format("; attempt {}: {}", span.from + 1, span.what)
                   : fmt::format("; attempts {}-{}: {}", span.from + 1, span.to + 1, span.what);
  }
  return Status(kind, std::move(message));
}

}  // namespace

bool Agent::FinishSamples(RunState& s, RunResult& out, const std::vector<ReflectionIssue>& issues,
                          std::vector<ReflectionIssue>* voted_issues) {
  SampleSubject subject;
  subject.readings = {s.attempts.empty() ? "" : s.attempts.front().sql};
  // Each other reply is read as the first was: its first ```sql block where
  // it may hold alternatives (with candidates 1, its one query).
  for (const std::string& reply : s.sample_replies) {
    Result<std::vector<std::string>> sql =
        ExtractCandidates(reply, static_cast<size_t>(ctx_.config->candidates));
    subject.readings.push_back(sql.ok() ? sql->front() : "");
  }
  const bool answered = out.status == RunStatus::kOk && s.query;
  subject.answer_sql = answered ? out.sql : "";
  subject.answer = answered ? s.query.get() : nullptr;
  subject.candidates = &s.candidates;
  SampleRunner runner;
  runner.sql = ctx_.sql;
  runner.limits = QueryLimits(*ctx_.config);
  runner.limits.stop = LookupStop(*ctx_.config);  // never sqlite3_interrupt
  runner.connection_stopped = s.connection_stopped;
  s.samples = RunSamples(subject, runner);
  bool replaced = false;
  // The samples are every reply's first reading: they vote against the
  // answer only where it is the first reply's first reading too. An answer
  // the checks picked among the readings, or a correction, rests on more
  // than first readings, and stands.
  const bool first_reading = answered && out.answer_attempt == 1 && !s.attempts.empty() &&
                             NormaliseSql(out.sql) == NormaliseSql(s.attempts.front().sql);
  if (first_reading && !s.connection_stopped && ctx_.config->samples >= kSamplesThatVote) {
    VoteResult voted = VoteOnAnswer(&s.samples, ctx_.sql, QueryLimits(*ctx_.config), issues,
                                    [&](const std::string& sql, const LiveQuery& query) {
                                      return ResultFindings(s, sql, query, 0, {});
                                    });
    if (voted.stopped) s.connection_stopped = true;
    s.vote = voted.vote;
    if (voted.answer) {
      const SampleVote& vote = voted.vote;
      s.query = std::move(voted.answer->query);
      s.sql = out.sql = voted.answer->sql;
      *voted_issues = std::move(voted.answer->issues);
      s.reflection.reasoning += fmt::format(
          "; {} of {} samples give another result than attempt {}'s: sample {}'s query is "
          "returned",
          vote.votes, vote.compared, out.answer_attempt, *vote.winner + 1);
      // The answer's attempt says which sample won.
      AttemptRecord& a = s.attempts[static_cast<size_t>(out.answer_attempt - 1)];
      nlohmann::ordered_json record = nlohmann::ordered_json::parse(a.reflection, nullptr, false);
      if (!record.is_object()) record = nlohmann::ordered_json::object();
      record["vote"] = {{"sample", *vote.winner + 1},
                        {"sql", s.sql},
                        {"votes", vote.votes},
                        {"answer_votes", vote.answer_votes},
                        {"compared", vote.compared}};
      a.reflection = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      replaced = true;
    }
  }
  s.sample_tally = TallySamples(s.samples);
  return replaced;
}

RunResult Agent::Finish(RunState& s) {
  RunResult out;
  out.run_id = s.run.id;
  out.attempts = static_cast<int>(s.attempts.size());
  for (auto it = s.attempts.rbegin(); it != s.attempts.rend(); ++it) {
    if (!it->sql.empty()) {
      out.sql = it->sql;
      break;
    }
  }
  // (An interruption still ends the run, and after the watchdog stopped a
  // query only a result read in full can be returned.)
  bool return_held =
      s.reviewed && s.error.kind() != ErrorKind::kInterrupted &&
      (s.reviewed->query ? !s.connection_stopped || s.reviewed->query->complete_after_probe()
                         : !s.connection_stopped);
  if (return_held && !s.reviewed->query) {
    // Closed when the run paused for the model: its SQL, checked and run again.
    auto again = RunVerified(ctx_.sql, s.reviewed->sql, QueryLimits(*ctx_.config));
    return_held = again.ok();
    if (again.ok()) s.reviewed->query = std::move(again).value();
  }
  if (return_held) {
    // The review's correction was not accepted (it failed, was sent back by
    // the rule checks, repeated the query or its review did not accept it):
    // the answer held is returned as it was.
    const int corrected = out.attempts;
    s.error = Status::Ok();
    s.query = std::move(s.reviewed->query);
    s.sql = s.reviewed->sql;
    s.run.advice = s.reviewed->advice;
    s.reflection = std::move(s.reviewed->reflection);
    s.reflection.reasoning +=
        s.stood_by == s.reviewed->attempt
            ? fmt::format(
                  "; the model stood by the query of attempt {} after its review: its "
                  "result is returned",
                  s.stood_by)
            : fmt::format(
                  "; the review did not accept attempt {}'s correction: the result of "
                  "attempt {} is returned",
                  corrected, s.reviewed->attempt);
  }
  if (s.error.ok() && s.query) {
    out.answer_attempt = return_held ? s.reviewed->attempt : out.attempts;
    out.sql = s.sql;  // the first reply's pick among its candidates, or its one query
  }
  // A result sent back is returned when the retries failed or did no better
  // (an interruption still ends the run: the user asked to stop).
  // After the watchdog stopped a query, only a result already read in full
  // can still be returned.
  const bool retries_failed =
      !s.error.ok() && s.error.kind() != ErrorKind::kInterrupted &&
      (!s.connection_stopped || (s.kept && s.kept->query && s.kept->query->complete_after_probe()));
  const bool no_better =
      s.error.ok() && s.query && s.reflection.critical() >= (s.kept ? s.kept->critical : 0);
  bool returned_kept = s.kept && (retries_failed || no_better);
  if (returned_kept && !s.kept->query) {
    // Closed when the run paused for the model: its SQL, checked and run again.
    auto again = RunVerified(ctx_.sql, s.kept->sql, QueryLimits(*ctx_.config));
    if (again.ok()) {
      s.kept->query = std::move(again).value();
    } else {
      returned_kept = false;
      if (s.error.ok() && !s.query) s.error = again.status();
    }
  }
  if (returned_kept) {
    s.reflection.reasoning +=
        s.stood_by == s.kept->attempt
            ? fmt::format("; the model stood by the query of attempt {}: its result is returned",
                          s.stood_by)
            : fmt::format("; returning the result of attempt {}, as no later attempt did better",
                          s.kept->attempt);
    s.error = Status::Ok();
    s.query = std::move(s.kept->query);
    out.sql = s.kept->sql;
    s.run.advice = s.kept->advice;
    out.answer_attempt = s.kept->attempt;
  }
  out.status = RunStatusFor(s.error);
  // The findings on the answer returned, for its confidence.
  const std::vector<ReflectionIssue>* issues =
      returned_kept ? &s.kept->issues : &s.reflection.issues;
  // Every reply to the first prompt judged against the answer; with three
  // or more, the result most of them give is returned (agent/quality/samples.h).
  std::vector<ReflectionIssue> voted_issues;
  bool voted = false;
  if (!s.samples.empty()) {
    const Clock::time_point started = Clock::now();
    voted = FinishSamples(s, out, *issues, &voted_issues);
    if (voted) issues = &voted_issues;
    s.AddTime("finish/samples", MsSince(started));
  }
  // After retries the error names the first real cause, then what the
  // retries did; agent_runs.error_type is that cause.
  if (out.status == RunStatus::kFailed) s.error = FirstCause(s.attempts, s.error);
  out.error = s.error;
  RunRecord& run = s.run;
  run.status = out.status;
  run.sql = out.sql;
  run.attempts = out.attempts;
  run.error = s.error.message();
  run.error_type = std::string(ErrorKindName(s.error.kind()));
  run.reflection = s.attempts.empty() && s.error.ok() ? "" : s.reflection.ToJson();
  run.answer_attempt = out.answer_attempt;
  run.stood_by = out.answer_attempt == s.stood_by ? s.stood_by : 0;
  run.provider = ctx_.provider_name;
  run.model = ctx_.model;
  const Clock::time_point now = Clock::now();
  s.AddTime(NodeName(Node::kFinish),
            std::chrono::duration<double, std::milli>(now - s.mark).count());
  run.duration_ms = std::chrono::duration<double, std::milli>(now - s.started).count();
  run.session = ctx_.config->session;
  if (s.query && s.query->complete_after_probe()) {
    run.rows = static_cast<int64_t>(s.query->probed_rows());
    run.truncated = s.query->truncated();
  }
  // An answer accepted as it was (not a flagged one kept) is remembered.
  // A follow-up is remembered only under its standalone form.
  const std::string& key = s.conversation.empty() ? run.question : run.standalone;
  if (out.status == RunStatus::kOk && ctx_.answer_cache && ctx_.config->answer_cache &&
      !run.cached_from && s.schema && out.answer_attempt == out.attempts &&
      s.reflection.is_acceptable && s.review != ReviewOutcome::kNotAccepted && !voted &&
      !key.empty()) {
    ctx_.answer_cache->Put(key, {out.sql, run.id, s.schema->schema_version});
  }
  if (!s.samples.empty()) run.samples = SamplesJson(s.sample_tally, s.samples, s.vote);
  if (out.status == RunStatus::kOk && s.query) {
    if (run.cached_from) {
      // The same answer as the run it came from: its confidence, its reason
      // and the readings that made them.
      run.confidence = s.cached.confidence;
      run.confidence_reason = s.cached.confidence_reason;
      run.alternatives = s.cached.alternatives;
    } else {
      ConfidenceVerdict verdict = AnswerConfidence(s, out, *issues, voted);
      run.confidence = verdict.score;
      run.confidence_reason = std::move(verdict.reason);
    }
  }
  run.review = std::string(ReviewOutcomeName(s.review));
  out.confidence = run.confidence;
  out.confidence_reason = run.confidence_reason;
  if (out.status == RunStatus::kOk && s.query && s.query->complete_after_probe() &&
      s.query->probed_rows() == 0) {
    std::vector<std::string> critical;
    for (const ReflectionIssue& i : *issues) {
      if (i.critical()) critical.push_back(i.message);
    }
    out.doubt = EmptyAnswerDoubt(critical, s.review, s.review_reasoning);
  }
  if (!s.candidates.empty()) run.alternatives = AlternativesJson(s.candidates);
  ctx_.history->Add(std::move(run), std::move(s.attempts));
  if (s.error.ok()) out.query = std::move(s.query);
  return out;
}

ConfidenceVerdict Agent::AnswerConfidence(const RunState& s, const RunResult& out,
                                          const std::vector<ReflectionIssue>& issues,
                                          bool voted) const {
  ReturnedAnswer answer;
  answer.answer_attempt = out.answer_attempt;
  answer.issues = &issues;
  answer.voted = voted;
  const std::string sql = NormaliseSql(out.sql);
  answer.example_reused =
      std::find(s.example_sql.begin(), s.example_sql.end(), sql) != s.example_sql.end();
  // The rows of the answer returned: read, not yet taken by the caller.
  answer.rows = {&s.query->column_names(), &s.query->buffered_rows(),
                 s.query->complete_after_probe()};
  answer.review = s.review;
  answer.review_reasoning = s.review_reasoning;
  answer.samples = s.sample_tally.compared;
  answer.samples_agreeing = s.sample_tally.agreeing;
  for (const SampleOutcome& o : s.samples) {
    if (o.ran && o.agreement == Agreement::kDifferent) {
      answer.sample_other_answer = o.gives;
      break;
    }
  }
  return querypilot::AnswerConfidence(s.candidates, answer);
}

std::string RunResult::DoubtMessage() const {
  return fmt::format(
      "the answer has no rows, and QueryPilot doubts it: {0} (confidence {1}) [run {2}: SELECT * "
      "FROM agent_attempts WHERE run_id = {2}]; agent_config('empty_doubtful', 'rows') gives "
      "such answers as empty results",
      doubt, confidence ? std::to_string(*confidence) : "none", run_id);
}

std::string RunResult::UserMessage() const {
  std::string see =
      fmt::format(" [run {0}: SELECT * FROM agent_attempts WHERE run_id = {0}]", run_id);
  if (status == RunStatus::kOk) return "";
  if (status == RunStatus::kNotConfigured) return error.message();
  if (status == RunStatus::kFailed && IsDatabaseFault(error.kind())) {
    return fmt::format("the database reported {}: {}{}", ErrorKindName(error.kind()),
                       error.message(), see);
  }
  if (status == RunStatus::kFailed) {
    return fmt::format("no working SQL after {} attempt{} ({}): {}{}", attempts,
                       attempts == 1 ? "" : "s", ErrorKindName(error.kind()), error.message(), see);
  }
  if (status == RunStatus::kRefused) return "the model's SQL was refused: " + error.message() + see;
  if (status == RunStatus::kNeedsClarification) {
    return "the question needs clarification: " + error.message() +
           "; ask again with these details (or agent_config('clarify', 0) to have the model "
           "take the most likely reading)" +
           see;
  }
  if (status == RunStatus::kProviderError) {
    return fmt::format("the model provider failed ({}): {}{}", ErrorKindName(error.kind()),
                       error.message(), see);
  }
  return error.message() + see;
}

}  // namespace querypilot
