#include "agent/config.h"

#include "agent/base/text.h"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace querypilot {
namespace {

using Getenv = std::function<const char*(const char*)>;

std::string Env(const Getenv& getenv, const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

struct IntSetting {
  const char* key;
  int Config::*field;
  int min;
  int max;
};

// Every integer setting, with its allowed range.
constexpr IntSetting kIntSettings[] = {
    {"max_attempts", &Config::max_attempts, 1, 10},
    {"connect_timeout_ms", &Config::connect_timeout_ms, 100, 600000},
    {"request_timeout_ms", &Config::request_timeout_ms, 100, 3600000},
    {"http_retries", &Config::http_retries, 0, 10},
    {"retry_base_ms", &Config::retry_base_ms, 0, 60000},
    {"retry_max_wait_ms", &Config::retry_max_wait_ms, 0, 600000},
    {"sql_timeout_ms", &Config::sql_timeout_ms, 10, 3600000},
    {"max_rows", &Config::max_rows, 0, 1000000000},
    {"sample_rows", &Config::sample_rows, 0, 20},
    {"max_tokens", &Config::max_tokens, 16, 200000},
    {"max_question_bytes", &Config::max_question_bytes, 16, 1048576},
    {"value_hints", &Config::value_hints, 0, 1},
    {"value_index_background", &Config::value_index_background, 0, 1},
    {"value_index_wait_ms", &Config::value_index_wait_ms, 0, 60000},
    {"value_index_ask_ms", &Config::value_index_ask_ms, 0, 3600000},
    {"answer_cache", &Config::answer_cache, 0, 1},
    {"clarify", &Config::clarify, 0, 1},
    {"examples", &Config::examples, 0, 10},
    {"learn_from_success", &Config::learn_from_success, 0, 1},
    {"schema_budget_tokens", &Config::schema_budget_tokens, 0, 10000000},
    {"progress_handler", &Config::progress_handler, 0, 1},
};

struct StringSetting {
  const char* key;
  std::string Config::*field;
};
constexpr StringSetting kStringSettings[] = {
    {"provider", &Config::provider},
    {"base_url", &Config::base_url},
    {"model", &Config::model},
    {"correction_model", &Config::correction_model},
    {"explain_model", &Config::explain_model},
    {"session", &Config::session},
    {"history_file", &Config::history_file},
    {"value_index_file", &Config::value_index_file},
};

std::optional<long long> ParseInt(const std::string& s) {
  long long v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  while (b < e && *b == ' ') ++b;
  while (e > b && e[-1] == ' ') --e;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

Status ValidateProvider(const std::string& v) {
  if (v.empty() || v == "openai" || v == "anthropic") return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("provider must be 'openai' or 'anthropic', not '{}'", v));
}

Status ValidateBaseUrl(const std::string& v) {
  if (v.empty() || v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("base_url must start with http:// or https://, not '{}'", v));
}

std::string ApiKeySource(const Config& c, const Getenv& getenv) {
  if (c.api_key && !c.api_key->empty()) return "set (agent_config)";
  for (const char* name : {"QUERYPILOT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}) {
    if (!Env(getenv, name).empty()) return fmt::format("set (environment: {})", name);
  }
  return "unset";
}

}  // namespace

ProviderOptions ProviderOptionsFrom(const Config& config) {
  ProviderOptions o;
  o.connect_timeout_ms = config.connect_timeout_ms;
  o.request_timeout_ms = config.request_timeout_ms;
  o.retry = RetryPolicy{config.http_retries, config.retry_base_ms, config.retry_max_wait_ms};
  return o;
}

std::vector<std::string> Config::Keys() {
  std::vector<std::string> keys;
  for (const auto& s : kStringSettings) keys.emplace_back(s.key);
  keys.emplace_back("api_key");
  for (const auto& s : kIntSettings) keys.emplace_back(s.key);
  keys.emplace_back("temperature");
  return keys;
}

Status Config::Set(const std::string& key, const std::string& value) {
  if (!text::IsValidUtf8(key) || !text::IsValidUtf8(value)) {
    return Status::InvalidArgument("a setting's name and value must be valid UTF-8 text");
  }
  for (const auto& s : kStringSettings) {
    if (key != s.key) continue;
    Status st = key == "provider" ? ValidateProvider(value)
                : key == "base_url" ? ValidateBaseUrl(value)
                                    : Status::Ok();
    if (!st.ok()) return st;
    this->*s.field = value;
    return Status::Ok();
  }
  if (key == "api_key") {
    if (value.empty()) {
      api_key.reset();
    } else {
      api_key = value;
    }
    return Status::Ok();
  }
  for (const auto& s : kIntSettings) {
    if (key != s.key) continue;
    auto v = ParseInt(value);
    if (!v || *v < s.min || *v > s.max) {
      return Status::InvalidArgument(fmt::format("{} must be a whole number from {} to {}, not '{}'",
                                                 s.key, s.min, s.max, text::Truncate(value, 80)));
    }
    this->*s.field = static_cast<int>(*v);
    return Status::Ok();
  }
  if (key == "temperature") {
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !(v >= 0.0 && v <= 2.0)) {
      return Status::InvalidArgument(
          fmt::format("temperature must be a number from 0 to 2, not '{}'", value));
    }
    temperature = v;
    return Status::Ok();
  }
  return Status::InvalidArgument(
      fmt::format("unknown setting '{}'; the settings are: {}", key, fmt::join(Keys(), ", ")));
}

Result<std::string> Config::Get(const std::string& key, const Getenv& getenv) const {
  for (const auto& s : kStringSettings) {
    if (key == s.key) return this->*s.field;
  }
  if (key == "api_key") return ApiKeySource(*this, getenv);
  for (const auto& s : kIntSettings) {
    if (key == s.key) return std::to_string(this->*s.field);
  }
  if (key == "temperature") return fmt::format("{}", temperature);
  return Status::InvalidArgument(
      fmt::format("unknown setting '{}'; the settings are: {}", key, fmt::join(Keys(), ", ")));
}

Config::ValueType Config::TypeOf(const std::string& key) {
  if (key == "temperature") return ValueType::kReal;
  for (const auto& s : kIntSettings) {
    if (key == s.key) return ValueType::kInteger;
  }
  return ValueType::kText;
}

std::string Config::ToJson(const Getenv& getenv) const {
  nlohmann::ordered_json j;
  for (const auto& s : kStringSettings) j[s.key] = this->*s.field;
  j["api_key"] = ApiKeySource(*this, getenv);
  for (const auto& s : kIntSettings) j[s.key] = this->*s.field;
  j["temperature"] = temperature;
  // Values are UTF-8 (Set checks), but a value read from the environment may
  // not be: never throw over it.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Config Config::FromEnvironment(const Getenv& getenv, std::vector<std::string>* warnings) {
  Config c;
  struct EnvSetting {
    const char* var;
    const char* key;
  };
  constexpr EnvSetting kVars[] = {
      {"QUERYPILOT_PROVIDER", "provider"},
      {"QUERYPILOT_BASE_URL", "base_url"},
      {"QUERYPILOT_MODEL", "model"},
      {"QUERYPILOT_MAX_ATTEMPTS", "max_attempts"},
      {"QUERYPILOT_REQUEST_TIMEOUT_MS", "request_timeout_ms"},
      {"QUERYPILOT_SQL_TIMEOUT_MS", "sql_timeout_ms"},
      {"QUERYPILOT_MAX_ROWS", "max_rows"},
      {"QUERYPILOT_ANSWER_CACHE", "answer_cache"},
      {"QUERYPILOT_CORRECTION_MODEL", "correction_model"},
      {"QUERYPILOT_EXPLAIN_MODEL", "explain_model"},
      {"QUERYPILOT_CLARIFY", "clarify"},
  };
  for (const auto& e : kVars) {
    std::string v = Env(getenv, e.var);
    if (v.empty()) continue;
    Status st = c.Set(e.key, v);
    if (!st.ok() && warnings) warnings->push_back(fmt::format("{}: {}", e.var, st.message()));
  }
  return c;
}

Result<ResolvedProvider> ResolveProvider(const Config& config, const Getenv& getenv) {
  ResolvedProvider r;
  // Which wire format.
  std::string provider = config.provider;
  if (provider.empty()) {
    bool has_openai = !Env(getenv, "OPENAI_API_KEY").empty() ||
                      !Env(getenv, "OPENAI_BASE_URL").empty();
    bool has_anthropic = !Env(getenv, "ANTHROPIC_API_KEY").empty() ||
                         !Env(getenv, "ANTHROPIC_BASE_URL").empty();
    provider = (has_anthropic && !has_openai) ? "anthropic" : "openai";
  }
  r.kind = provider == "anthropic" ? ProviderKind::kAnthropic : ProviderKind::kOpenAI;
  const bool anthropic = r.kind == ProviderKind::kAnthropic;

  // The key: agent_config, QUERYPILOT_API_KEY, then the ecosystem's name.
  if (config.api_key && !config.api_key->empty()) {
    r.api_key = *config.api_key;
  } else if (!Env(getenv, "QUERYPILOT_API_KEY").empty()) {
    r.api_key = Env(getenv, "QUERYPILOT_API_KEY");
  } else {
    r.api_key = Env(getenv, anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  }

  // The base URL: agent_config (which starts from QUERYPILOT_BASE_URL), then
  // the ecosystem's name, then the public endpoint when a key says it is wanted.
  std::string base = config.base_url;
  if (base.empty()) base = Env(getenv, anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL");
  if (base.empty() && !r.api_key.empty()) {
    base = anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
    r.is_default_cloud_endpoint = true;
  }
  if (base.empty()) {
    return Status::NotConfigured(
        "no model endpoint is configured. Either set a cloud key "
        "(export OPENAI_API_KEY=... or ANTHROPIC_API_KEY=...), or point QueryPilot at a local "
        "OpenAI-compatible server: export QUERYPILOT_BASE_URL=http://127.0.0.1:11434/v1 (Ollama) "
        "or http://127.0.0.1:8080/v1 (llama.cpp), plus QUERYPILOT_MODEL=<model name>; in SQL: "
        "SELECT agent_config('base_url', 'http://127.0.0.1:11434/v1')");
  }
  if (Status st = ValidateBaseUrl(base); !st.ok()) return st;
  while (!base.empty() && base.back() == '/') base.pop_back();
  r.endpoint = anthropic ? base + "/v1/messages" : base + "/chat/completions";

  r.model = config.model;
  if (r.model.empty()) r.model = Env(getenv, "QUERYPILOT_MODEL");
  if (r.model.empty()) {
    return Status::NotConfigured(
        "no model name is configured: export QUERYPILOT_MODEL=<name> or "
        "SELECT agent_config('model', '<name>')");
  }
  return r;
}

}  // namespace querypilot
