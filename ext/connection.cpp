#include "ext/connection.h"

#include <algorithm>
#include <cstdlib>
#include <climits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/sql/critic.h"
#include "agent/explain.h"
#include "agent/memory/history_file.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/own_file.h"
#include "agent/prompts.h"
#include "agent/providers/provider.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"

namespace querypilot::ext {
namespace {

const char* Getenv(const char* name) { return std::getenv(name); }

// What the host's SQLite gives, and the guarantees that follow from it:
// agent_config('host'), and "host" in agent_config().
nlohmann::ordered_json HostJson(const Config& config) {
  const HostSqlite h = Host();
  nlohmann::ordered_json j;
  j["sqlite_version"] = sqlite3_libversion();
  j["progress_handler"] = h.progress_handler;
  j["authorizer"] = h.authorizer;
  j["column_metadata"] = h.column_metadata;
  j["time_budget"] =
      config.progress_handler && h.progress_handler
          ? "QueryPilot's progress handler while its SQL runs: a query past sql_timeout_ms is sent "
            "back for a faster one; the connection's own progress handler is cleared by an ask"
          : "sqlite3_interrupt from a watchdog thread: a query past sql_timeout_ms ends the "
            "statement that asked; the connection's own progress handler is left in place";
  if (!h.authorizer) j["generated_sql"] = NoAuthorizerMessage();
  return j;
}

constexpr const char* kNoProgressCallbacks =
    "progress_handler cannot be 1 here: this SQLite was built without progress callbacks "
    "(SQLITE_OMIT_PROGRESS_CALLBACK), so a query past sql_timeout_ms is stopped with "
    "sqlite3_interrupt, which ends the statement that asked";

// Answers kept per connection at most (each is one statement's worth).
constexpr size_t kMaxKeptAnswers = 16;

}  // namespace

Connection::Connection(sqlite3* db)
    : db_(db), config_(Config::FromEnvironment(Getenv, nullptr)) {}

Config Connection::config() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  return config_;
}

Status Connection::SetConfig(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(config_mu_);
  if (key == "history_file") return AttachHistoryFile(value);
  if (key == "host" || key == "value_index") {
    return Status::InvalidArgument(key == "host" ? "host is read-only: what this connection's SQLite provides"
                                                 : "value_index is read-only: how far the value index has read");
  }
  if (key == "value_index_file" && !value.empty()) {
    if (Status st = CheckValueIndexFile(value); !st.ok()) return st;
  }
  Config changed = config_;
  if (Status st = changed.Set(key, value); !st.ok()) return st;
  if (changed.progress_handler && !Host().progress_handler) {
    return Status::InvalidArgument(kNoProgressCallbacks);
  }
  config_ = std::move(changed);
  return Status::Ok();
}

Status Connection::CheckValueIndexFile(const std::string& path) const {
  // Never one of the connection's own files, by identity (agent/sql/own_file.h):
  // the index is written to.
  Result<std::shared_ptr<ValueStore>> store = ValueStore::Open(path, db_);
  return store.ok() ? Status::Ok() : store.status();
}

Status Connection::CheckOwnFiles() const {
  // A file attached (or linked) since it was set is refused now: QueryPilot
  // writes its own files, and never a database of the connection.
  Config cfg;
  bool has_history_file = false;
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    cfg = config_;
    has_history_file = history_file_ != nullptr;
  }
  if (has_history_file) {
    if (Status st = CheckOwnFile(db_, cfg.history_file, "history_file"); !st.ok()) return st;
  }
  if (!cfg.value_index_file.empty()) {
    if (Status st = CheckOwnFile(db_, cfg.value_index_file, "value_index_file"); !st.ok()) return st;
  }
  return Status::Ok();
}

Status Connection::AttachHistoryFile(const std::string& path) {
  if (path == config_.history_file) return Status::Ok();
  if (history_file_) {
    return Status::InvalidArgument("history_file is already " + config_.history_file +
                                   "; open a new connection for another");
  }
  if (path.empty()) return Status::Ok();
  if (!history_.empty()) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  if (Status st = config_.Set("history_file", path); !st.ok()) return st;
  std::vector<RunRecord> runs;
  std::vector<AttemptRecord> attempts;
  Result<std::shared_ptr<HistoryFile>> file = HistoryFile::Open(db_, path, &runs, &attempts);
  if (!file.ok() || !history_.Attach(file.value(), std::move(runs), std::move(attempts))) {
    config_.history_file.clear();
    return file.ok() ? Status::InvalidArgument("set history_file before the first ask on this connection")
                     : file.status();
  }
  history_file_ = std::move(file).value();
  // Descriptions kept in the file come back; those given before it was set
  // go into it.
  for (const Description& d : descriptions_) history_file_->SaveDescription(d);
  for (Description& d : history_file_->LoadDescriptions()) {
    auto same = [&d](const Description& e) { return text::EqualsIgnoreCase(e.Target(), d.Target()); };
    if (std::none_of(descriptions_.begin(), descriptions_.end(), same)) descriptions_.push_back(std::move(d));
  }
  return Status::Ok();
}

Result<std::string> Connection::GetConfig(const std::string& key) const {
  std::lock_guard<std::mutex> lock(config_mu_);
  if (key == "host") return HostJson(config_).dump();
  if (key == "value_index") return value_index_.Progress().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return config_.Get(key, Getenv);
}

std::string Connection::ConfigJson() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(config_.ToJson(Getenv));
  j["host"] = HostJson(config_);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::string> Connection::SetPrompt(const std::string& name,
                                          const std::optional<std::string>& text) {
  std::lock_guard<std::mutex> lock(config_mu_);
  if (Status st = ValidatePromptText(name, text ? *text : std::string("x")); !st.ok()) return st;
  if (text) {
    config_.prompts[name] = *text;
  } else {
    config_.prompts.erase(name);
  }
  return std::string(PromptTextFor(config_.prompts, name));
}

Status Connection::ValidateQuestion(std::string_view question) const {
  if (text::Trim(question).empty()) {
    return Status::InvalidArgument("the question is empty: SELECT * FROM ask('Which ...?')");
  }
  int limit = config().max_question_bytes;
  if (question.size() > static_cast<size_t>(limit)) {
    return Status::InvalidArgument(fmt::format(
        "the question is {} bytes long; the limit is {} (agent_config('max_question_bytes'))",
        question.size(), limit));
  }
  if (!text::IsValidUtf8(question)) return Status::InvalidArgument("the question is not valid UTF-8");
  if (question.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("the question contains a NUL character");
  }
  return Status::Ok();
}

Result<std::optional<std::string>> Connection::Describe(const std::string& target,
                                                        const std::optional<std::string>& text, bool read) {
  auto schema = schema_cache_.Get(db_, config().sample_rows);
  if (!schema.ok()) return schema.status();
  Result<Description> d = ResolveTarget(**schema, target);
  if (!d.ok()) return d.status();
  std::lock_guard<std::mutex> lock(config_mu_);
  auto it = std::find_if(descriptions_.begin(), descriptions_.end(), [&](const Description& e) {
    return text::EqualsIgnoreCase(e.Target(), d->Target());
  });
  if (read) {
    if (it == descriptions_.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->text);
  }
  if (history_file_) {
    // It is written below: never once it is a database of the connection.
    Config cfg = config_;
    if (Status st = CheckOwnFile(db_, cfg.history_file, "history_file"); !st.ok()) return st;
  }
  if (!text) {
    if (it != descriptions_.end()) descriptions_.erase(it);
    if (history_file_) history_file_->ForgetDescription(d->Target());
    return std::optional<std::string>();
  }
  std::string clean = text::Trim(*text);
  if (clean.empty()) return Status::InvalidArgument("the description is empty; NULL removes one");
  if (clean.size() > 2000) {
    return Status::InvalidArgument(fmt::format(
        "the description is {} bytes long; at most 2000 (it goes into every prompt that shows {})", clean.size(),
        d->Target()));
  }
  if (!text::IsValidUtf8(clean)) return Status::InvalidArgument("the description is not valid UTF-8");
  d->text = clean;
  if (it != descriptions_.end()) {
    *it = d.value();
  } else {
    descriptions_.push_back(d.value());
  }
  if (history_file_) history_file_->SaveDescription(d.value());
  return std::optional<std::string>(clean);
}

std::vector<Description> Connection::Descriptions() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  return descriptions_;
}

template <typename F>
auto Connection::WithAgent(F&& f) {
  const Config cfg = config();
  AgentContext ctx;
  ctx.db = db_;
  // Held for the run: reads before a model call leave the host's files
  // unlocked (agent/sql/read_connection.h).
  const std::shared_ptr<sqlite3> reader = reader_.For(db_);
  if (reader.get() != db_) ctx.read_db = reader.get();
  ctx.config = &cfg;
  ctx.schema_cache = &schema_cache_;
  ctx.value_index = &value_index_;
  ctx.descriptions = Descriptions();
  ctx.answer_cache = &answer_cache_;
  ctx.history = &history_;
  Result<ResolvedProvider> provider = ResolveProvider(cfg, Getenv);
  InterruptProbe probe(db_);
  std::unique_ptr<ProviderClient> client;
  if (provider.ok()) {
    ctx.provider_name = std::string(ProviderName(provider->kind));
    ctx.model = provider->model;
    // Ctrl-C in the shell (sqlite3_interrupt) stops a model call within
    // about 50 ms, on every SQLite version (agent/sql/interrupt.h).
    client = std::make_unique<ProviderClient>(provider.value(), ProviderOptionsFrom(cfg), &transport_,
                                              [&probe] { return probe.Interrupted(); });
    ctx.llm = client.get();
  } else {
    ctx.llm_status = provider.status();
    ctx.provider_name = cfg.provider;
    ctx.model = cfg.model;
  }
  return f(static_cast<const AgentContext&>(ctx));
}

Result<RunResult> Connection::Ask(std::string_view question) {
  if (ask_depth_.load() > 0) {
    return Status(ErrorKind::kRefused, "ask() cannot be called from inside another ask()");
  }
  // Checked before the model is asked: nothing it wrote could run.
  if (!Host().authorizer) return Status(ErrorKind::kRefused, NoAuthorizerMessage());
  if (Status st = CheckOwnFiles(); !st.ok()) return st;
  ask_depth_.fetch_add(1);
  struct DepthGuard {
    std::atomic<int>& d;
    ~DepthGuard() { d.fetch_sub(1); }
  } guard{ask_depth_};

  return WithAgent([&](const AgentContext& ctx) { return Agent(ctx).Run(question); });
}

Result<std::string> Connection::BuildValueIndex(const std::string& database) {
  if (Status st = CheckOwnFiles(); !st.ok()) return st;  // the index file is written
  Result<nlohmann::json> built = value_index_.Build(db_, IndexOptions(config()), database);
  if (!built.ok()) return built.status();
  return built->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::string> Connection::Explain(int64_t run_id) {
  if (Status st = CheckOwnFiles(); !st.ok()) return st;
  return WithAgent([&](const AgentContext& ctx) { return ExplainRun(ctx, run_id); });
}



StatementContext Connection::CurrentStatementContext() {
  StatementContext context;
  std::lock_guard<std::mutex> lock(answers_mu_);
  for (sqlite3_stmt* p = sqlite3_next_stmt(db_, nullptr); p; p = sqlite3_next_stmt(db_, p)) {
    if (!sqlite3_stmt_busy(p) || own_statements_.count(p)) continue;
    context.push_back({p, sqlite3_stmt_status(p, SQLITE_STMTSTATUS_RUN, 0),
                       sqlite3_stmt_status(p, SQLITE_STMTSTATUS_VM_STEP, 0)});
  }
  std::sort(context.begin(), context.end(),
            [](const StatementMark& a, const StatementMark& b) { return a.stmt < b.stmt; });
  return context;
}

namespace {

// `now` holds the same run of `then`'s statement, not a successor at its address.
bool SameRun(const StatementMark& then, const StatementMark& now) {
  return then.stmt == now.stmt && then.runs == now.runs && now.vm_steps >= then.vm_steps;
}

// Every statement of `kept` still runs, the same run, in `now`.
bool StillRunning(const StatementContext& kept, const StatementContext& now) {
  return std::all_of(kept.begin(), kept.end(), [&](const StatementMark& k) {
    return std::any_of(now.begin(), now.end(), [&](const StatementMark& n) { return SameRun(k, n); });
  });
}

}  // namespace

std::shared_ptr<StatementAnswer> Connection::FindAnswer(const std::string& question,
                                                        const StatementContext& context) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  // Forget answers whose statement has finished. A statement closes its ask()
  // cursors when it halts, is reset or is finalized, so an answer no cursor
  // holds any more belongs to a finished statement. An answer whose
  // statements are not all still running, the same runs, is finished too.
  answers_.erase(std::remove_if(answers_.begin(), answers_.end(),
                                [&](const KeptAnswer& k) {
                                  return k.answer.use_count() == 1 || !StillRunning(k.context, context);
                                }),
                 answers_.end());
  // Each kept context is now part of `context`; the same size means the same
  // statements: this statement asked the question before.
  for (const auto& k : answers_) {
    if (k.question == question && k.context.size() == context.size()) return k.answer;
  }
  return nullptr;
}

void Connection::KeepAnswer(const std::string& question, StatementContext context,
                            std::shared_ptr<StatementAnswer> answer) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  if (answers_.size() >= kMaxKeptAnswers) answers_.erase(answers_.begin());
  answers_.push_back({question, std::move(context), std::move(answer)});
}

void Connection::RegisterOwnStatement(sqlite3_stmt* stmt) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  own_statements_.insert(stmt);
}

void Connection::UnregisterOwnStatement(sqlite3_stmt* stmt) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  own_statements_.erase(stmt);
}

std::shared_ptr<const AnswerTableSpec> Connection::FindAnswerTable(const std::string& schema,
                                                                   const std::string& name) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  auto it = answer_tables_.find({text::Lower(schema), text::Lower(name)});
  return it == answer_tables_.end() ? nullptr : it->second;
}

void Connection::KeepAnswerTable(const std::string& schema, const std::string& name,
                                 std::shared_ptr<const AnswerTableSpec> spec) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  answer_tables_[{text::Lower(schema), text::Lower(name)}] = std::move(spec);
}

void Connection::ForgetAnswerTable(const std::string& schema, const std::string& name) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  answer_tables_.erase({text::Lower(schema), text::Lower(name)});
}

}  // namespace querypilot::ext
