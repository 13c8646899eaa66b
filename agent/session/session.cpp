#include "agent/session/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "agent/agent.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/chart/chart.h"
#include "agent/config.h"
#include "agent/explain.h"
#include "agent/knowledge/descriptions.h"
#include "agent/memory/metrics.h"
#include "agent/session/state.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/critic.h"
#include "agent/sql/executor.h"
#include "agent/sql/own_file.h"
#include "agent/sql/query_only.h"
#include "agent/sql/verified.h"

namespace querypilot {

Session::Session(sqlite3* db, OwnSurface own, std::function<void()> first_call)
    : db_(db), state_(std::make_unique<State>(db)) {
  state_->check = HostCheck::Adopt(db, std::move(own));
  state_->first_call = std::move(first_call);
}

Session::~Session() {
  AbandonAsyncRuns();
}

Status Session::ValidateQuestion(std::string_view question) const {
  if (text::Trim(question).empty()) {
    return Status::InvalidArgument("the question is empty: SELECT * FROM ask('Which ...?')");
  }
  int limit = config().max_question_bytes;
  if (question.size() > static_cast<size_t>(limit)) {
    return Status::InvalidArgument(fmt::format(
        "the question is {} bytes long; the limit is {} (agent_config('max_question_bytes'))",
        question.size(), limit));
  }
  if (!text::IsValidUtf8(question))
    return Status::InvalidArgument("the question is not valid UTF-8");
  if (question.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("the question contains a NUL character");
  }
  return Status::Ok();
}

Result<std::optional<std::string>> Session::Describe(const std::string& target,
                                                     const std::optional<std::string>& text,
                                                     bool read) {
  if (Status st = SettleHistory(); !st.ok()) return st;
  auto schema = state_->schema_cache.Get(db_, config().sample_rows);
  if (!schema.ok()) return schema.status();
  Result<Description> d = ResolveTarget(**schema, target);
  if (!d.ok()) return d.status();
  MutexLock lock(&state_->config_mu);
  auto it = std::find_if(
      state_->descriptions.begin(), state_->descriptions.end(),
      [&](const Description& e) { return text::EqualsIgnoreCase(e.Target(), d->Target()); });
  if (read) {
    if (it == state_->descriptions.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->text);
  }
  if (state_->history_file) {
    // It is written below: never once it is a database of the connection.
    if (Status st = CheckOwnFile(db_, state_->history_path, "history_file"); !st.ok()) return st;
  }
  // The file first: a change it could not keep is refused, and the
  // connection's descriptions stay as they were (memory and file agree).
  auto not_kept = [&](const Status& st) {
    return Status(
        st.kind(),
        fmt::format("the description of {} is not changed: history_file could not be written ({})",
                    d->Target(), st.message()));
  };
  if (!text) {
    if (state_->history_file) {
      if (Status st = state_->history_file->ForgetDescription(d->Target()); !st.ok())
        return not_kept(st);
    }
    if (it != state_->descriptions.end()) {
      state_->descriptions.erase(it);
      // What the model is told changed: an answer it gave before may not be
      // the one it would give now.
      state_->answer_cache.Clear();
    }
    return std::optional<std::string>();
  }
  std::string clean = text::Trim(*text);
  if (clean.empty()) return Status::InvalidArgument("the description is empty; NULL removes one");
  if (clean.size() > 2000) {
    return Status::InvalidArgument(fmt::format(
        "the description is {} bytes long; at most 2000 (it goes into every prompt that shows {})",
        clean.size(), d->Target()));
  }
  if (!text::IsValidUtf8(clean))
    return Status::InvalidArgument("the description is not valid UTF-8");
  d->text = clean;
  if (state_->history_file) {
    if (Status st = state_->history_file->SaveDescription(d.value()); !st.ok()) return not_kept(st);
  }
  const bool changed = it == state_->descriptions.end() || it->text != clean;
  if (it != state_->descriptions.end()) {
    *it = d.value();
  } else {
    state_->descriptions.push_back(d.value());
  }
  if (changed) state_->answer_cache.Clear();  // as above: the prompt of its answers changed
  return std::optional<std::string>(clean);
}

std::vector<Description> Session::Descriptions() const {
  SettleHistory();  // an error here is the next ask's
  MutexLock lock(&state_->config_mu);
  return state_->descriptions;
}

Status Session::CheckAskable() const {
  if (state_->ask_depth.load() > 0) {
    return Status(ErrorKind::kRefused, "ask() cannot be called from inside another ask()");
  }
  // Checked before the model is asked: nothing it wrote could run.
  if (!Host().authorizer) return Status(ErrorKind::kRefused, NoAuthorizerMessage());
  // A QUERYPILOT_* variable that could not be used stops the ask before any
  // model call: its default, or the next endpoint, is never used instead.
  if (Status st = CheckEnvironment(); !st.ok()) return st;
  if (Status st = SettleHistory(); !st.ok()) return st;
  return CheckOwnFiles();
}

Result<RunResult> Session::Run(std::string_view question) {
  if (Status st = CheckAskable(); !st.ok()) return st;
  const AskDepthGuard guard(state_->ask_depth);

  RunResult run = WithAgent([&](const AgentContext& ctx) { return Agent(ctx).Run(question); });
  if (run.status != RunStatus::kOk) {
    return Shown(state_->history, Status(run.error.kind(), run.UserMessage()));
  }
  return run;
}

Result<std::string> Session::BuildValueIndex(const std::string& database) {
  if (Status st = CheckOwnFiles(); !st.ok()) return st;  // the index file is written
  Result<nlohmann::json> built = state_->value_index.Build(db_, IndexOptions(config()), database);
  if (!built.ok()) return built.status();
  return built->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::string> Session::Explain(int64_t run_id) {
  if (Status st = CheckEnvironment(); !st.ok()) return st;
  if (Status st = SettleHistory(); !st.ok()) return st;
  if (Status st = CheckOwnFiles(); !st.ok()) return st;
  return Shown(state_->history,
               WithAgent([&](const AgentContext& ctx) { return ExplainRun(ctx, run_id); }));
}

Result<std::string> Session::Chart(int64_t run_id) {
  if (Status st = SettleHistory(); !st.ok()) return Shown(state_->history, st);
  // The error scrubbed; a spec as it is (a short secret taken out of its
  // names could break it; the model's reply lost the long ones already).
  Result<std::string> spec =
      WithAgent([&](const AgentContext& ctx) { return ChartRun(ctx, run_id); });
  if (!spec.ok()) return Shown(state_->history, spec.status());
  return spec;
}

Result<std::string> Session::ChartPage(int64_t run_id) {
  // The scripts first: a page that cannot be made runs nothing.
  Result<ChartScripts> scripts =
      FindChartScripts(ChartScriptFolders(config().chart_scripts, ExtensionDir()));
  if (!scripts.ok()) return scripts.status();
  Result<std::string> spec = Chart(run_id);
  if (!spec.ok()) return spec.status();
  std::string title;
  for (const RunRecord& run : state_->history.Runs()) {
    if (run.id == run_id) title = run.question;
  }
  return ChartHtml(*spec, *scripts, title);
}

std::vector<RunRecord> Session::Runs(std::optional<int64_t> id) const {
  SettleHistory();  // an error here is the next ask's
  return state_->history.Runs(id);
}

std::vector<AttemptRecord> Session::Attempts(std::optional<int64_t> run_id) const {
  SettleHistory();
  return state_->history.Attempts(run_id);
}

std::vector<MetricRecord> Session::Metrics() const {
  SettleHistory();
  return ComputeMetrics(state_->history.Runs(), state_->history.Attempts());
}

Status Session::Feedback(int64_t run_id, const std::string& verdict) {
  if (verdict != "good" && verdict != "bad" && !verdict.empty()) {
    return Status::InvalidArgument("the verdict is 'good', 'bad' or NULL (none)");
  }
  if (Status st = SettleHistory(); !st.ok()) return st;
  if (Status st = CheckOwnFiles(); !st.ok()) return st;  // the history file is written
  if (Status st = state_->history.SetFeedback(run_id, verdict); !st.ok()) return st;
  if (verdict == "bad") {
    // A wrong answer is not given again: the SQL the run verified leaves the
    // cache, and so does the one it repeated when it was answered from there.
    state_->answer_cache.ForgetRun(run_id);
    for (const RunRecord& run : state_->history.Runs()) {
      if (run.id == run_id && run.cached_from) state_->answer_cache.ForgetRun(run.cached_from);
    }
  }
  return Status::Ok();
}

Status Session::Forget(int64_t run_id) {
  if (Status st = SettleHistory(); !st.ok()) return st;
  if (Status st = CheckOwnFiles(); !st.ok()) return st;  // the history file is written
  // Examples and a session's earlier turns are read from the history, so the
  // run teaches nothing once it is gone from there.
  // A forgetting the history file could not keep fails whole: the run stays
  // everywhere, as the file still holds it.
  if (Status st = state_->history.Forget(run_id); !st.ok()) return st;
  state_->answer_cache.ForgetRun(run_id);
  state_->statement_answers.ForgetRun(run_id);
  return Status::Ok();
}

Result<std::unique_ptr<LiveQuery>> Session::RunAgain(const std::string& sql, size_t probe_rows,
                                                     const char* refused, const char* failed) {
  ExecutionLimits limits = QueryLimits(config());
  limits.probe_rows = probe_rows;
  return RunAgainVerified(HostTarget(state_->check, config()), sql, limits, refused, failed);
}

std::unique_ptr<AnswerStream> Session::Stream(std::unique_ptr<LiveQuery> live, int64_t record_run,
                                              RowsRecord record,
                                              std::shared_ptr<AsyncRun> async_run) {
  return std::make_unique<AnswerStream>(std::move(live), &state_->statement_answers,
                                        &state_->history, record_run, record, std::move(async_run));
}

Status Session::Reachable(std::string_view what) const {
  if (!RunningGeneratedSql(db_)) {
    std::call_once(state_->first_call_once, [this] {
      if (state_->first_call) std::exchange(state_->first_call, nullptr)();
    });
    return Status::Ok();
  }
  return Status(ErrorKind::kRefused,
                fmt::format("{} is QueryPilot's own and cannot run inside the SQL QueryPilot runs "
                            "for a model (it was reached through the connection's schema, such as "
                            "a TEMP view); nothing was done",
                            what));
}

Result<AskedRows> Session::Ask(std::string_view question) {
  SettleQueryOnly(db_, &state_->check->query_only_debt());
  if (Status st = ValidateQuestion(question); !st.ok()) return st;
  const std::string q(question);
  StatementContext context = state_->statement_answers.Current();
  AskedRows out;
  if (auto kept = state_->statement_answers.Find(q, context)) {
    // Asked before in this statement: reuse the run, never the model.
    out.answer = kept;
    if (kept->complete) return out;
    auto live =
        RunAgain(kept->sql, 1,
                 "could not re-run the answer's SQL: ", "the answer's SQL failed when re-run: ");
    if (!live.ok()) return live.status();
    out.stream = Stream(std::move(live).value(), 0, RowsRecord::kNothing);
    return out;
  }
  Result<RunResult> run = Run(question);
  if (!run.ok()) return run.status();
  // No rows, and QueryPilot doubts them: an error that says why (the run is
  // recorded as it ended).
  if (!run->doubt.empty() && config().DoubtfulEmptyIsError()) {
    return Shown(state_->history, Status(ErrorKind::kExecutionError, run->DoubtMessage()));
  }
  auto answer = AnswerOf(run.value());
  if (run->query->complete_after_probe()) {
    // Small enough to keep: later scans in this statement replay it.
    answer->complete = true;
    answer->truncated = run->query->truncated();
    answer->rows.assign(run->query->buffered_rows().begin(), run->query->buffered_rows().end());
  }
  out.stream = Stream(std::move(run->query), run->run_id, RowsRecord::kAll);
  state_->statement_answers.Keep(q, std::move(context), answer);
  out.answer = std::move(answer);
  return out;
}

Result<std::string> Session::AskSql(std::string_view question) {
  if (Status st = ValidateQuestion(question); !st.ok()) return st;
  const std::string q(question);
  StatementContext context = state_->statement_answers.Current();
  if (auto kept = state_->statement_answers.Find(q, context)) return kept->sql;
  Result<RunResult> run = Run(question);
  if (!run.ok()) return run.status();
  auto answer = AnswerOf(run.value());
  // The SQL was executed once to check it; its rows are not kept here, so a
  // later ask() of the same question in this statement re-runs the SQL.
  state_->statement_answers.Keep(q, std::move(context), answer);
  return run->sql;
}

Result<std::string> Session::Prompt(std::string_view question) {
  if (Status st = ValidateQuestion(question); !st.ok()) return st;
  if (state_->ask_depth.load() > 0) {
    return Status(ErrorKind::kRefused, "ask_prompt() cannot be called from inside an ask()");
  }
  if (!Host().authorizer) return Status(ErrorKind::kRefused, NoAuthorizerMessage());
  if (Status st = CheckOwnFiles(); !st.ok()) return st;
  const AskDepthGuard guard(state_->ask_depth);
  Result<std::vector<ChatMessage>> messages =
      WithAgent([&](const AgentContext& ctx) { return Agent(ctx).FirstMessages(question); });
  if (!messages.ok()) return Shown(state_->history, messages.status());
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages.value()) {
    // Each text scrubbed before it is JSON: a secret is found as written.
    j.push_back({{"role", ChatRoleName(m.role)}, {"content", state_->history.Scrub(m.content)}});
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::shared_ptr<const AnswerTableSpec>> Session::AnswerTable(const std::string& schema,
                                                                    const std::string& name,
                                                                    const std::string& question) {
  if (auto kept = state_->answer_tables.Find(schema, name); kept && kept->question == question) {
    return kept;  // SQLite reconnecting a table it already has
  }
  if (Status st = ValidateQuestion(question); !st.ok()) return st;
  Result<RunResult> run = Run(question);
  if (!run.ok()) return run.status();
  std::shared_ptr<const AnswerTableSpec> spec = AnswerTableSpecFor(question, run.value());
  state_->answer_tables.Keep(schema, name, spec);
  return spec;
}

Result<std::unique_ptr<AnswerStream>> Session::ScanAnswerTable(const AnswerTableSpec& spec) {
  // The verified SQL, checked again: the schema may have changed since.
  // Every row streams.
  auto live =
      RunAgain(spec.sql, 0, "the answer's SQL no longer runs: ", "the answer's SQL failed: ");
  if (!live.ok()) return live.status();
  if (live.value()->column_names().size() != static_cast<size_t>(spec.answer_columns)) {
    return Status::InvalidArgument(
        "the answer's SQL now gives other columns; create the table again");
  }
  return Stream(std::move(live).value(), spec.run_id, RowsRecord::kStops);
}

void Session::DropAnswerTable(const std::string& schema, const std::string& name) {
  state_->answer_tables.Forget(schema, name);
}

}  // namespace querypilot
