// Session's settings (agent_config) and prompt texts (agent_prompt): the
// settings table (agent/config.h) for this connection, with the read-only
// keys it shows besides (ReadOnlySettings) and the checks a file setting
// makes against the connection.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/confidence.h"
#include "agent/base/sqlite.h"
#include "agent/config.h"
#include "agent/knowledge/value_index.h"
#include "agent/prompt/prompts.h"
#include "agent/providers/url.h"
#include "agent/quality/findings.h"
#include "agent/session/session.h"
#include "agent/session/state.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/critic.h"
#include "agent/sql/own_file.h"

namespace querypilot {
namespace {

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

// The value of the read-only setting `id` (ReadOnlySettings(), agent/config.h)
// on a connection with these settings and value index; `check` is what the
// next ask would use and stop at (Session::ConfigCheckJson).
nlohmann::ordered_json ReadOnlyJson(ReadOnlySetting id, const Config& config,
                                    const ValueIndexCache& value_index,
                                    const nlohmann::ordered_json& check) {
  switch (id) {
    case ReadOnlySetting::kHost:
      return HostJson(config);
    case ReadOnlySetting::kInUse:
      return check.at("in_use");
    case ReadOnlySetting::kProblems:
      return check.at("problems");
    case ReadOnlySetting::kValueIndex:
      return nlohmann::ordered_json::parse(
          value_index.Progress().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    case ReadOnlySetting::kFindings:
      return nlohmann::ordered_json::parse(FindingsJson());
    case ReadOnlySetting::kConfidence:
      return nlohmann::ordered_json::parse(ConfidenceJson());
  }
  return nullptr;
}

constexpr const char* kNoProgressCallbacks =
    "progress_handler cannot be 1 here: this SQLite was built without progress callbacks "
    "(SQLITE_OMIT_PROGRESS_CALLBACK), so a query past sql_timeout_ms is stopped with "
    "sqlite3_interrupt, which ends the statement that asked";

}  // namespace

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
  // A read-only key is refused by its row (Config::Set).
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

Result<Value> Session::Setting(const std::string& key) const {
  if (const ReadOnlySettingRow* r = FindReadOnlySetting(key)) {
    const nlohmann::ordered_json check = nlohmann::ordered_json::parse(ConfigCheckJson());
    return Value(ReadOnlyJson(r->id, config(), state_->value_index, check)
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  MutexLock lock(&state_->config_mu);
  if (key == "history_file") return Value(ShownHistoryFile());
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
  const nlohmann::ordered_json check = nlohmann::ordered_json::parse(ConfigCheckJson());
  const Config cfg = config();
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(cfg.ToJson(Getenv));
  for (const ReadOnlySettingRow& r : ReadOnlySettings()) {
    if (r.in_listing) j[r.key] = ReadOnlyJson(r.id, cfg, state_->value_index, check);
  }
  MutexLock lock(&state_->config_mu);
  j["history_file"] = ShownHistoryFile();
  return state_->history.Scrub(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
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

}  // namespace querypilot
