#include "agent/agent.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/linking.h"
#include "agent/model_calls.h"
#include "agent/prompt/extract.h"
#include "agent/prompt/prompts.h"
#include "agent/quality/analyse.h"
#include "agent/quality/candidates.h"
#include "agent/quality/grounding.h"
#include "agent/quality/performance.h"
#include "agent/quality/readings.h"
#include "agent/quality/result_check.h"
#include "agent/quality/review.h"
#include "agent/run/run_state.h"
#include "agent/sql/critic.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/sqldiff.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxStoredReply = 4000;

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

ExecutionLimits QueryLimits(const Config& config) {
  ExecutionLimits limits;
  limits.timeout_ms = config.sql_timeout_ms;
  limits.max_rows = config.max_rows;
  limits.stop = LookupStop(config) == StopMethod::kProgressHandler ? StopMethod::kProgressHandler
                                                                   : StopMethod::kWatchdog;
  return limits;
}

ValueIndexOptions IndexOptions(const Config& config) {
  ValueIndexOptions options;
  options.file = config.value_index_file;
  if (config.value_index_cache) options.cache_dir = DefaultValueIndexCacheDir();
  options.cache_max_mb = config.cache_max_mb;
  options.background = config.value_index_background != 0;
  options.wait_ms = config.value_index_wait_ms;
  options.file_budget_ms = config.value_index_ask_ms;
  options.stop = LookupStop(config);
  return options;
}

StopMethod LookupStop(const Config& config) {
  return config.progress_handler && Host().progress_handler ? StopMethod::kProgressHandler
                                                            : StopMethod::kBetweenSteps;
}

// ---------------------------------------------------------------------------
// The nodes, one row each (agent.h says what a row holds).
constinit const Agent::NodeRow Agent::kNodes[] = {
    {Node::kCache, "cache", &Agent::Cache},
    {Node::kLoadSchema, "load_schema", &Agent::LoadSchema},
    {Node::kGenerate, "generate", &Agent::Generate},
    {Node::kExtract, "extract", &Agent::Extract},
    {Node::kCritic, "critic", &Agent::Critic},
    {Node::kExecute, "execute", &Agent::Execute},
    {Node::kCheckResult, "check_result", &Agent::CheckResult},
    {Node::kCandidates, "candidates", &Agent::Candidates},
    {Node::kAnalyse, "analyse", &Agent::Analyse},
    {Node::kReflect, "reflect", &Agent::Reflect},
    {Node::kReview, "review", &Agent::Review},
    {Node::kCorrect, "correct", &Agent::Correct},
    {Node::kFinish, "finish", nullptr},
};

const Agent::NodeRow* Agent::NodeOf(Node node) {
  for (const NodeRow& row : kNodes) {
    if (row.node == node) return &row;
  }
  return nullptr;
}

std::string_view NodeName(Node node) {
  const Agent::NodeRow* row = Agent::NodeOf(node);
  return row ? row->name : "?";
}

size_t NodeCount() {
  return std::size(Agent::kNodes);
}

// ---------------------------------------------------------------------------
// Transitions: the whole control flow of a run.
Node Agent::NextNode(Node done, const RunState& s) const {
  const bool failed = !s.error.ok();
  switch (done) {
    case Node::kCache:
      return s.query || failed ? Node::kFinish : Node::kLoadSchema;
    case Node::kLoadSchema:
      return failed ? Node::kFinish : Node::kGenerate;
    case Node::kGenerate:
      return failed ? Node::kReflect : Node::kExtract;
    case Node::kExtract:
      return failed ? Node::kAnalyse : Node::kCritic;
    case Node::kCritic:
      return failed ? Node::kAnalyse : Node::kExecute;
    case Node::kExecute:
      return failed ? Node::kAnalyse : Node::kCheckResult;
    case Node::kCheckResult:
    case Node::kAnalyse:
      return s.pending.empty() && s.others.empty() ? Node::kReflect : Node::kCandidates;
    case Node::kCandidates:
      return Node::kReflect;
    case Node::kReflect: {
      if (s.connection_stopped) return Node::kFinish;
      // The review's one correction answered: reviewed again, or the end.
      if (s.reviewed) return ShouldReview(s) ? Node::kReview : Node::kFinish;
      const bool attempts_left = static_cast<int>(s.attempts.size()) < ctx_.config->max_attempts;
      if (s.reflection.should_refine && attempts_left) return Node::kCorrect;
      return ShouldReview(s) ? Node::kReview : Node::kFinish;
    }
    case Node::kReview:
      // Sent back: the answer is held and the query goes back once.
      return s.reviewed && !s.query && !failed ? Node::kGenerate : Node::kFinish;
    case Node::kCorrect:
      return Node::kGenerate;
    case Node::kFinish:
      return Node::kFinish;
  }
  return Node::kFinish;
}

// A query past its budget that the watchdog stopped with sqlite3_interrupt.
bool Agent::StoppedConnection(const Status& error) const {
  return error.kind() == ErrorKind::kTimeout && ConnectionInterrupted(ctx_.db);
}

RunResult Agent::Run(std::string_view question) {
  RunStatePtr s = Begin(ctx_.history->NextRunId(), question);
  std::optional<RunResult> out = Advance(*s);
  if (out) return std::move(*out);
  // Only a context that pauses for the model stops before the run's end.
  RunResult failed;
  failed.run_id = s->run.id;
  failed.error = Status(ErrorKind::kInternal, "the run stopped before a model call");
  return failed;
}

void Agent::RunStateDeleter::operator()(RunState* s) const {
  delete s;
}

Agent::RunStatePtr Agent::Begin(int64_t run_id, std::string_view question) {
  RunStatePtr s(new RunState);
  s->started = Clock::now();
  s->run.created_at = UtcNow();
  s->run.id = run_id;
  s->run.question = std::string(question);
  s->mark = s->started;
  return s;
}

int64_t Agent::RunIdOf(const RunState& s) {
  return s.run.id;
}

const ChatRequest& Agent::AwaitedCall(const RunState& s) {
  return *s.awaited;
}

void Agent::GiveReply(RunState& s, Result<ChatReply> reply) {
  s.given.emplace(std::move(reply));
}

RunRecord Agent::PendingRecord(const RunState& s, RunStatus status) {
  RunRecord run = s.run;
  run.status = status;
  run.attempts = static_cast<int>(s.attempts.size());
  run.duration_ms = MsSince(s.started);
  run.node_times = s.run.node_times;
  return run;
}

std::vector<AttemptRecord> Agent::AttemptsSoFar(const RunState& s) {
  return s.attempts;
}

std::optional<RunResult> Agent::Advance(RunState& s) {
  if (s.given) {
    // The time between a pause and this call was the model's (llm_ms), and
    // the caller's: no node's.
    s.mark = Clock::now();
    // The run goes on under the host's rules as they are now, on whichever
    // connection took it up.
    ApplyHostRulesNow(s);
  }
  Node node = s.node;
  while (node != Node::kFinish) {
    const NodeRow& row = *NodeOf(node);  // every node has its row (agent_test)
    if ((node == Node::kGenerate || node == Node::kReview) && ctx_.pause_for_model && !s.given) {
      // Paused before the model call: nothing of any connection is held.
      s.awaited = node == Node::kGenerate ? GenerationRequest(s) : ReviewRequest(s);
      if (s.kept) s.kept->query.reset();  // run again by Finish if it is the answer
      // The answer under review (its rows are in the request) and the one a
      // review held: run again when the run goes on (Review, Finish).
      s.query.reset();
      if (s.reviewed) s.reviewed->query.reset();
      s.node = node;
      const Clock::time_point now = Clock::now();
      s.AddTime(row.name, std::chrono::duration<double, std::milli>(now - s.mark).count());
      s.mark = now;
      return std::nullopt;
    }
    (this->*row.run)(s);
    const Clock::time_point now = Clock::now();
    s.AddTime(row.name, std::chrono::duration<double, std::milli>(now - s.mark).count());
    s.mark = now;
    node = NextNode(node, s);
  }
  s.node = node;
  return Finish(s);
}

// ---------------------------------------------------------------------------
// Nodes.

ChatRequest Agent::GenerationRequest(RunState& s) {
  AttemptRecord rec;
  rec.run_id = s.run.id;
  rec.attempt = static_cast<int>(s.attempts.size()) + 1;
  s.attempts.push_back(std::move(rec));
  // Per step (agent/model_calls.h): a correction turn may go to another
  // model of the same provider; only the first generation asks for
  // independent samples.
  ChatRequest req = ModelCalls(ctx_).Request(
      s.attempts.size() > 1 ? ModelStep::kCorrection : ModelStep::kFirst, s.messages);
  s.attempt().model = req.model;
  return req;
}

Result<ChatReply> Agent::ModelReply(RunState& s, const ChatRequest& req, CallCost* cost) {
  const bool given = s.given.has_value();
  Result<ChatReply> reply = given ? std::move(*s.given) : ModelCalls(ctx_).Call(req, cost);
  if (given) {
    // Made on a worker thread: counted as a call made here is.
    if (reply.ok()) {
      cost->Add(*reply);
    } else {
      cost->AddFailed();
    }
  }
  s.awaited.reset();
  s.given.reset();
  AddCost(&s.run, *cost);
  return reply;
}

void Agent::Generate(RunState& s) {
  // A paused run's call was made elsewhere (Advance): its reply is given.
  const ChatRequest req = s.given ? std::move(*s.awaited) : GenerationRequest(s);
  CallCost cost;
  Result<ChatReply> reply = ModelReply(s, req, &cost);
  if (!reply.ok()) {
    s.error = reply.status();
    return;
  }
  if (req.choices > 1) {
    s.sample_replies = std::move(reply->more);
    s.samples.emplace_back();  // the first reply's: judged with the others
  }
  s.attempt().llm_ms = cost.ms;
  s.attempt().prompt_tokens = cost.prompt_tokens;
  s.attempt().completion_tokens = cost.completion_tokens;
  s.reply = std::move(reply->text);
  s.attempt().reply = text::Truncate(s.reply, kMaxStoredReply);
}

void Agent::Extract(RunState& s) {
  if (!s.conversation.empty()) {
    // A follow-up restated on its own: recorded, and taken out of the reply.
    std::string standalone = TakeStandaloneQuestion(&s.reply);
    if (s.run.standalone.empty()) s.run.standalone = std::move(standalone);
  }
  if (ctx_.config->clarify) {
    // Questions back to the user instead of SQL: the run ends here, at the
    // cost of this one call, and the questions go to the user.
    std::vector<std::string> questions = ExtractClarification(s.reply);
    if (!questions.empty()) {
      std::string listed;
      for (size_t i = 0; i < questions.size(); ++i) {
        listed += fmt::format("{}({}) {}", i ? " " : "", i + 1, questions[i]);
      }
      s.run.clarifications = std::move(questions);
      s.error = Status(ErrorKind::kNeedsClarification, listed);
      return;
    }
  }
  // Only the first reply may hold candidates: a correction answers with one.
  const size_t most = s.attempts.size() == 1 ? static_cast<size_t>(ctx_.config->candidates) : 1;
  Result<std::vector<std::string>> sql = ExtractCandidates(s.reply, most);
  if (!sql.ok()) {
    s.error = sql.status();
    s.messages.push_back({ChatRole::kAssistant, text::Truncate(s.reply, 2000)});
    return;
  }
  s.sql = std::move(sql->front());
  s.pending.assign(std::make_move_iterator(sql->begin() + 1), std::make_move_iterator(sql->end()));
  s.attempt().sql = s.sql;
  // The conversation keeps only the SQL of a reply, not its prose.
  s.messages.push_back({ChatRole::kAssistant, "```sql\n" + s.sql + "\n```"});
  // Compare with the last attempt that produced SQL.
  for (size_t i = s.attempts.size() - 1; i-- > 0;) {
    if (!s.attempts[i].sql.empty()) {
      s.attempt().diff = DiffSql(s.attempts[i].sql, s.sql);
      break;
    }
  }
  std::string normalised = NormaliseSql(s.sql);
  for (const auto& [earlier, index] : s.tried) {
    if (earlier != normalised) continue;
    const AttemptRecord& before = s.attempts[index];
    if (before.error_type == ErrorKindName(ErrorKind::kRefused)) {
      // Still a refusal, whatever the guard that noticed it.
      s.error = Status(
          ErrorKind::kRefused,
          fmt::format("{} (the refused query of attempt {}, repeated)", before.error, index + 1));
    } else if (s.reviewed && s.reviewed->attempt == static_cast<int>(index) + 1) {
      // Its review did not accept it, and the model answers with the same
      // query: it stands by that answer. Not an error; the run ends.
      s.stood_by = s.reviewed->attempt;
      s.error = Status(
          ErrorKind::kUnchangedSql,
          fmt::format("the model stood by the query of attempt {} after its review", index + 1));
    } else if (s.kept && s.kept->attempt == static_cast<int>(index) + 1) {
      // Its result was sent back for a check, and the model answers with the
      // same query: it stands by that answer. Not an error; the run ends
      // and returns that result.
      s.stood_by = s.kept->attempt;
      s.error = Status(ErrorKind::kUnchangedSql,
                       fmt::format("the model stood by the query of attempt {}", index + 1));
    } else {
      s.error = Status(ErrorKind::kUnchangedSql,
                       fmt::format("the model repeated the query of attempt {}", index + 1));
    }
    break;
  }
  s.tried.emplace_back(std::move(normalised), s.attempts.size() - 1);
}

void Agent::Critic(RunState& s) {
  // The verdict only: the execute node checks again as it starts the query
  // (RunVerified), so no statement is kept between the two.
  if (Result<Statement> stmt = CheckSql(ctx_.sql, s.sql); !stmt.ok()) {
    s.error = stmt.status();
    return;
  }
  // The plan, read before the query runs: afterwards a query the watchdog
  // stopped leaves the connection unable to say.
  const Clock::time_point started = Clock::now();
  s.slow_scans.clear();
  if (s.schema)
    s.slow_scans = FindSlowScans(ctx_.sql, ReadQueryPlan(ctx_.sql, s.sql), s.sql, *s.schema);
  s.AddTime("critic/plan", MsSince(started));
}

// The limits of the other readings that run beside the host's connection:
// as they run at the same time, each has the whole of its share, half of
// sql_timeout_ms.
ExecutionLimits OtherReadingLimits(const Config& config) {
  ExecutionLimits limits = QueryLimits(config);
  limits.timeout_ms = std::max(10, config.sql_timeout_ms / 2);
  return limits;
}

void Agent::Execute(RunState& s) {
  const ExecutionLimits limits = QueryLimits(*ctx_.config);
  if (!s.pending.empty() && !s.others_launched) {
    // The other readings start now, beside the first where they can.
    const Clock::time_point launched = Clock::now();
    s.others = LaunchOtherReadings(ctx_.sql, s.sql, std::move(s.pending),
                                   OtherReadingLimits(*ctx_.config));
    s.pending.clear();
    s.others_launched = true;
    s.others_launched_at = launched;
    s.AddTime("execute/launch_readings", MsSince(launched));
  }
  auto start = Clock::now();
  // Checked again as it starts: the one recipe (agent/sql/verified.h).
  auto query = RunVerified(ctx_.sql, s.sql, limits);
  s.attempt().exec_ms = MsSince(start);
  if (!query.ok()) {
    s.error = query.status();
    s.connection_stopped = StoppedConnection(s.error);
    if (s.error.kind() == ErrorKind::kTimeout && !s.slow_scans.empty()) {
      // Say why it was slow, and what would help.
      s.error =
          Status(ErrorKind::kTimeout, s.error.message() + "; " + SlowScanSentence(s.slow_scans));
      s.run.advice.clear();
      for (const SlowScan& scan : s.slow_scans) s.run.advice.push_back(scan.create_index);
    }
    return;
  }
  s.query = std::move(query).value();
}

void Agent::CheckResult(RunState& s) {
  s.run.advice.clear();
  s.result_issues = ResultFindings(s, s.sql, *s.query, s.attempt().exec_ms, s.slow_scans);
}

std::vector<ReflectionIssue> Agent::ResultFindings(RunState& s, const std::string& sql,
                                                   const LiveQuery& query, double exec_ms,
                                                   const std::vector<SlowScan>& scans) {
  ResultView view;
  view.columns = &query.column_names();
  view.rows = &query.buffered_rows();
  view.complete = query.complete_after_probe();
  view.origins = &query.column_origins();
  view.schema = s.schema.get();
  std::vector<ReflectionIssue> issues = querypilot::CheckResult(s.run.question, sql, view);
  if (s.schema && ResultSuggestsMissingValue(issues)) {
    GroundingLimits limits;
    limits.stop = LookupStop(*ctx_.config);
    for (auto& issue : GroundLiterals(ctx_.sql, *s.schema, sql, limits, s.values.get())) {
      issues.push_back(std::move(issue));
    }
  }
  // Slow scans are warnings: reported, never a reason to try again. A result
  // that holds most of the table needed the whole table anyway.
  for (const SlowScan& scan : scans) {
    if (view.complete && static_cast<int64_t>(view.rows->size()) * 2 >= scan.rows) continue;
    issues.push_back(SlowScanIssue(scan, exec_ms));
    s.run.advice.push_back(scan.create_index);
  }
  return issues;
}

// The other queries of the first reply, launched as the first reading
// started (agent/quality/readings.h), end or are stopped here and are judged
// as the first was (agent/quality/candidates.h): beside the host's
// connection each within half of sql_timeout_ms, and all by
// ReadingsDeadline() (40% of the first reading's time past its end, at least
// readings_wait_ms from their start); on the host's connection
// within a share of both; one past its time is dropped, not failed. Then the
// answer is picked and, when it is not the first reading, takes its place:
// reflect judges it.
void Agent::Candidates(RunState& s) {
  const Clock::time_point started = Clock::now();
  if (!s.others_launched) {
    // The first reading did not pass the critic: nothing of it to compare.
    s.others =
        LaunchOtherReadings(ctx_.sql, "", std::move(s.pending), OtherReadingLimits(*ctx_.config));
    s.pending.clear();
    s.others_launched = true;
    s.others_launched_at = started;
  }
  std::vector<OtherReading> others = std::move(s.others);
  s.others.clear();
  if (s.connection_stopped) return;  // the connection can run no more SQL
  CandidateRunner runner;
  runner.db = ctx_.db;
  runner.sql = ctx_.sql;
  runner.first_ms = s.attempts.empty() ? 0.0 : s.attempts.front().exec_ms;
  runner.launched = s.others_launched_at;
  runner.floor_ms = ctx_.config->readings_wait_ms;
  runner.beside_share_ms = OtherReadingLimits(*ctx_.config).timeout_ms;
  runner.reread = QueryLimits(*ctx_.config);
  runner.limits = QueryLimits(*ctx_.config);
  // Never sqlite3_interrupt: it would end the statement that asked, and the
  // answer with it.
  runner.limits.stop = LookupStop(*ctx_.config);
  runner.limits.timeout_ms =
      std::max(10, std::min(std::max(runner.floor_ms, RelativeBudgetMs(runner.first_ms)),
                            ctx_.config->sql_timeout_ms / 2 /
                                static_cast<int>(std::max<size_t>(1, others.size()))));
  runner.check = [&](const std::string& sql, const LiveQuery& query, double exec_ms) {
    return ResultFindings(s, sql, query, exec_ms, {});
  };
  if (ctx_.config->candidate_select && ctx_.llm) {
    runner.ask_model = [&](const std::string& prompt) { return SelectionCall(s, prompt); };
  }
  FirstReading first;
  first.sql = s.sql;
  if (s.error.ok() && s.query) {
    first.query = s.query.get();
    first.issues = s.result_issues;
  } else {
    first.failure = s.error.message();
  }
  CandidatesResult picked = RunCandidates(s.run.question, first, std::move(others), runner);
  if (picked.stopped_connection) s.connection_stopped = true;
  s.AddTime("candidates/wait", picked.wait_ms);
  s.candidates = std::move(picked.candidates);
  if (picked.picked != 0 && picked.query) {
    const Candidate& c = s.candidates[picked.picked];
    s.query = std::move(picked.query);
    s.sql = c.sql;
    s.error = Status::Ok();
    s.result_issues = c.issues;
    s.slow_scans.clear();
    s.run.advice.clear();
    // The conversation shows the model the query whose result it judges.
    if (!s.messages.empty() && s.messages.back().role == ChatRole::kAssistant) {
      s.messages.back().content = "```sql\n" + s.sql + "\n```";
    }
    s.tried.emplace_back(NormaliseSql(s.sql), s.attempts.size() - 1);
  }
  s.AddTime("candidates/run", MsSince(started));
}

std::optional<std::string> Agent::SelectionCall(RunState& s, const std::string& prompt) {
  CallCost cost;
  Result<ChatReply> reply = ModelCalls(ctx_).Ask(ModelStep::kSelection, prompt, &cost);
  AddCost(&s.run, cost);
  if (!reply.ok()) return std::nullopt;  // the pick by the checks stands
  return std::move(reply->text);
}

void Agent::Analyse(RunState& s) {
  AttemptRecord& a = s.attempt();
  a.error_type = std::string(ErrorKindName(s.error.kind()));
  a.error = s.error.message();
  // A hint may name any table of the schema: every one is checked under the
  // host's rules first (only the prompt's were, when the schema is big).
  if (s.schema && (s.whole_schema_checked || RuleWholeSchema(s).ok()))
    a.hint = ComputeHint(s.error.kind(), s.error.message(), s.sql, *s.schema);
}

void Agent::Reflect(RunState& s) {
  AttemptOutcome outcome;
  outcome.error = s.error;
  for (size_t i = 0; i + 1 < s.attempts.size(); ++i) {
    outcome.refusals_before += s.attempts[i].error_type == ErrorKindName(ErrorKind::kRefused);
  }
  if (s.query) {
    outcome.rows_seen = s.query->probed_rows();
    outcome.complete = s.query->complete_after_probe();
    outcome.truncated = s.query->truncated();
    outcome.result_issues = std::move(s.result_issues);
    s.result_issues.clear();
  }
  s.reflection = querypilot::Reflect(outcome);
  AttemptRecord& a = s.attempt();
  if (!s.error.ok() && a.error_type.empty()) {  // failures that skipped analyse
    a.error_type = std::string(ErrorKindName(s.error.kind()));
    a.error = s.error.message();
  }
  if (s.stood_by > 0) {  // standing by an answer is not an error
    a.error_type.clear();
    a.error.clear();
    a.hint.clear();
    a.stood_by = s.stood_by;
  }
  a.reflection = s.reflection.ToJson();
}

bool Agent::ShouldReview(const RunState& s) const {
  return ctx_.config->review && (ctx_.llm || ctx_.pause_for_model) && s.error.ok() && s.query &&
         s.reflection.is_acceptable && !s.run.cached_from && s.reviews < 2;
}

ChatRequest Agent::ReviewRequest(RunState& s) {
  ReviewSubject subject;
  subject.question = s.run.question;
  subject.sql = s.sql;
  if (s.schema) subject.tables = FindQueryTables(s.sql, *s.schema).tables;
  subject.columns = &s.query->column_names();
  subject.rows = &s.query->buffered_rows();
  subject.complete = s.query->complete_after_probe();
  subject.review_rows = ctx_.config->review_rows;
  return ModelCalls(ctx_).Request(
      ModelStep::kReview,
      {{ChatRole::kSystem, std::string(PromptTextFor(ctx_.config->prompts, "review"))},
       {ChatRole::kUser, ReviewPrompt(subject)}});
}

void Agent::Review(RunState& s) {
  ++s.reviews;
  const bool second = s.reviewed.has_value();  // the review of its own correction
  // A paused run's call was made elsewhere (Advance): its reply is given.
  const ChatRequest request = s.given ? std::move(*s.awaited) : ReviewRequest(s);
  CallCost cost;
  Result<ChatReply> reply = ModelReply(s, request, &cost);
  if (!s.query) {
    // Closed while the run waited for its review: run again here.
    auto again = RunVerified(ctx_.sql, s.sql, QueryLimits(*ctx_.config));
    if (!again.ok()) {
      s.error = again.status();
      s.connection_stopped = StoppedConnection(s.error);
      return;
    }
    s.query = std::move(again).value();
  }
  std::optional<ModelReview> review;
  if (reply.ok()) review = ParseReview(reply->text);
  // The attempt's reflection keeps the rule checks' record as it was, with
  // the model's review as a member of its own.
  AttemptRecord& a = s.attempt();
  nlohmann::ordered_json record = nlohmann::ordered_json::parse(a.reflection, nullptr, false);
  if (!record.is_object()) record = nlohmann::ordered_json::object();
  record["review"] = nlohmann::ordered_json::parse(
      ReviewRecordJson(review, request.model, reply.ok() ? reply->text : "",
                       reply.ok() ? "" : reply.status().message()),
      nullptr, false);
  a.reflection = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!review) {
    // A failed call or a reply that is not the record changes nothing: the
    // first answer stands as the rule checks judged it; a correction not
    // accepted does not replace the answer held.
    if (!second) s.review = ReviewOutcome::kUnreadable;
    return;
  }
  if (review->is_acceptable) {
    s.review = ReviewOutcome::kAccepted;
    s.review_reasoning.clear();
    s.reviewed.reset();  // a correction accepted replaces the answer held
    return;
  }
  if (second) return;  // the answer held is returned, still not accepted
  s.review = ReviewOutcome::kNotAccepted;
  s.review_reasoning = review->reasoning;
  if (s.review_reasoning.empty()) {
    for (const std::string& i : review->issues) {
      s.review_reasoning += (s.review_reasoning.empty() ? "" : "; ") + i;
    }
  }
  const bool attempts_left = static_cast<int>(s.attempts.size()) < ctx_.config->max_attempts;
  if (!review->should_refine || !attempts_left) return;
  // Sent back once, with the review's issues; the answer is held.
  s.reviewed = RunState::Reviewed{std::move(s.query), s.sql, a.attempt, s.run.advice, s.reflection};
  a.strategy = "review";
  s.messages.push_back(
      {ChatRole::kUser,
       ReviewCorrectionPrompt(*review, PromptTextFor(ctx_.config->prompts, "review.correction"),
                              PromptTextFor(ctx_.config->prompts, "result.stand_by"))});
  s.error = Status::Ok();
  s.reply.clear();
  s.sql.clear();
  s.query.reset();
}

void Agent::Correct(RunState& s) {
  AttemptRecord& a = s.attempt();
  if (s.error.ok() && s.query) {
    // It ran, but the result looks wrong: keep it in case no retry does better.
    const size_t critical = s.reflection.critical();
    if (!s.kept || critical < s.kept->critical) {
      s.kept = RunState::Kept{std::move(s.query), s.sql,        a.attempt,
                              critical,           s.run.advice, s.reflection.issues};
    }
    a.strategy = s.reflection.strategy;
    s.messages.push_back(
        {ChatRole::kUser, ResultCorrectionPrompt(s.reflection.issues, ctx_.config->prompts)});
  } else {
    CorrectionStrategy strategy = ChooseStrategy(s.error.kind());
    a.strategy = std::string(CorrectionStrategyName(strategy));
    std::string prompt =
        CorrectionPrompt(s.error.kind(), s.error.message(), a.hint, strategy, ctx_.config->prompts);
    if (s.linked.pruned && strategy == CorrectionStrategy::kSchema) prompt += WidenSchema(s);
    s.messages.push_back({ChatRole::kUser, std::move(prompt)});
  }
  s.error = Status::Ok();
  s.reply.clear();
  s.sql.clear();
  s.query.reset();
}

// After "no such table/column" on a pruned schema: the tables not shown that
// the query may have meant, rendered for the correction message.
std::string Agent::WidenSchema(RunState& s) {
  // Tables the first prompt did not show: every table is checked under the
  // host's rules first, unless it was at this run.
  if (!s.whole_schema_checked && !RuleWholeSchema(s).ok()) return "";
  const std::string missing = MissingName(s.error.message());
  // Shown with their samples, read now where they are not yet.
  std::vector<size_t> pending;
  for (const TableInfo* t : TablesToWiden(*s.schema, s.linked.kept, missing)) {
    if (t->samples_pending) pending.push_back(static_cast<size_t>(t - s.schema->tables.data()));
  }
  if (!ReadSamples(s, std::move(pending)).ok()) return "";
  std::string out;
  for (const TableInfo* t : TablesToWiden(*s.schema, s.linked.kept, missing)) {
    s.linked.kept.push_back(t);
    out += RenderTable(*t);
  }
  return out.empty() ? "" : "\nTables not shown before that may help:\n" + out;
}

}  // namespace querypilot
