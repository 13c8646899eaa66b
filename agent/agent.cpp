#include "agent/agent.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/extract.h"
#include "agent/knowledge/linking.h"
#include "agent/model_calls.h"
#include "agent/prompts.h"
#include "agent/quality/analyse.h"
#include "agent/quality/candidates.h"
#include "agent/quality/grounding.h"
#include "agent/quality/performance.h"
#include "agent/quality/readings.h"
#include "agent/quality/result_check.h"
#include "agent/quality/review.h"
#include "agent/quality/samples.h"
#include "agent/sql/critic.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/sqldiff.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

// What model calls cost, added to the run's counts.
void AddCost(RunRecord* run, const CallCost& cost) {
  run->llm_calls += cost.calls;
  run->llm_ms += cost.ms;
  AddTokens(&run->prompt_tokens, cost.prompt_tokens);
  AddTokens(&run->completion_tokens, cost.completion_tokens);
}

// True when `schema` shows the column (or, for an empty `column`, the table):
// the host's rules left it in.
bool ShowsColumn(const Schema& schema, std::string_view database, std::string_view table,
                 std::string_view column) {
  const TableInfo* t = schema.FindTable(table, database);
  return t && (column.empty() || t->FindColumn(column));
}

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxStoredReply = 4000;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

// The earlier turns of a session a question sees.
constexpr size_t kSessionTurns = 3;

struct Agent::RunState {
  // What agent_runs will show of this run: each node fills in what it learns
  // (the question, model calls and tokens, time per node, examples shown,
  // ...), and Finish adds the outcome.
  RunRecord run;
  Clock::time_point started;
  std::shared_ptr<const Schema> schema;
  LinkedSchema linked;                // the part of the schema the prompt shows
  std::vector<ValueHint> hints;       // the stored values the question names, shown with it
  std::vector<Example> examples;      // the verified examples shown with the question
  std::string unreadable_note;        // why a user's table named ask is shown qualified
  std::vector<ChatMessage> messages;  // the conversation with the model
  std::vector<AttemptRecord> attempts;
  // Normalised SQL of every attempt so far that had SQL, with its index in
  // `attempts`.
  std::vector<std::pair<std::string, size_t>> tried;
  // The current attempt.
  std::string reply;
  std::string sql;
  std::unique_ptr<LiveQuery> query;
  Status error;
  std::vector<ReflectionIssue> result_issues;
  Reflection reflection;
  // A result that ran but was sent back for another attempt. The run returns
  // it if no later attempt does better.
  struct Kept {
    std::unique_ptr<LiveQuery> query;
    std::string sql;
    int attempt = 0;
    size_t critical = 0;
    std::vector<std::string> advice;
    std::vector<ReflectionIssue> issues;  // its findings, for its confidence
  };
  std::optional<Kept> kept;
  // The first reply's other queries (the `candidates` setting), until the
  // first reading starts.
  std::vector<std::string> pending;
  // The same, once launched as the first reading starts (readings.h): those
  // that can run beside the host's connection run while it does, until the
  // candidates node waits for them.
  std::vector<OtherReading> others;
  bool others_launched = false;
  Clock::time_point others_launched_at{};
  // Each query of the first reply as it ran, the first reading first
  // (agent/quality/candidates.h).
  std::vector<Candidate> candidates;
  // The other replies to the first prompt (the `samples` setting), as
  // written, until RunSamples judges them; then every reply's outcome.
  std::vector<std::string> sample_replies;
  std::vector<SampleOutcome> samples;
  SampleTally sample_tally;
  // The normalised SQL of the verified examples shown (confidence: an
  // example's SQL reused).
  std::vector<std::string> example_sql;
  // The model's review (the `review` setting): what it said of the answer
  // returned, its reasoning when it did not accept one, how many reviews
  // were made; and the answer it did not accept, held while the one
  // correction it asked for runs, and returned unless a review accepts that
  // correction.
  ReviewOutcome review = ReviewOutcome::kNotReviewed;
  std::string review_reasoning;
  int reviews = 0;
  struct Reviewed {
    std::unique_ptr<LiveQuery> query;
    std::string sql;
    int attempt = 0;
    std::vector<std::string> advice;
    Reflection reflection;
  };
  std::optional<Reviewed> reviewed;
  History::Standing cached;  // the confidence of the run a cached answer came from
  int stood_by = 0;  // the attempt whose query the model repeated after its result was sent back
  std::shared_ptr<const ValueLookup> values;  // the value index as this run saw it
  std::vector<Example> conversation;          // the session's earlier turns
  // The watchdog stopped a query: the connection stays interrupted until the
  // asking statement ends, so the run can run no more SQL and ends here.
  bool connection_stopped = false;
  // The plan's slow scans for the current attempt's SQL, read before it runs
  // (a query the watchdog stopped leaves no way to ask afterwards).
  std::vector<SlowScan> slow_scans;
  // Each node is timed from the end of the one before (`mark`), so the nodes
  // add up to the run's duration exactly.
  Clock::time_point mark;
  // Where Advance goes on from.
  Node node = Node::kCache;
  // A run paused before a generation's model call: the call to make, and
  // once given back, its reply.
  std::optional<ChatRequest> awaited;
  std::optional<Result<ChatReply>> given;

  // Adds to the time of a node, or of a part of one ("load_schema/value_index"),
  // in the order first seen.
  void AddTime(std::string_view name, double ms) {
    for (auto& [n, total] : run.node_times) {
      if (n == name) {
        total += ms;
        return;
      }
    }
    run.node_times.emplace_back(std::string(name), ms);
  }

  AttemptRecord& attempt() { return attempts.back(); }
};

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
      return s.reviewed && !s.query ? Node::kGenerate : Node::kFinish;
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
    if (node == Node::kGenerate && ctx_.pause_for_model && !s.given) {
      // Paused before the model call: nothing of any connection is held.
      s.awaited = GenerationRequest(s);
      if (s.kept) s.kept->query.reset();  // run again by Finish if it is the answer
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

// The same question on the same schema: the verified SQL runs again, with no
// model call. SQL that no longer runs is forgotten and the run goes on as new.
void Agent::Cache(RunState& s) {
  // A session's earlier turns give a follow-up its meaning: "and last year?"
  // is not the same question in two conversations, so it is never looked up.
  if (!ctx_.config->session.empty()) {
    s.conversation = SessionTurns(ctx_.history->Runs(), ctx_.config->session, kSessionTurns);
  }
  if (!ctx_.answer_cache || !ctx_.config->answer_cache || !s.conversation.empty()) return;
  std::optional<CachedAnswer> hit =
      ctx_.answer_cache->Find(s.run.question, ReadSchemaVersion(ReadDb()));
  if (!hit) return;
  const ExecutionLimits limits = QueryLimits(*ctx_.config);
  auto start = Clock::now();
  auto query = RunVerified(ctx_.sql, hit->sql, limits);
  if (!query.ok()) {
    ctx_.answer_cache->Forget(s.run.question);
    if (IsDatabaseFault(query.status().kind())) {  // no model call can do better
      s.error = query.status();
      return;
    }
    if (StoppedConnection(query.status())) {
      s.connection_stopped = true;
      s.error = query.status();
    }
    return;
  }
  AttemptRecord rec;
  rec.run_id = s.run.id;
  rec.attempt = 1;
  rec.sql = hit->sql;
  rec.exec_ms = MsSince(start);
  s.reflection.is_acceptable = true;
  s.reflection.reasoning = fmt::format(
      "the same question was answered by run {} on this schema; its SQL ran again "
      "without a model call",
      hit->run_id);
  rec.reflection = s.reflection.ToJson();
  s.attempts.push_back(std::move(rec));
  s.sql = hit->sql;
  s.query = std::move(query).value();
  s.run.cached_from = hit->run_id;
  s.cached = ctx_.history->StandingOf(hit->run_id);
}

void Agent::LoadSchema(RunState& s) {
  if (!ctx_.llm && !ctx_.pause_for_model) {  // no model to ask: the run ends before any attempt
    s.error = ctx_.llm_status;
    return;
  }
  BuildFirstMessages(s);
}

Result<std::vector<ChatMessage>> Agent::FirstMessages(std::string_view question) {
  RunState s;
  s.started = Clock::now();
  s.mark = s.started;
  s.run.question = std::string(question);
  // The session's earlier turns, as Cache reads them for a run.
  if (!ctx_.config->session.empty()) {
    s.conversation = SessionTurns(ctx_.history->Runs(), ctx_.config->session, kSessionTurns);
  }
  BuildFirstMessages(s);
  if (!s.error.ok()) return s.error;
  return s.messages;
}

void Agent::BuildFirstMessages(RunState& s) {
  Clock::time_point started = Clock::now();
  // The host's connection decides what may be shown (its authorizer).
  auto schema = ctx_.schema_cache->Get(ReadDb(), ctx_.config->sample_rows, ctx_.db);
  if (!schema.ok()) {
    // A damaged or unreadable file says so in its own words; no model call.
    // The host's interrupt (Ctrl-C) ends the run as interrupted.
    const ErrorKind kind = schema.status().kind();
    if (kind == ErrorKind::kInterrupted) {
      s.run.stopped_reads.push_back(schema.status().message());
      s.error = schema.status();
      return;
    }
    s.error = Status(IsDatabaseFault(kind) ? kind : ErrorKind::kInternal,
                     "could not read the schema: " + schema.status().message());
    return;
  }
  // Reads stopped at their bound: what they would have read is not shown.
  s.run.stopped_reads = schema.value()->stopped_reads;
  // A user's table named ask is shown qualified, and the prompt says why
  // (WithAskTablesQualified).
  s.schema = WithAskTablesQualified(schema.value(), &s.unreadable_note);
  s.AddTime("load_schema/schema", MsSince(started));
  // The user's descriptions, then what the data shows (coded columns): one
  // copy and one rendering of the schema when there are any.
  std::vector<Description> notes = ctx_.descriptions;
  std::vector<ValueHint>& hints = s.hints;
  if (ctx_.value_index && ctx_.config->value_hints) {
    started = Clock::now();
    s.values = ctx_.value_index->Get(ReadDb(), IndexOptions(*ctx_.config), ctx_.db);
  }
  // The last read of the user's files before the model answers: what follows
  // reads QueryPilot's own stores, so no other process need wait for it.
  if (ctx_.pre_model_reads) ctx_.pre_model_reads->End();
  if (s.values) {
    for (Description& d : CodeNotes(s.values->CodedColumns())) {
      if (ShowsColumn(*s.schema, d.database, d.table, d.column)) notes.push_back(std::move(d));
    }
  }
  s.schema = WithDescriptions(s.schema, notes);
  if (s.values) {
    // The value index reads on a connection of its own: what it found is
    // shown only for columns the schema shows (the host's rules decide),
    // those of the tables the question points at first.
    hints = s.values->Lookup(s.run.question, 12, RankHintsFor(*s.schema, s.run.question));
    std::erase_if(hints, [&](const ValueHint& h) {
      return !ShowsColumn(*s.schema, h.database, h.table, h.column);
    });
    s.AddTime("load_schema/value_index", MsSince(started));
  }
  // Only runs marked good teach unless learn_from_success: most asks skip this.
  if (ctx_.config->examples > 0 &&
      (ctx_.config->learn_from_success || ctx_.history->HasGoodRuns())) {
    s.examples = PickExamples(s.run.question,
                              TeachingRuns(ctx_.history->Runs(), ctx_.config->learn_from_success),
                              static_cast<size_t>(ctx_.config->examples));
    for (const Example& e : s.examples) {
      s.run.examples.push_back(e.run_id);
      s.example_sql.push_back(NormaliseSql(e.sql));
    }
  }
  started = Clock::now();
  WriteFirstMessages(s);
  s.AddTime("load_schema/linking", MsSince(started));
}

void Agent::WriteFirstMessages(RunState& s) {
  const std::string& rendered = s.schema->rendered;
  s.linked =
      LinkSchema(*s.schema, rendered.empty() ? RenderSchema(*s.schema) : rendered, s.run.question,
                 s.hints, static_cast<size_t>(ctx_.config->schema_budget_tokens));
  s.linked.rendered += s.unreadable_note;
  ChatMessage system{ChatRole::kSystem,
                     SystemPrompt(s.linked.rendered, ctx_.config->clarify, ctx_.config->prompts,
                                  ctx_.config->candidates)};
  ChatMessage question{ChatRole::kUser, QuestionPrompt(s.run.question, s.hints, s.examples,
                                                       s.conversation, ctx_.config->prompts)};
  if (s.messages.size() < 2) {
    s.messages = {std::move(system), std::move(question)};
  } else {
    s.messages[0] = std::move(system);
    s.messages[1] = std::move(question);
  }
}

void Agent::ApplyHostRulesNow(RunState& s) {
  if (!s.schema || s.messages.size() < 2) return;
  // On the host's connection, compiled there and never run; compared with
  // QueryPilot's own connection where the run has one (AgentContext::read_db).
  Result<Schema> now = UnderHostRulesNow(*s.schema, ctx_.db, ctx_.read_db);
  if (ctx_.pre_model_reads) ctx_.pre_model_reads->End();
  if (!now.ok()) {
    // The host's interrupt: the run ends with it, its reply recorded.
    s.error = now.status();
    return;
  }
  // Rules unchanged leave the conversation as it was sent.
  RenderInto(&now.value());
  if (now->rendered == RenderSchema(*s.schema)) return;
  s.schema = std::make_shared<const Schema>(std::move(now).value());
  std::erase_if(s.hints, [&](const ValueHint& h) {
    return !ShowsColumn(*s.schema, h.database, h.table, h.column);
  });
  WriteFirstMessages(s);
}

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

void Agent::Generate(RunState& s) {
  // A paused run's call was made elsewhere (Advance): its reply is given.
  const ChatRequest req = s.given ? std::move(*s.awaited) : GenerationRequest(s);
  const bool given = s.given.has_value();
  CallCost cost;
  Result<ChatReply> reply = given ? std::move(*s.given) : ModelCalls(ctx_).Call(req, &cost);
  if (given) {
    // Made on a worker thread: counted as a call made here is.
    if (reply.ok()) {
      cost.Add(*reply);
    } else {
      cost.AddFailed();
    }
  }
  s.awaited.reset();
  s.given.reset();
  AddCost(&s.run, cost);
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
// 300 ms from their start); on the host's connection
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
  runner.beside_share_ms = OtherReadingLimits(*ctx_.config).timeout_ms;
  runner.reread = QueryLimits(*ctx_.config);
  runner.limits = QueryLimits(*ctx_.config);
  // Never sqlite3_interrupt: it would end the statement that asked, and the
  // answer with it.
  runner.limits.stop = LookupStop(*ctx_.config);
  runner.limits.timeout_ms =
      std::max(10, std::min(std::max(kReadingsFloorMs, RelativeBudgetMs(runner.first_ms)),
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
  if (s.schema) a.hint = ComputeHint(s.error.kind(), s.error.message(), s.sql, *s.schema);
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
  return ctx_.config->review && ctx_.llm && !ctx_.pause_for_model && s.error.ok() && s.query &&
         s.reflection.is_acceptable && !s.run.cached_from && s.reviews < 2;
}

void Agent::Review(RunState& s) {
  ++s.reviews;
  const bool second = s.reviewed.has_value();  // the review of its own correction
  ReviewSubject subject;
  subject.question = s.run.question;
  subject.sql = s.sql;
  if (s.schema) subject.tables = FindQueryTables(s.sql, *s.schema).tables;
  subject.columns = &s.query->column_names();
  subject.rows = &s.query->buffered_rows();
  subject.complete = s.query->complete_after_probe();
  subject.review_rows = ctx_.config->review_rows;
  ModelCalls calls(ctx_);
  const ChatRequest request = calls.Request(
      ModelStep::kReview,
      {{ChatRole::kSystem, std::string(PromptTextFor(ctx_.config->prompts, "review"))},
       {ChatRole::kUser, ReviewPrompt(subject)}});
  CallCost cost;
  Result<ChatReply> reply = calls.Call(request, &cost);
  AddCost(&s.run, cost);
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
    if (s.linked.pruned && strategy == CorrectionStrategy::kColumn) prompt += WidenSchema(s);
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
  const std::string missing = MissingName(s.error.message());
  std::string out;
  for (const TableInfo* t : TablesToWiden(*s.schema, s.linked.kept, missing)) {
    s.linked.kept.push_back(t);
    out += RenderTable(*t);
  }
  return out.empty() ? "" : "\nTables not shown before that may help:\n" + out;
}

void Agent::RunSamples(RunState& s, const std::string& answer_sql) {
  const std::deque<Row> no_rows;
  const std::vector<std::string> no_columns;
  const bool answered = !answer_sql.empty() && s.query;
  const ResultRows returned = answered
                                  ? ResultRows{&s.query->column_names(), &s.query->buffered_rows(),
                                               s.query->complete_after_probe()}
                                  : ResultRows{&no_columns, &no_rows, false};
  const std::string answer = NormaliseSql(answer_sql);
  auto rows_of = [](const ResultRows& r) {
    return r.complete ? static_cast<int64_t>(r.rows->size()) : int64_t{-1};
  };
  // Every reply's first reading: the first reply's is attempt 1's query.
  std::vector<std::string> readings = {s.attempts.empty() ? "" : s.attempts.front().sql};
  // Each other reply is read as the first was: its first ```sql block where
  // it may hold alternatives (with candidates 1, its one query).
  const size_t most = static_cast<size_t>(ctx_.config->candidates);
  for (const std::string& reply : s.sample_replies) {
    Result<std::vector<std::string>> sql = ExtractCandidates(reply, most);
    readings.push_back(sql.ok() ? sql->front() : "");
  }
  std::vector<std::string> normalised;
  for (const std::string& sql : readings) normalised.push_back(NormaliseSql(sql));
  // A reading with the same SQL as the answer, a candidate that ran or an
  // earlier sample is not run again.
  auto candidate_of = [&](const std::string& norm) -> const Candidate* {
    for (const Candidate& c : s.candidates) {
      if (c.ran && NormaliseSql(c.sql) == norm) return &c;
    }
    return nullptr;
  };
  int to_run = 0;
  for (size_t i = 0; i < readings.size(); ++i) {
    const bool earlier = std::find(normalised.begin(), normalised.begin() + static_cast<long>(i),
                                   normalised[i]) != normalised.begin() + static_cast<long>(i);
    to_run += answered && !readings[i].empty() && normalised[i] != answer &&
              !candidate_of(normalised[i]) && !earlier;
  }
  ExecutionLimits limits = QueryLimits(*ctx_.config);
  // Never sqlite3_interrupt: it would end the statement that asked, and the
  // answer with it.
  limits.stop = LookupStop(*ctx_.config);
  limits.timeout_ms = std::max(10, ctx_.config->sql_timeout_ms / 2 / std::max(1, to_run));
  s.samples.clear();
  for (size_t i = 0; i < readings.size(); ++i) {
    SampleOutcome o;
    o.sql = readings[i];
    const size_t same = static_cast<size_t>(
        std::find(normalised.begin(), normalised.begin() + static_cast<long>(i), normalised[i]) -
        normalised.begin());
    if (o.sql.empty()) {
      o.failure = "the reply holds no SQL";
    } else if (!answered) {
      o.failure = "not run: the run has no answer to compare with";
    } else if (normalised[i] == answer) {
      o.ran = true;
      o.agreement = Agreement::kSame;
      o.rows = rows_of(returned);
      o.gives = DescribeAnswer(returned);
    } else if (const Candidate* c = candidate_of(normalised[i])) {
      o.ran = true;
      o.agreement = CompareResults(c->View(), returned);
      o.rows = rows_of(c->View());
      o.gives = DescribeAnswer(c->View());
    } else if (same < i) {  // written again: the same answer
      o = s.samples[same];
    } else if (s.connection_stopped) {
      o.failure = "not run: the connection was stopped";
    } else {
      auto query = RunVerified(ctx_.sql, o.sql, limits);
      if (!query.ok()) {
        o.failure = query.status().kind() == ErrorKind::kTimeout
                        ? fmt::format("past its share of the time budget ({} ms): dropped",
                                      limits.timeout_ms)
                        : query.status().message();
      } else {
        const LiveQuery& q = **query;
        const ResultRows rows{&q.column_names(), &q.buffered_rows(), q.complete_after_probe()};
        o.ran = true;
        o.agreement = CompareResults(rows, returned);
        o.rows = rows_of(rows);
        o.gives = DescribeAnswer(rows);
      }
    }
    s.samples.push_back(std::move(o));
  }
  s.sample_tally = TallySamples(s.samples);
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
  const bool return_held = s.reviewed && s.reviewed->query &&
                           s.error.kind() != ErrorKind::kInterrupted &&
                           (!s.connection_stopped || s.reviewed->query->complete_after_probe());
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
      s.reflection.is_acceptable && s.review != ReviewOutcome::kNotAccepted && !key.empty()) {
    ctx_.answer_cache->Put(key, {out.sql, run.id, s.schema->schema_version});
  }
  if (!s.samples.empty()) {
    const Clock::time_point started = Clock::now();
    RunSamples(s, out.status == RunStatus::kOk ? out.sql : "");
    s.AddTime("finish/samples", MsSince(started));
    run.samples = SamplesJson(s.sample_tally, s.samples);
  }
  if (out.status == RunStatus::kOk && s.query) {
    if (run.cached_from) {
      // The same answer as the run it came from: its confidence, its reason
      // and the readings that made them.
      run.confidence = s.cached.confidence;
      run.confidence_reason = s.cached.confidence_reason;
      run.alternatives = s.cached.alternatives;
    } else {
      ConfidenceVerdict verdict = AnswerConfidence(s, out, returned_kept);
      run.confidence = verdict.score;
      run.confidence_reason = std::move(verdict.reason);
    }
  }
  run.review = std::string(ReviewOutcomeName(s.review));
  out.confidence = run.confidence;
  out.confidence_reason = run.confidence_reason;
  if (!s.candidates.empty()) run.alternatives = AlternativesJson(s.candidates);
  ctx_.history->Add(std::move(run), std::move(s.attempts));
  if (s.error.ok()) out.query = std::move(s.query);
  return out;
}

ConfidenceVerdict Agent::AnswerConfidence(const RunState& s, const RunResult& out,
                                          bool returned_kept) const {
  ReturnedAnswer answer;
  answer.answer_attempt = out.answer_attempt;
  answer.issues = returned_kept ? &s.kept->issues : &s.reflection.issues;
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
