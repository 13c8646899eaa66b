#include "agent/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "agent/agent.h"
#include "agent/async_runs.h"
#include "agent/base/confidence.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/chart.h"
#include "agent/config.h"
#include "agent/explain.h"
#include "agent/knowledge/descriptions.h"
#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "agent/memory/answer_cache.h"
#include "agent/memory/history.h"
#include "agent/memory/history_file.h"
#include "agent/memory/metrics.h"
#include "agent/prompts.h"
#include "agent/providers/http.h"
#include "agent/providers/provider.h"
#include "agent/providers/url.h"
#include "agent/quality/findings.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/critic.h"
#include "agent/sql/executor.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/own_file.h"
#include "agent/sql/program.h"
#include "agent/sql/query_only.h"
#include "agent/sql/read_connection.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

// Counts an ask (or a prompt built as an ask builds it) in progress on the
// connection for as long as it lives, so that a nested one is refused.
class AskDepthGuard {
 public:
  explicit AskDepthGuard(std::atomic<int>& depth) : depth_(depth) { depth_.fetch_add(1); }
  ~AskDepthGuard() { depth_.fetch_sub(1); }
  AskDepthGuard(const AskDepthGuard&) = delete;
  AskDepthGuard& operator=(const AskDepthGuard&) = delete;

 private:
  std::atomic<int>& depth_;
};

const char* Getenv(const char* name) {
  return std::getenv(name);
}

// The provider `config` names, as ResolveProvider resolves it; once resolved,
// its secrets are known to `history` from then on, which takes them out of
// every text it keeps and of the errors and texts the session shows
// (Shown).
Result<ResolvedProvider> Resolved(const Config& config, History& history) {
  Result<ResolvedProvider> provider = ResolveProvider(config, Getenv);
  if (provider.ok()) history.KnowSecrets(ProviderSecrets(provider.value()));
  return provider;
}

// What leaves for SQL: `st`, or a text or its error, with every secret
// `history` knows taken out (Secrets::Scrub).
Status Shown(const History& history, const Status& st) {
  if (st.ok()) return st;
  return Status(st.kind(), history.Scrub(st.message()));
}
Result<std::string> Shown(const History& history, Result<std::string> r) {
  if (!r.ok()) return Shown(history, r.status());
  return history.Scrub(r.value());
}

// What the host's SQLite gives, and the guarantees that follow from it:
// agent_config('host'), and "host" in agent_config().
nlohmann::ordered_json HostJson(const Config& config) {
  const HostSqlite h = Host();
  nlohmann::ordered_json j;
  j["sqlite_version"] = sqlite3_libversion();
  j["progress_handler"] = h.progress_handler;
  j["authorizer"] = h.authorizer;
  j["column_metadata"] = h.column_metadata;
  // False where SQLite's mutexes are off (SQLITE_THREADSAFE=0, or
  // SQLITE_CONFIG_SINGLETHREAD, as in dqlite): QueryPilot then reads nothing
  // from a thread of its own.
  j["threads"] = h.threads;
  j["time_budget"] =
      config.progress_handler && h.progress_handler
          ? "QueryPilot's progress handler while its SQL runs: a query past sql_timeout_ms is sent "
            "back for a faster one; the connection's own progress handler is cleared by an ask"
          : "sqlite3_interrupt from a watchdog thread: a query past sql_timeout_ms ends the "
            "statement that asked; the connection's own progress handler is left in place";
  if (!h.authorizer) j["generated_sql"] = NoAuthorizerMessage();
  return j;
}

// A run's answer as a statement keeps it: its id, SQL, confidence and its
// reason, and column names.
std::shared_ptr<StatementAnswer> AnswerOf(const RunResult& run) {
  auto answer = std::make_shared<StatementAnswer>();
  answer->run_id = run.run_id;
  answer->sql = run.sql;
  answer->confidence = run.confidence;
  answer->confidence_reason = run.confidence_reason;
  answer->column_names = run.query->column_names();
  return answer;
}

// The history file of a connection whose history_file is "" (the default):
// for a database file, a file of QueryPilot's own in the cache folder,
// named by the database's identity (DatabaseFileKey), in a folder it made
// (OwnFolder: the user's, mode 0700, no link); "" (none: memory only) for a
// memory or temporary database, or one whose file is not on disk (another
// VFS's). An error says why none can be used where one is meant to be.
Result<std::string> DefaultHistoryFile(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  if (!file || !*file) return std::string();
  Result<std::string> key = DatabaseFileKey(file);
  if (!key.ok()) return std::string();
  const std::string dir = CacheFolder("history");
  if (dir.empty()) {
    return Status::InvalidArgument(
        "there is no cache folder ($XDG_CACHE_HOME or $HOME) to keep it in");
  }
  Result<std::string> folder = OwnFolder(dir, true);
  if (!folder.ok()) return folder.status();
  const std::string path = fmt::format("{}/{}.qphistory", *folder, *key);
  // A name in a folder of its own: whatever is there that is not a plain
  // file of the user's (a link) goes, the name only.
  if (Result<std::string> cleared = ClearOwnFileName(path); !cleared.ok()) return cleared.status();
  return path;
}

constexpr const char* kNoProgressCallbacks =
    "progress_handler cannot be 1 here: this SQLite was built without progress callbacks "
    "(SQLITE_OMIT_PROGRESS_CALLBACK), so a query past sql_timeout_ms is stopped with "
    "sqlite3_interrupt, which ends the statement that asked";

}  // namespace

struct Session::State {
  explicit State(sqlite3* db)
      : registration(db),
        config(Config::FromEnvironment(Getenv, EnvironmentNames(), &environment_errors)),
        statement_answers(db) {}

  // Its files, known to the own-file checks of the process's other
  // connections while this session lives (agent/sql/own_file.h).
  HostConnectionRegistration registration;
  Mutex config_mu;
  // QUERYPILOT_* variables read at load whose values could not be used
  // (declared before config, which fills it). One is forgotten once its
  // setting is set on the connection.
  std::vector<EnvironmentError> environment_errors GUARDED_BY(config_mu);
  Config config GUARDED_BY(config_mu);
  std::vector<Description> descriptions GUARDED_BY(config_mu);
  History history;
  // The history file this connection settled on (history_file, or the
  // default of its database): at the first call that reads or writes the
  // history, or when history_file is set. Null for none.
  bool history_settled GUARDED_BY(config_mu) = false;
  std::shared_ptr<HistoryFile> history_file GUARDED_BY(config_mu);
  std::string history_path GUARDED_BY(config_mu);  // its name; "" for none
  SchemaCache schema_cache;
  ValueIndexCache value_index;
  ReadConnection reader;
  AnswerCache answer_cache;
  CurlTransport transport;
  std::atomic<int> ask_depth{0};
  StatementAnswers statement_answers;
  AnswerTables answer_tables;
  // Work left for the connection's first call of QueryPilot's (Session's
  // constructor), run once by Reachable on the connection's thread.
  std::function<void()> first_call;
  std::once_flag first_call_once;
  // The connection's check connection, where generated SQL is judged
  // (agent/sql/check_connection.h). Declared last, so it goes first.
  std::shared_ptr<HostCheck> check;
};

Session::Session(sqlite3* db, OwnSurface own, std::function<void()> first_call)
    : db_(db), state_(std::make_unique<State>(db)) {
  state_->check = HostCheck::Adopt(db, std::move(own));
  state_->first_call = std::move(first_call);
}

Session::~Session() {
  // Runs this connection started and nobody finished are lost: their calls
  // are cancelled, and their records say so (agent/async_runs.h).
  AsyncRuns::Process().Abandon(state_.get(), [this](AsyncRun& run) {
    run.mu.AssertHeld();  // Abandon calls it under the run's lock
    const std::string why = fmt::format(
        "the connection that started run {} closed while it waited on its model; ask again",
        run.id);
    RunRecord rec = Agent::PendingRecord(*run.run, RunStatus::kLost);
    rec.provider = run.provider_name;
    rec.model = run.model;
    rec.error = why;
    rec.error_type = std::string(ErrorKindName(ErrorKind::kInterrupted));
    state_->history.Add(std::move(rec), Agent::AttemptsSoFar(*run.run));
    run.error = Status(ErrorKind::kInterrupted, fmt::format("run {} is lost: {}", run.id, why));
  });
}

Status Session::CheckEnvironment() const {
  MutexLock lock(&state_->config_mu);
  return EnvironmentStatus(state_->environment_errors);
}

Config Session::config() const {
  MutexLock lock(&state_->config_mu);
  return state_->config;
}

Status Session::Set(const std::string& key, const std::string& value) {
  MutexLock lock(&state_->config_mu);
  Status st = SetLocked(key, value);
  if (st.ok()) {
    // The connection now says what the variable failed to: its error goes.
    std::erase_if(state_->environment_errors,
                  [&key](const EnvironmentError& e) { return e.key == key; });
  }
  return st;
}

Status Session::SetLocked(const std::string& key, const std::string& value) {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  if (key == "history_file") return AttachHistoryFile(value);
  if (key == "max_history_runs") {
    if (Status st = state_->config.Set(key, value); !st.ok()) return st;
    if (state_->history_file) state_->history_file->SetMaxRuns(state_->config.max_history_runs);
    return Status::Ok();
  }
  if (key == "host" || key == "value_index" || key == "findings" || key == "confidence") {
    return Status::InvalidArgument(
        key == "host"          ? "host is read-only: what this connection's SQLite provides"
        : key == "value_index" ? "value_index is read-only: how far the value index has read"
        : key == "findings"    ? "findings is read-only: what the result checks can find"
                               : "confidence is read-only: how an answer's confidence is weighed");
  }
  if (key == "in_use" || key == "problems") {
    return Status::InvalidArgument(
        key == "in_use"
            ? "in_use is read-only: the provider, model and endpoint the next ask uses"
            : "problems is read-only: what the next ask would stop at before a model call");
  }
  if (key == "value_index_file" && !value.empty()) {
    if (Status st = CheckValueIndexFile(value); !st.ok()) return st;
  }
  Config changed = state_->config;
  if (Status st = changed.Set(key, value); !st.ok()) return st;
  if (changed.progress_handler && !Host().progress_handler) {
    return Status::InvalidArgument(kNoProgressCallbacks);
  }
  state_->config = std::move(changed);
  return Status::Ok();
}

Status Session::CheckValueIndexFile(const std::string& path) const {
  // Never one of the connection's own files, by identity (agent/sql/own_file.h):
  // the index is written to.
  Result<std::shared_ptr<ValueStore>> store = ValueStore::Open(path, db_);
  return store.ok() ? Status::Ok() : store.status();
}

Status Session::CheckOwnFiles() const {
  // A file attached (or linked) since it was set is refused now: QueryPilot
  // writes its own files, and never a database of the connection.
  Config cfg;
  std::string history_path;
  {
    MutexLock lock(&state_->config_mu);
    cfg = state_->config;
    history_path = state_->history_path;
  }
  const bool has_history_file = !history_path.empty();
  if (has_history_file) {
    if (Status st = CheckOwnFile(db_, history_path, "history_file"); !st.ok()) return st;
  }
  if (!cfg.value_index_file.empty()) {
    if (Status st = CheckOwnFile(db_, cfg.value_index_file, "value_index_file"); !st.ok())
      return st;
  }
  // Those checks recorded the connection's databases for the process's
  // other connections; without them, this does.
  if (!has_history_file && cfg.value_index_file.empty()) RecordConnectionDatabases(db_);
  return Status::Ok();
}

Status Session::AttachHistoryFile(const std::string& value) {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  if (state_->history_file) {
    if (value == state_->config.history_file || value == state_->history_path) return Status::Ok();
    return Status::InvalidArgument(
        "history_file is already " + state_->history_path +
        (state_->config.history_file.empty() ? " (the default for this database)" : "") +
        "; open a new connection for another, and set it before that connection's first ask");
  }
  if (value == state_->config.history_file && state_->history_settled) return Status::Ok();
  if (value == kHistoryOff) {  // no file: memory only from now on, whatever was asked
    state_->config.history_file = value;
    state_->history_settled = true;
    state_->history.SetNoSinkReason("");
    return Status::Ok();
  }
  if (!state_->history.empty()) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  if (value.empty()) {  // the default, settled at the first call that needs it
    state_->config.history_file = value;
    state_->history_settled = false;
    state_->history.SetNoSinkReason("");
    return Status::Ok();
  }
  // A file named is opened now: one that cannot be used is refused at once.
  return OpenHistoryFile(value, false);
}

void Session::ShowLostRuns() const {
  // A run that waited on its model (ask_start) and is no longer waiting in
  // this process was started by a process that ended, or by another that
  // may still be waiting: it is shown lost here, and its record in the file
  // is left to the process that started it.
  for (RunRecord& r : state_->history.Runs()) {
    if (r.status != RunStatus::kPending && r.status != RunStatus::kReady) continue;
    // Still waiting, in this process (an id of another database's run is
    // another run).
    if (auto live = AsyncRuns::Process().Find(r.id); live && live->databases == DatabasesKey(db_)) {
      AsyncRun& run = *live;
      MutexLock lock(&run.mu);
      if (run.state == AsyncState::kPending || run.state == AsyncState::kReady) continue;
    }
    r.status = RunStatus::kLost;
    r.error =
        "the process that started it ended (or is another process) while it waited on its "
        "model; ask again";
    r.error_type = std::string(ErrorKindName(ErrorKind::kInterrupted));
    state_->history.ShowOnly(std::move(r));
  }
}

Status Session::SettleHistory() const {
  {
    MutexLock lock(&state_->config_mu);
    if (!state_->history_settled) return SettleHistoryLocked();
  }
  // Settled: what other connections and processes wrote since is read.
  if (state_->history.Refresh()) ShowLostRuns();
  return Status::Ok();
}

Status Session::SettleHistoryLocked() const {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  const std::string named = state_->config.history_file;
  if (named == kHistoryOff) {
    state_->history_settled = true;
    return Status::Ok();
  }
  // A file named (QUERYPILOT_HISTORY_FILE): one that cannot be used fails
  // the call, as the setting would.
  if (!named.empty()) return OpenHistoryFile(named, false);
  Result<std::string> path = DefaultHistoryFile(db_);
  Status st = !path.ok() ? path.status() : Status::Ok();
  if (path.ok() && !path->empty()) st = OpenHistoryFile(*path, true);
  if (!st.ok()) {
    // The default could not be used: memory only, and each run says so.
    state_->history.SetNoSinkReason(fmt::format("the default history file: {}", st.message()));
  }
  state_->history_settled = true;
  return Status::Ok();
}

Status Session::OpenHistoryFile(const std::string& path, bool is_default) const {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  if (!state_->history.empty()) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  std::vector<RunRecord> runs;
  std::vector<AttemptRecord> attempts;
  Result<std::shared_ptr<HistoryFile>> file =
      HistoryFile::Open(db_, path, &runs, &attempts, is_default);
  if (!file.ok()) return file.status();
  // Descriptions kept in the file come back; those given before it was set
  // go into it, before the history is attached: a file that cannot take them
  // is refused, and the connection goes on as it was.
  for (const Description& d : state_->descriptions) {
    if (Status st = file.value()->SaveDescription(d); !st.ok()) {
      return Status(st.kind(),
                    "history_file " + path +
                        " could not keep this connection's descriptions: " + st.message());
    }
  }
  file.value()->SetMaxRuns(state_->config.max_history_runs);
  int64_t largest = 0;
  for (const RunRecord& r : runs) largest = std::max(largest, r.id);
  if (!state_->history.Attach(file.value(), std::move(runs), std::move(attempts))) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  if (!is_default) state_->config.history_file = path;
  state_->history_file = std::move(file).value();
  state_->history_path = path;
  state_->history_settled = true;
  state_->history.SetNoSinkReason("");
  // Runs the file holds were numbered by earlier processes (or other
  // connections): the process's asynchronous runs, on every connection,
  // are numbered after them, so that an id never means two runs.
  AsyncRuns::Process().SkipPast(largest);
  ShowLostRuns();
  for (Description& d : state_->history_file->LoadDescriptions()) {
    auto same = [&d](const Description& e) {
      return text::EqualsIgnoreCase(e.Target(), d.Target());
    };
    if (std::none_of(state_->descriptions.begin(), state_->descriptions.end(), same))
      state_->descriptions.push_back(std::move(d));
  }
  return Status::Ok();
}

Result<Value> Session::Setting(const std::string& key) const {
  if (key == "in_use" || key == "problems") {
    return Value(nlohmann::json::parse(ConfigCheckJson())[key].dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  MutexLock lock(&state_->config_mu);
  if (key == "history_file") return Value(ShownHistoryFile());
  if (key == "host") return Value(HostJson(state_->config).dump());
  if (key == "findings") return Value(FindingsJson());
  if (key == "confidence") return Value(ConfidenceJson());
  if (key == "value_index") {
    return Value(state_->value_index.Progress().dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace));
  }
  Result<std::string> v = state_->config.Get(key, Getenv);
  if (!v.ok()) return v.status();
  // A number reads back as a number: agent_config('max_rows') + 1 works.
  switch (Config::TypeOf(key)) {
    case Config::ValueType::kInteger:
      return Value(static_cast<int64_t>(std::stoll(v.value())));
    case Config::ValueType::kReal:
      return Value(std::stod(v.value()));
    case Config::ValueType::kText:
      break;
  }
  return Value(std::move(v).value());
}

Status Session::Reset(const std::string& key) {
  if (key == "api_key") return Set(key, "");
  Result<std::string> def = Config().Get(key, [](const char*) -> const char* { return nullptr; });
  if (!def.ok()) return def.status();
  return Set(key, def.value());
}

std::string Session::SettingsJson() const {
  nlohmann::ordered_json check = nlohmann::ordered_json::parse(ConfigCheckJson());
  MutexLock lock(&state_->config_mu);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(state_->config.ToJson(Getenv));
  j["history_file"] = ShownHistoryFile();
  j["host"] = HostJson(state_->config);
  j["in_use"] = std::move(check["in_use"]);
  j["problems"] = std::move(check["problems"]);
  return state_->history.Scrub(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string Session::ShownHistoryFile() const {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  return state_->history_path.empty() ? state_->config.history_file : state_->history_path;
}

std::string Session::ConfigCheckJson() const {
  // What the next ask reads before its first model call, in its order: the
  // QUERYPILOT_* variables, then the provider resolved from the settings and
  // the environment. Nothing is sent anywhere.
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  if (Status st = CheckEnvironment(); !st.ok()) problems.push_back(st.message());
  nlohmann::ordered_json in_use = nullptr;
  Result<ResolvedProvider> provider = Resolved(config(), state_->history);
  if (provider.ok()) {
    in_use = {{"provider", std::string(ProviderName(provider->kind))},
              {"model", provider->model},
              {"endpoint", RedactUrl(provider->endpoint)}};
    // A base URL the ask would still send to, most likely wrongly.
    for (const std::string& p : provider->likely_problems) problems.push_back(p);
  } else {
    problems.push_back(provider.status().message());
  }
  nlohmann::ordered_json j = {{"in_use", std::move(in_use)}, {"problems", std::move(problems)}};
  return state_->history.Scrub(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Result<std::string> Session::PromptText(const std::string& name) const {
  if (Status st = ValidatePromptText(name, "x"); !st.ok()) return st;
  return std::string(PromptTextFor(config().prompts, name));
}

std::vector<PromptRecord> Session::Prompts() const {
  const PromptOverrides overrides = config().prompts;
  std::vector<PromptRecord> rows;
  for (const querypilot::PromptText& t : DefaultPromptTexts()) {
    rows.push_back({std::string(t.name), std::string(PromptTextFor(overrides, t.name)),
                    overrides.count(std::string(t.name)) == 0, std::string(t.description)});
  }
  return rows;
}

Result<std::string> Session::SetPrompt(const std::string& name,
                                       const std::optional<std::string>& text) {
  MutexLock lock(&state_->config_mu);
  if (Status st = ValidatePromptText(name, text ? *text : std::string("x")); !st.ok()) return st;
  if (text) {
    state_->config.prompts[name] = *text;
  } else {
    state_->config.prompts.erase(name);
  }
  return std::string(PromptTextFor(state_->config.prompts, name));
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

namespace {

// The host's connection as generated SQL reaches it, with the functions the
// user allows besides SQLite's own as `cfg` sets them now (the setting was
// checked when it was set).
SqlTarget HostTarget(const std::shared_ptr<HostCheck>& check, const Config& cfg) {
  Result<std::set<std::string>> allowed = ParseFunctionNames(cfg.allow_functions);
  check->AllowFunctions(allowed.ok() ? std::move(allowed).value() : std::set<std::string>{});
  return SqlTarget::Host(check);
}

}  // namespace

template <typename F>
auto Session::WithAgent(F&& f, bool pause_for_model) {
  const Config cfg = config();
  AgentContext ctx;
  ctx.db = db_;
  ctx.pause_for_model = pause_for_model;
  ctx.sql = HostTarget(state_->check, cfg);
  // Held for the run: reads before a model call leave the host's files
  // unlocked (agent/sql/read_connection.h).
  const std::shared_ptr<sqlite3> reader = state_->reader.For(db_);
  if (reader.get() != db_) ctx.read_db = reader.get();
  // What the run reads there before its first model call is one read
  // transaction, which the agent ends once that reading is done; every model
  // call ends it before the call at the latest (ModelCalls::Call,
  // agent/model_calls.h), and this scope at the run's end.
  PreModelReads reads(ctx.read_db);
  if (ctx.read_db) ctx.pre_model_reads = &reads;
  ctx.config = &cfg;
  ctx.schema_cache = &state_->schema_cache;
  ctx.value_index = &state_->value_index;
  ctx.descriptions = Descriptions();
  ctx.answer_cache = &state_->answer_cache;
  ctx.history = &state_->history;
  Result<ResolvedProvider> provider = Resolved(cfg, state_->history);
  InterruptProbe probe(db_);
  std::unique_ptr<ProviderClient> client;
  if (provider.ok() && pause_for_model) {  // the model is called elsewhere
    ctx.provider_name = std::string(ProviderName(provider->kind));
    ctx.model = provider->model;
  } else if (provider.ok()) {
    ctx.provider_name = std::string(ProviderName(provider->kind));
    ctx.model = provider->model;
    // Ctrl-C in the shell (sqlite3_interrupt) stops a model call within
    // about 50 ms, on every SQLite version (agent/sql/interrupt.h).
    client = std::make_unique<ProviderClient>(provider.value(), ProviderOptionsFrom(cfg),
                                              &state_->transport,
                                              [&probe] { return probe.Interrupted(); });
    ctx.llm = client.get();
  } else {
    ctx.llm_status = provider.status();
    ctx.provider_name = cfg.provider;
    ctx.model = cfg.model;
  }
  return f(static_cast<const AgentContext&>(ctx));
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

std::vector<RunRecord> Session::Runs() const {
  SettleHistory();  // an error here is the next ask's
  return state_->history.Runs();
}

std::vector<AttemptRecord> Session::Attempts() const {
  SettleHistory();
  return state_->history.Attempts();
}

std::vector<MetricRecord> Session::Metrics() const {
  SettleHistory();
  return ComputeMetrics(state_->history.Runs(), state_->history.Attempts());
}

namespace {

// A record table's columns: each one's declaration and how a record shows it.
template <typename Record>
struct RecordColumn {
  std::string declaration;  // "name TYPE"
  std::function<RecordCell(const Record&)> show;
};

RecordCell CellText(std::string s) {
  return {Value(std::move(s))};
}

// agent_runs' and agent_attempts' columns: one per row of their field table
// (agent/memory/history.h), which says each one's name, type and value.
template <typename Record, size_t N>
std::vector<RecordColumn<Record>> RecordFieldColumns(const RecordField<Record> (&fields)[N]) {
  std::vector<RecordColumn<Record>> cols;
  for (const RecordField<Record>& f : fields) {
    cols.push_back(
        {std::string(f.column) + " " + std::string(DeclaredType(f)), [&f](const Record& r) {
           ShownValue shown = ShowField(f, r);
           return RecordCell{std::move(shown.value), shown.json};
         }});
  }
  return cols;
}

template <typename Record>
const std::vector<RecordColumn<Record>>& RecordColumnsOf();

template <>
const std::vector<RecordColumn<RunRecord>>& RecordColumnsOf() {
  static const auto* cols =
      new std::vector<RecordColumn<RunRecord>>(RecordFieldColumns(kRunFields));
  return *cols;
}

template <>
const std::vector<RecordColumn<AttemptRecord>>& RecordColumnsOf() {
  static const auto* cols =
      new std::vector<RecordColumn<AttemptRecord>>(RecordFieldColumns(kAttemptFields));
  return *cols;
}

template <>
const std::vector<RecordColumn<MetricRecord>>& RecordColumnsOf() {
  static const auto* cols = new std::vector<RecordColumn<MetricRecord>>{
      {"metric TEXT", [](const MetricRecord& m) { return CellText(m.metric); }},
      {"value NUMERIC",
       [](const MetricRecord& m) {
         if (!m.value) return RecordCell{};
         if (m.kind == MetricKind::kCount) return RecordCell{static_cast<int64_t>(*m.value)};
         return RecordCell{*m.value};
       }},
      {"description TEXT", [](const MetricRecord& m) { return CellText(m.description); }},
  };
  return *cols;
}

template <>
const std::vector<RecordColumn<PromptRecord>>& RecordColumnsOf() {
  static const auto* cols = new std::vector<RecordColumn<PromptRecord>>{
      {"name TEXT", [](const PromptRecord& p) { return CellText(p.name); }},
      {"text TEXT", [](const PromptRecord& p) { return CellText(p.text); }},
      {"is_default INTEGER",
       [](const PromptRecord& p) { return RecordCell{int64_t{p.is_default ? 1 : 0}}; }},
      {"description TEXT", [](const PromptRecord& p) { return CellText(p.description); }},
  };
  return *cols;
}

template <>
const std::vector<RecordColumn<Description>>& RecordColumnsOf() {
  static const auto* cols = new std::vector<RecordColumn<Description>>{
      {"target TEXT", [](const Description& d) { return CellText(d.Target()); }},
      {"database TEXT", [](const Description& d) { return CellText(d.database); }},
      {"table_name TEXT", [](const Description& d) { return CellText(d.table); }},
      {"column_name TEXT",
       [](const Description& d) { return d.column.empty() ? RecordCell{} : CellText(d.column); }},
      {"description TEXT", [](const Description& d) { return CellText(d.text); }},
  };
  return *cols;
}

template <typename Record>
const std::vector<std::string>& RecordDeclarations() {
  static const auto* out = [] {
    auto* v = new std::vector<std::string>();
    for (const auto& c : RecordColumnsOf<Record>()) v->push_back(c.declaration);
    return v;
  }();
  return *out;
}

template <typename Record>
std::vector<RecordRow> ShownRecords(const std::vector<Record>& records) {
  std::vector<RecordRow> rows;
  rows.reserve(records.size());
  for (const Record& r : records) {
    RecordRow row;
    for (const auto& c : RecordColumnsOf<Record>()) row.push_back(c.show(r));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

const char* Session::RecordTableName(RecordTable table) {
  switch (table) {
    case RecordTable::kRuns:
      return "agent_runs";
    case RecordTable::kAttempts:
      return "agent_attempts";
    case RecordTable::kMetrics:
      return "agent_metrics";
    case RecordTable::kPrompts:
      return "agent_prompts";
    case RecordTable::kDescriptions:
      return "agent_descriptions";
  }
  return "?";
}

const std::vector<std::string>& Session::RecordColumns(RecordTable table) {
  switch (table) {
    case RecordTable::kRuns:
      return RecordDeclarations<RunRecord>();
    case RecordTable::kAttempts:
      return RecordDeclarations<AttemptRecord>();
    case RecordTable::kMetrics:
      return RecordDeclarations<MetricRecord>();
    case RecordTable::kPrompts:
      return RecordDeclarations<PromptRecord>();
    case RecordTable::kDescriptions:
      return RecordDeclarations<Description>();
  }
  return RecordDeclarations<RunRecord>();
}

std::vector<RecordRow> Session::RecordRows(RecordTable table) const {
  switch (table) {
    case RecordTable::kRuns:
      return ShownRecords(Runs());
    case RecordTable::kAttempts:
      return ShownRecords(Attempts());
    case RecordTable::kMetrics:
      return ShownRecords(Metrics());
    case RecordTable::kPrompts:
      return ShownRecords(Prompts());
    case RecordTable::kDescriptions:
      return ShownRecords(Descriptions());
  }
  return {};
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

AnswerStream::AnswerStream(std::unique_ptr<LiveQuery> live, StatementAnswers* owner,
                           History* history, int64_t record_run, RowsRecord record,
                           std::shared_ptr<AsyncRun> async_run)
    : live_(std::move(live)),
      owner_(owner),
      history_(history),
      record_run_(record == RowsRecord::kNothing ? 0 : record_run),
      record_(record),
      async_run_(std::move(async_run)) {
  owner_->RegisterOwn(live_->statement());
}

AnswerStream::~AnswerStream() {
  owner_->UnregisterOwn(live_->statement());
}

Result<bool> AnswerStream::Next(Row* row) {
  Result<bool> got = live_->Next(row);
  Ended(got.ok() ? Status::Ok() : got.status(), got.ok() && got.value(), live_->rows_returned());
  return got;
}

Result<size_t> AnswerStream::ReadAhead(const std::function<size_t(sqlite3_stmt*)>& visit) {
  Result<size_t> got = live_->ReadAhead(visit);
  Ended(got.ok() ? Status::Ok() : got.status(), got.ok() && got.value() > 0,
        live_->rows_returned());
  return got;
}

void AnswerStream::Close(int64_t returned) {
  if (record_run_ <= 0) return;
  // SQLite checks the interrupt before it calls back for the next row, and
  // the flag stays set until every statement of the connection has ended:
  // the statement closing this cursor now is one.
  if (!ConnectionInterrupted(sqlite3_db_handle(live_->statement()))) return;
  Ended(Status(ErrorKind::kInterrupted, "interrupted"), false, returned);
}

void AnswerStream::Ended(const Status& error, bool more, int64_t returned) {
  if (record_run_ <= 0 || (error.ok() && more)) return;
  // An answer table's scan read to its end changes nothing of its run.
  if (error.ok() && record_ == RowsRecord::kStops) return;
  const int64_t run_id = std::exchange(record_run_, 0);
  auto record = [&](History& history) {
    if (error.ok()) {
      history.SetRows(run_id, returned, live_->truncated());
    } else {
      history.SetStopped(run_id, returned, error);
    }
  };
  if (!async_run_) {
    record(*history_);
    return;
  }
  // Its history lives while the run names it: the connection that started
  // it forgets it under this lock before it closes.
  AsyncRun& r = *async_run_;
  MutexLock lock(&r.mu);
  if (r.history) record(*r.history);
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

namespace {

using AsyncClock = std::chrono::steady_clock;

// The record agent_runs shows of a run waiting on its model.
RunRecord WaitingRecord(const AsyncRun& run) REQUIRES(run.mu) {
  RunRecord rec = Agent::PendingRecord(*run.run, RunStatus::kPending);
  rec.provider = run.provider_name;
  rec.model = run.model;
  return rec;
}

// Marks a run that ended (its result `out`) done or failed.
void Ended(AsyncRun& run, const RunResult& out) REQUIRES(run.mu) {
  // No rows, and QueryPilot doubts them: failed, with the error ask() gives.
  const bool doubted = !out.doubt.empty() && run.config.DoubtfulEmptyIsError();
  if (out.status == RunStatus::kOk && out.query && !doubted) {
    run.answer = AnswerOf(out);
    run.state = AsyncState::kDone;
  } else if (doubted) {
    run.error = Status(ErrorKind::kExecutionError, out.DoubtMessage());
    run.state = AsyncState::kFailed;
  } else {
    run.error = Status(out.error.kind(), out.UserMessage());
    run.state = AsyncState::kFailed;
  }
}

}  // namespace

Result<int64_t> Session::AskStart(std::string_view question) {
  SettleQueryOnly(db_, &state_->check->query_only_debt());
  if (Status st = ValidateQuestion(question); !st.ok()) return st;
  if (Status st = CheckAskable(); !st.ok()) return st;
  const Config cfg = config();
  // A model that cannot be asked is said now, as ask() says it.
  Result<ResolvedProvider> provider = Resolved(cfg, state_->history);
  if (!provider.ok()) return Shown(state_->history, provider.status());
  const AskDepthGuard guard(state_->ask_depth);
  auto run = std::make_shared<AsyncRun>();
  run->id = AsyncRuns::Process().NewId(state_->history);
  run->question = std::string(question);
  run->databases = DatabasesKey(db_);
  run->config = cfg;
  run->provider_name = std::string(ProviderName(provider->kind));
  run->model = provider->model;
  {
    MutexLock lock(&run->mu);
    run->owner = state_.get();
    run->history = &state_->history;
    run->answer_cache = &state_->answer_cache;
  }
  // The call, made on a worker thread with a transport of its own; it reads
  // nothing of this connection.
  run->call = [resolved = provider.value(), options = ProviderOptionsFrom(cfg)](
                  const ChatRequest& request, const std::function<bool()>& cancelled) {
    CurlTransport transport;
    ProviderClient client(resolved, options, &transport, cancelled);
    return client.Complete(request);
  };
  Agent::RunStatePtr state = Agent::Begin(run->id, question);
  std::optional<RunResult> out = WithAgent(
      [&](const AgentContext& ctx) {
        AgentContext c = ctx;
        c.config = &run->config;
        return Agent(c).Advance(*state);
      },
      true);
  {
    AsyncRun& r = *run;
    MutexLock lock(&r.mu);
    if (out) {  // ended before any model call: the answer cache, or an error
      Ended(r, *out);
    } else {
      r.run = std::move(state);
      r.request = Agent::AwaitedCall(*r.run);
      r.waiting_since = AsyncClock::now();
      state_->history.Add(WaitingRecord(r), Agent::AttemptsSoFar(*r.run));
    }
  }
  // A cached answer's statement closes here: ask_result runs its SQL again.
  out.reset();
  AsyncRuns::Process().Add(run, cfg.async_threads);
  return run->id;
}

Result<std::shared_ptr<AsyncRun>> Session::FindAsyncRun(int64_t run_id) const {
  // A run of this process is the one meant: a record this connection read
  // from the history file may show it lost only because another connection
  // wrote it there as it started, before the process listed it
  // (ShowLostRuns).
  std::shared_ptr<AsyncRun> run = AsyncRuns::Process().Find(run_id);
  if (run && run->databases == DatabasesKey(db_)) return run;
  // A run lost by an earlier process, read back from history_file: the
  // process numbers its runs after those the file held (SkipPast), so that
  // record is the one meant.
  for (const RunRecord& r : state_->history.Runs()) {
    if (r.id == run_id && r.status == RunStatus::kLost) {
      return Status(ErrorKind::kInterrupted, fmt::format("run {} is lost: {}", run_id, r.error));
    }
  }
  if (run) {
    return Status::InvalidArgument(
        fmt::format("run {} was started on a connection to other databases; ask for it on a "
                    "connection to the same database files",
                    run_id));
  }
  return Status::InvalidArgument(fmt::format(
      "no run {} was started by ask_start in this process (ids come from ask_start; a run is "
      "known to the process that started it)",
      run_id));
}

Result<std::string> Session::AskState(int64_t run_id) {
  Result<std::shared_ptr<AsyncRun>> run = FindAsyncRun(run_id);
  if (!run.ok()) {
    if (run.status().kind() == ErrorKind::kInterrupted) return std::string("lost");
    return run.status();
  }
  AsyncRun& r = **run;
  MutexLock lock(&r.mu);
  return std::string(AsyncStateName(r.state));
}

Result<AskedRows> Session::AskResult(int64_t run_id, int64_t wait_ms) {
  SettleQueryOnly(db_, &state_->check->query_only_debt());
  if (wait_ms < 0 || wait_ms > kMaxResultWaitMs) {
    return Status::InvalidArgument(
        fmt::format("wait_ms is from 0 (do not wait) to {}, not {}", kMaxResultWaitMs, wait_ms));
  }
  Result<std::shared_ptr<AsyncRun>> found = FindAsyncRun(run_id);
  if (!found.ok()) return found.status();
  if (Status st = CheckAskable(); !st.ok()) return st;
  std::shared_ptr<AsyncRun> run = std::move(found).value();
  AsyncRun& r = *run;
  // The run's settings may be another connection's: what they hold is taken
  // out of what this one shows too.
  (void)Resolved(r.config, state_->history);
  AskedRows rows;
  rows.question = r.question;
  InterruptProbe probe(db_);
  Result<ClaimedRun> claimed =
      r.Claim(std::chrono::milliseconds(wait_ms), [&probe] { return probe.Interrupted(); });
  if (!claimed.ok()) return claimed.status();
  if (claimed->answer) {  // done: its SQL is checked and run again
    rows.answer = claimed->answer;
    auto live =
        RunAgain(rows.answer->sql, 1,
                 "could not re-run the answer's SQL: ", "the answer's SQL failed when re-run: ");
    if (!live.ok()) return live.status();
    rows.stream = Stream(std::move(live).value(), 0, RowsRecord::kNothing);
    return rows;
  }
  // Ready: the reply is checked and run here, on this connection, recorded
  // where the run started, as ask() there would record it.
  Agent::RunStatePtr state = std::move(claimed->paused);
  History* history = claimed->history;
  std::optional<RunResult> out;
  {
    const AskDepthGuard guard(state_->ask_depth);
    out = WithAgent(
        [&](const AgentContext& ctx) {
          AgentContext c = ctx;
          c.config = &r.config;
          c.history = history;
          c.provider_name = r.provider_name;
          c.model = r.model;
          c.answer_cache = claimed->answer_cache;
          return Agent(c).Advance(*state);
        },
        true);
  }
  Status error;  // ok: `rows` is the answer
  bool again = false;
  {
    MutexLock lock(&r.mu);
    r.busy = false;
    if (!out) {  // a correction: back to the model
      r.run = std::move(state);
      r.request = Agent::AwaitedCall(*r.run);
      r.waiting_since = AsyncClock::now();
      r.state = AsyncState::kPending;
      history->Add(WaitingRecord(r), Agent::AttemptsSoFar(*r.run));
      error = r.PendingError();
      again = true;
    } else {
      Ended(r, *out);
      if (r.state == AsyncState::kFailed) {
        error = r.error;
      } else {
        rows.answer = r.answer;
        // The rows' count is recorded where the run is, whichever
        // connection reads them.
        rows.stream = Stream(std::move(out->query), run_id, RowsRecord::kAll, run);
      }
    }
  }
  r.changed.SignalAll();
  if (again) AsyncRuns::Process().Submit(run, run->config.async_threads);
  if (!error.ok()) return Shown(state_->history, error);
  return rows;
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
    const char* role = m.role == ChatRole::kSystem ? "system"
                       : m.role == ChatRole::kUser ? "user"
                                                   : "assistant";
    // Each text scrubbed before it is JSON: a secret is found as written.
    j.push_back({{"role", role}, {"content", state_->history.Scrub(m.content)}});
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
