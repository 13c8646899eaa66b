#include "agent/config.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "agent/base/text.h"
#include "agent/providers/url.h"

namespace querypilot {
namespace {

using Getenv = std::function<const char*(const char*)>;

std::string Env(const Getenv& getenv, const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

// Whether a setting is also read, when the extension loads, from its
// variable: QUERYPILOT_ and its name in capitals (EnvironmentVariable()).
// value_index_file and progress_handler are checked against the connection
// as they are set, so they are set on it only; history_file is checked when
// the connection first uses its history, so its variable is read.
enum class FromEnvironment { kRead, kNotRead };
constexpr FromEnvironment kRead = FromEnvironment::kRead;
constexpr FromEnvironment kNotRead = FromEnvironment::kNotRead;

struct IntSetting {
  const char* key;
  int Config::*field;
  int min;
  int max;
  FromEnvironment environment;
};

// Every integer setting, with its allowed range.
constexpr IntSetting kIntSettings[] = {
    {"max_attempts", &Config::max_attempts, 1, 10, kRead},
    {"max_history_runs", &Config::max_history_runs, 1, 1000000, kRead},
    {"connect_timeout_ms", &Config::connect_timeout_ms, 100, 600000, kRead},
    {"request_timeout_ms", &Config::request_timeout_ms, 100, 3600000, kRead},
    {"http_retries", &Config::http_retries, 0, 10, kRead},
    {"retry_base_ms", &Config::retry_base_ms, 0, 60000, kRead},
    {"retry_max_wait_ms", &Config::retry_max_wait_ms, 0, 600000, kRead},
    {"sql_timeout_ms", &Config::sql_timeout_ms, 10, 3600000, kRead},
    {"max_rows", &Config::max_rows, 0, 1000000000, kRead},
    {"chart_max_rows", &Config::chart_max_rows, 1, 1000000, kRead},
    {"chart_model", &Config::chart_model, 0, 1, kRead},
    {"sample_rows", &Config::sample_rows, 0, 20, kRead},
    {"max_tokens", &Config::max_tokens, 16, 200000, kRead},
    {"max_question_bytes", &Config::max_question_bytes, 16, 1048576, kRead},
    {"value_hints", &Config::value_hints, 0, 1, kRead},
    {"value_index_background", &Config::value_index_background, 0, 1, kRead},
    {"value_index_wait_ms", &Config::value_index_wait_ms, 0, 60000, kRead},
    {"value_index_ask_ms", &Config::value_index_ask_ms, 0, 3600000, kRead},
    {"value_index_cache", &Config::value_index_cache, 0, 1, kRead},
    {"cache_max_mb", &Config::cache_max_mb, 0, 1048576, kRead},
    {"answer_cache", &Config::answer_cache, 0, 1, kRead},
    {"clarify", &Config::clarify, 0, 1, kRead},
    {"candidates", &Config::candidates, 1, 3, kRead},
    {"candidate_select", &Config::candidate_select, 0, 1, kRead},
    {"samples", &Config::samples, 1, 5, kRead},
    {"review", &Config::review, 0, 1, kRead},
    {"review_rows", &Config::review_rows, 0, 100, kRead},
    {"readings_wait_ms", &Config::readings_wait_ms, 10, 60000, kRead},
    {"examples", &Config::examples, 0, 10, kRead},
    {"learn_from_success", &Config::learn_from_success, 0, 1, kRead},
    {"schema_budget_tokens", &Config::schema_budget_tokens, 0, 10000000, kRead},
    {"progress_handler", &Config::progress_handler, 0, 1, kNotRead},
    {"async_threads", &Config::async_threads, 1, 64, kRead},
};

struct StringSetting {
  const char* key;
  std::string Config::*field;
  FromEnvironment environment;
};
constexpr StringSetting kStringSettings[] = {
    {"provider", &Config::provider, kRead},
    {"base_url", &Config::base_url, kRead},
    {"model", &Config::model, kRead},
    {"correction_model", &Config::correction_model, kRead},
    {"explain_model", &Config::explain_model, kRead},
    {"review_model", &Config::review_model, kRead},
    {"empty_doubtful", &Config::empty_doubtful, kRead},
    {"session", &Config::session, kRead},
    {"history_file", &Config::history_file, kRead},
    {"value_index_file", &Config::value_index_file, kNotRead},
    {"chart_scripts", &Config::chart_scripts, kRead},
    {"allow_functions", &Config::allow_functions, kRead},
};

constexpr ReadOnlySettingRow kReadOnlySettings[] = {
    {ReadOnlySetting::kHost, "host", "what this connection's SQLite provides", true},
    {ReadOnlySetting::kInUse, "in_use", "the provider, model and endpoint the next ask uses", true},
    {ReadOnlySetting::kProblems, "problems", "what the next ask would stop at before a model call",
     true},
    {ReadOnlySetting::kValueIndex, "value_index", "how far the value index has read", false},
    {ReadOnlySetting::kFindings, "findings", "what the result checks can find", false},
    {ReadOnlySetting::kConfidence, "confidence", "how an answer's confidence is weighed", false},
};

// The settings that are no row above: the key (QUERYPILOT_API_KEY is only
// checked at load; the key is read at request time and never copied into a
// Config) and the temperature. Both are read from their variables.
constexpr const char* kApiKey = "api_key";
constexpr const char* kTemperature = "temperature";

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

// Every provider's `part` as a message lists them: "a, b or c".
template <typename Part>
std::string EachProvider(Part part) {
  std::string out;
  const auto providers = Providers();
  for (size_t i = 0; i < providers.size(); ++i) {
    out += i == 0 ? "" : i + 1 == providers.size() ? " or " : ", ";
    out += part(providers[i]);
  }
  return out;
}

Status ValidateEmptyDoubtful(const std::string& v) {
  if (v == "error" || v == "rows") return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("empty_doubtful must be 'error' or 'rows', not '{}'", text::Truncate(v, 80)));
}

Status ValidateProvider(const std::string& v) {
  if (v.empty() || FindProvider(v)) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "provider must be {}, not '{}'",
      EachProvider([](const ProviderSpec& p) { return fmt::format("'{}'", p.name); }), v));
}

// A base URL that can be used as written: http or https, a host, no white
// space or control character. `name` is what the message calls it (the
// setting, or the variable it came from); the value is shown redacted.
Status ValidateBaseUrl(const std::string& v, std::string_view name = "base_url") {
  if (v.empty()) return Status::Ok();
  const UrlParts parts = SplitUrl(v);
  const std::string scheme = text::Lower(parts.scheme);
  const bool has_scheme = v.find("://") != std::string::npos;
  std::string problem;
  if (!has_scheme || (scheme != "http" && scheme != "https")) {
    problem = "must start with http:// or https://";
  } else if (parts.host.empty() || parts.host[0] == ':') {
    problem = "must name a host after the scheme";
  } else if (std::any_of(v.begin(), v.end(), [](char c) {
               return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
             })) {
    problem = "must not contain spaces or control characters";
  } else if (parts.at_after_authority) {
    // Where the userinfo ends cannot be told, so neither can what to hide.
    problem =
        "holds an '@' after the host's end: percent-encode a '/', '?', '#' or '@' in a user name "
        "or password (%2F, %3F, %23, %40), and an '@' elsewhere (%40)";
  } else if (v.find(kRedacted) != std::string::npos) {
    // agent_config() shows a base URL without its credentials; written
    // back, it would send the marker in their place.
    problem = fmt::format(
        "holds {} where a credential was, as agent_config() shows it: write the credential out, or "
        "leave it out",
        kRedacted);
  }
  if (problem.empty()) return Status::Ok();
  return Status::InvalidArgument(fmt::format("{} {} (as in http://127.0.0.1:11434/v1), not '{}'",
                                             name, problem,
                                             text::ToValidUtf8(text::Truncate(RedactUrl(v), 200))));
}

// A key that can go into an HTTP header: no white space or control
// character (a line break would start another header). The message never
// shows the key; the caller says where it came from.
Status ValidateApiKey(std::string_view key) {
  if (std::any_of(key.begin(), key.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; })) {
    return Status::InvalidArgument(
        "the API key contains a space, line break or control character, so it is never sent");
  }
  return Status::Ok();
}

// A string setting as it is shown: base_url without its credentials (the
// request is sent with them).
std::string Shown(const StringSetting& s, const std::string& value) {
  return s.field == &Config::base_url ? RedactUrl(value) : value;
}

std::string ApiKeySource(const Config& c, const Getenv& getenv) {
  if (c.api_key && !c.api_key->empty()) return "set (agent_config)";
  if (!Env(getenv, "QUERYPILOT_API_KEY").empty()) return "set (environment: QUERYPILOT_API_KEY)";
  for (const ProviderSpec& p : Providers()) {
    if (!Env(getenv, p.key_variable).empty())
      return fmt::format("set (environment: {})", p.key_variable);
  }
  return "unset";
}

}  // namespace

Result<std::set<std::string>> ParseFunctionNames(std::string_view value) {
  std::set<std::string> names;
  std::string name;
  auto take = [&]() -> Status {
    if (name.empty()) return Status::Ok();
    for (char c : name) {
      const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '$' ||
                        static_cast<unsigned char>(c) >= 0x80;
      if (!word) {
        return Status::InvalidArgument(
            fmt::format("allow_functions lists function names separated by commas (as in 'regexp, "
                        "my_score'); '{}' is not one",
                        text::Truncate(name, 80)));
      }
    }
    names.insert(text::Lower(name));
    name.clear();
    return Status::Ok();
  };
  for (char c : value) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (Status s = take(); !s.ok()) return s;
    } else {
      name.push_back(c);
    }
  }
  if (Status s = take(); !s.ok()) return s;
  return names;
}

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
  keys.emplace_back(kApiKey);
  for (const auto& s : kIntSettings) keys.emplace_back(s.key);
  keys.emplace_back(kTemperature);
  return keys;
}

namespace {

// The error for a key that names no setting: the closest setting when one is
// near enough to be a slip (a third of the key's letters, at least two, may
// differ) or the one setting the key begins (four letters or more), then
// every setting.
Status UnknownSetting(const std::string& key) {
  std::vector<std::string> keys = Config::Keys();
  const std::string* closest = nullptr;
  size_t best = std::max<size_t>(2, key.size() / 3) + 1;
  auto begins = [&](const std::string& k) {
    return key.size() >= 4 && k.size() > key.size() &&
           text::EqualsIgnoreCase(std::string_view(k).substr(0, key.size()), key);
  };
  const bool one_begins = std::count_if(keys.begin(), keys.end(), begins) == 1;
  for (const std::string& k : keys) {
    size_t d = text::EditDistance(key, k);
    if (one_begins && begins(k)) d = 0;
    if (d < best) {
      best = d;
      closest = &k;
    }
  }
  std::string shown = text::Truncate(key, 80);
  if (closest) {
    return Status::InvalidArgument(
        fmt::format("unknown setting '{}'; did you mean '{}'? The settings are: {}", shown,
                    *closest, fmt::join(keys, ", ")));
  }
  return Status::InvalidArgument(
      fmt::format("unknown setting '{}'; the settings are: {}", shown, fmt::join(keys, ", ")));
}

}  // namespace

std::span<const ReadOnlySettingRow> ReadOnlySettings() {
  return kReadOnlySettings;
}

const ReadOnlySettingRow* FindReadOnlySetting(std::string_view key) {
  for (const ReadOnlySettingRow& r : kReadOnlySettings) {
    if (key == r.key) return &r;
  }
  return nullptr;
}

Status Config::Set(const std::string& key, const std::string& value) {
  if (const ReadOnlySettingRow* r = FindReadOnlySetting(key)) {
    return Status::InvalidArgument(fmt::format("{} is read-only: {}", r->key, r->shows));
  }
  if (!text::IsValidUtf8(key) || !text::IsValidUtf8(value)) {
    return Status::InvalidArgument("a setting's name and value must be valid UTF-8 text");
  }
  for (const auto& s : kStringSettings) {
    if (key != s.key) continue;
    Status st = key == "provider"          ? ValidateProvider(value)
                : key == "base_url"        ? ValidateBaseUrl(value)
                : key == "allow_functions" ? ParseFunctionNames(value).status()
                : key == "empty_doubtful"  ? ValidateEmptyDoubtful(value)
                                           : Status::Ok();
    if (!st.ok()) return st;
    this->*s.field = value;
    return Status::Ok();
  }
  if (key == "api_key") {
    if (Status st = ValidateApiKey(value); !st.ok()) return st;
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
      return Status::InvalidArgument(
          fmt::format("{} must be a whole number from {} to {}, not '{}'", s.key, s.min, s.max,
                      text::Truncate(value, 80)));
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
  return UnknownSetting(key);
}

Result<std::string> Config::Get(const std::string& key, const Getenv& getenv) const {
  for (const auto& s : kStringSettings) {
    if (key == s.key) return Shown(s, this->*s.field);
  }
  if (key == "api_key") return ApiKeySource(*this, getenv);
  for (const auto& s : kIntSettings) {
    if (key == s.key) return std::to_string(this->*s.field);
  }
  if (key == "temperature") return fmt::format("{}", temperature);
  return UnknownSetting(key);
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
  for (const auto& s : kStringSettings) j[s.key] = Shown(s, this->*s.field);
  j["api_key"] = ApiKeySource(*this, getenv);
  for (const auto& s : kIntSettings) j[s.key] = this->*s.field;
  j["temperature"] = temperature;
  // Values are UTF-8 (Set checks), but a value read from the environment may
  // not be: never throw over it.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string EnvironmentVariable(std::string_view key) {
  std::string var = "QUERYPILOT_";
  for (char c : key) var.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
  return var;
}

std::vector<std::string> Config::EnvironmentKeys() {
  auto read = [](const std::string& key) {
    for (const auto& s : kStringSettings) {
      if (key == s.key) return s.environment == kRead;
    }
    for (const auto& s : kIntSettings) {
      if (key == s.key) return s.environment == kRead;
    }
    return key == kApiKey || key == kTemperature;
  };
  std::vector<std::string> keys = Keys();
  std::erase_if(keys, [&](const std::string& k) { return !read(k); });
  return keys;
}

namespace {

// The error for a QUERYPILOT* variable that no setting reads: a setting's
// own variable that is not read at load says where that setting is set;
// any other names the nearest variable that is read (and takes its
// setting's key when it is near enough to be a slip of it, so that setting
// it on the connection answers the error).
EnvironmentError UnknownVariable(const std::string& name) {
  for (const std::string& key : Config::Keys()) {
    if (name != EnvironmentVariable(key)) continue;
    return {
        name, key,
        fmt::format("{} is not read from the environment: set {} on the connection", name, key)};
  }
  std::string upper = name;
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  std::string nearest_key;
  std::string nearest;
  size_t best = std::string::npos;
  for (const std::string& key : Config::EnvironmentKeys()) {
    const std::string var = EnvironmentVariable(key);
    const size_t d = text::EditDistance(upper, var);
    if (d < best) {
      best = d;
      nearest = var;
      nearest_key = key;
    }
  }
  // A third of the letters after QUERYPILOT_, at least two, may differ.
  constexpr size_t kPrefix = sizeof("QUERYPILOT_") - 1;
  const size_t slip =
      std::max<size_t>(2, (upper.size() > kPrefix ? upper.size() - kPrefix : 0) / 3);
  const std::string shown = text::ToValidUtf8(name);
  if (best <= slip) {
    return {name, nearest_key,
            fmt::format("{} is not a variable QueryPilot reads; did you mean {}?", shown, nearest)};
  }
  return {name, "",
          fmt::format("{} is not a variable QueryPilot reads (the nearest one it reads is {})",
                      shown, nearest)};
}

bool StartsWithQueryPilot(std::string_view name) {
  constexpr std::string_view kPrefix = "QUERYPILOT";
  return name.size() >= kPrefix.size() &&
         text::EqualsIgnoreCase(name.substr(0, kPrefix.size()), kPrefix);
}

// What is most likely wrong with `base` (from `source`: base_url or a
// variable) as `provider`'s base URL, with the fix; "" when nothing is.
std::string BaseUrlSlipMessage(const std::string& base, std::string_view source,
                               const ProviderSpec& provider) {
  const BaseUrlSlip slip = FindBaseUrlSlip(base, provider.path);
  const std::string fix =
      source == "base_url"
          ? fmt::format("SELECT agent_config('base_url', '{}')", RedactUrl(slip.fix))
          : fmt::format("export {}={}", source, RedactUrl(slip.fix));
  const std::string endpoint = RedactUrl(EndpointUrl(base, provider.path));
  switch (slip.kind) {
    case BaseUrlSlipKind::kNone:
      return "";
    case BaseUrlSlipKind::kRepeatsPath:
      return fmt::format(
          "{} ends with {}, which QueryPilot adds itself, so the ask would POST to {}, which no "
          "server serves; the base URL is what comes before {}: {}",
          source, slip.repeated, endpoint, provider.path, fix);
    case BaseUrlSlipKind::kNoVersion:
      return fmt::format(
          "{} has no path, so the ask would POST to {}; OpenAI, Ollama, vLLM and LM Studio serve "
          "under /v1: {} (a server that serves {} at its root, as llama.cpp's and LiteLLM's do, "
          "can keep it)",
          source, endpoint, fix, provider.path);
  }
  return "";
}

// A model named as another provider's own (claude-... for OpenAI) sent to
// `provider`'s public endpoint, which never serves it: the ask would fail
// there, with the question and the schema sent to a provider the user most
// likely did not mean. NotConfigured with the fix; Ok otherwise (a proxy or
// a local server may serve any name).
Status CheckModelFitsEndpoint(const ResolvedProvider& r, const ProviderSpec& provider,
                              bool provider_unset) {
  if (SplitUrl(r.endpoint).host != SplitUrl(provider.public_base_url).host) return Status::Ok();
  for (const ProviderSpec& other : Providers()) {
    if (other.kind == provider.kind || other.model_prefix.empty() ||
        r.model.size() < other.model_prefix.size() ||
        !text::EqualsIgnoreCase(std::string_view(r.model).substr(0, other.model_prefix.size()),
                                other.model_prefix)) {
      continue;
    }
    return Status::NotConfigured(fmt::format(
        "model '{}' is {}'s, but the ask would send it to {}'s endpoint ({}){}, which does not "
        "serve it; nothing was sent. Say which provider: SELECT agent_config('provider', '{}') "
        "or export QUERYPILOT_PROVIDER={} (its key is read from {})",
        r.model, other.name, provider.name, RedactUrl(r.endpoint),
        provider_unset
            ? fmt::format(", chosen because provider is not set and {} comes first", provider.name)
            : "",
        other.name, other.name, other.key_variable));
  }
  return Status::Ok();
}

}  // namespace

Config Config::FromEnvironment(const Getenv& getenv, const std::vector<std::string>& names,
                               std::vector<EnvironmentError>* errors) {
  Config c;
  std::vector<EnvironmentError> found;
  std::vector<std::string> read;
  for (const std::string& key : EnvironmentKeys()) {
    const std::string var = EnvironmentVariable(key);
    read.push_back(var);
    const char* raw = getenv(var.c_str());
    if (!raw) continue;  // unset: the default
    const std::string v = raw;
    if (v.empty()) {
      // Set to nothing is no default: the setting would come from elsewhere
      // (base_url from OPENAI_BASE_URL, or a cloud default) without a word.
      found.push_back({var, key,
                       fmt::format("{} is set but empty; unset it for the default (unset {}) or "
                                   "give it a value",
                                   var, var)});
      continue;
    }
    // The key is never copied here (it is read at request time); only
    // checked, so that a key that cannot be sent is named at the first ask.
    Status st = key == kApiKey ? ValidateApiKey(v) : c.Set(key, v);
    if (st.ok()) continue;
    // "max_attempts must be ..." is said of the variable: "QUERYPILOT_MAX_ATTEMPTS must be ...".
    std::string message = st.message();
    if (message.rfind(key + " ", 0) == 0) {
      message = var + message.substr(key.size());
    } else if (message.find(var) == std::string::npos) {
      message = fmt::format("{}: {}", var, message);
    }
    found.push_back({var, key, std::move(message)});
  }
  // Any other QUERYPILOT* variable is a slip that would be ignored without a
  // word (QUERYPILOT_BASEURL would leave the question, the schema and the key
  // to OPENAI_BASE_URL or a cloud default): an error too.
  std::vector<std::string> unknown;
  for (const std::string& name : names) {
    if (StartsWithQueryPilot(name) && std::find(read.begin(), read.end(), name) == read.end())
      unknown.push_back(name);
  }
  std::sort(unknown.begin(), unknown.end());
  unknown.erase(std::unique(unknown.begin(), unknown.end()), unknown.end());
  for (const std::string& name : unknown) found.push_back(UnknownVariable(name));
  if (errors) *errors = std::move(found);
  return c;
}

std::vector<std::string> EnvironmentNames() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    names.emplace_back(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
  }
  return names;
}

Status EnvironmentStatus(const std::vector<EnvironmentError>& errors) {
  if (errors.empty()) return Status::Ok();
  std::vector<std::string> messages;
  std::vector<std::string> fixes;
  for (const EnvironmentError& e : errors) {
    messages.push_back(e.message);
    if (!e.key.empty()) fixes.push_back(fmt::format("SELECT agent_config('{}', ...)", e.key));
  }
  return Status::NotConfigured(fmt::format(
      "nothing was asked: {}. Fix or unset the variable{} and load QueryPilot again{}{}",
      fmt::join(messages, "; "), errors.size() == 1 ? "" : "s",
      fixes.empty() ? "" : ", or set it on this connection: ", fmt::join(fixes, ", ")));
}

Result<ResolvedProvider> ResolveProvider(const Config& config, const Getenv& getenv) {
  ResolvedProvider r;
  // Which wire format: the one the setting names; else the first (the
  // default first) whose own variables are set; else the default.
  const ProviderSpec* provider = FindProvider(config.provider);
  for (const ProviderSpec& p : Providers()) {
    if (provider) break;
    if (!Env(getenv, p.key_variable).empty() || !Env(getenv, p.base_url_variable).empty())
      provider = &p;
  }
  if (!provider) provider = &Providers().front();
  r.kind = provider->kind;

  // The key: agent_config, QUERYPILOT_API_KEY, then the ecosystem's name.
  // One that cannot be sent is an error naming where it came from, never a
  // reason to try the next.
  std::string key_source;
  if (config.api_key && !config.api_key->empty()) {
    r.api_key = *config.api_key;
    key_source = "agent_config";
  } else if (!Env(getenv, "QUERYPILOT_API_KEY").empty()) {
    r.api_key = Env(getenv, "QUERYPILOT_API_KEY");
    key_source = "QUERYPILOT_API_KEY";
  } else {
    key_source = provider->key_variable;
    r.api_key = Env(getenv, provider->key_variable);
  }
  if (Status st = ValidateApiKey(r.api_key); !st.ok()) {
    return Status::NotConfigured(fmt::format("{}: {}", key_source, st.message()));
  }

  // The base URL: agent_config (which starts from QUERYPILOT_BASE_URL), then
  // the ecosystem's name, then the public endpoint when a key says it is
  // wanted. A URL that is set but unusable is an error naming it: the ask
  // never goes on to the next one (a local model's mistyped address must not
  // send the schema to a cloud service).
  std::string base = config.base_url;
  std::string base_source = "base_url";
  if (base.empty()) {
    base_source = provider->base_url_variable;
    base = Env(getenv, provider->base_url_variable);
  }
  if (base.empty() && !r.api_key.empty()) {
    base = provider->public_base_url;
    r.is_default_cloud_endpoint = true;
  }
  if (base.empty()) {
    return Status::NotConfigured(fmt::format(
        "no model endpoint is configured. Either set a cloud key (export {}), or point QueryPilot "
        "at a local OpenAI-compatible server: export "
        "QUERYPILOT_BASE_URL=http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 "
        "(llama.cpp), plus QUERYPILOT_MODEL=<model name>; in SQL: "
        "SELECT agent_config('base_url', 'http://127.0.0.1:11434/v1')",
        EachProvider([](const ProviderSpec& p) { return fmt::format("{}=...", p.key_variable); })));
  }
  if (Status st = ValidateBaseUrl(base, base_source); !st.ok())
    return Status::NotConfigured(st.message());
  // The path goes before a query (Azure OpenAI's ?api-version=...), which is kept.
  r.endpoint = EndpointUrl(base, provider->path);

  r.model = config.model;
  if (r.model.empty()) r.model = Env(getenv, "QUERYPILOT_MODEL");
  if (r.model.empty()) {
    return Status::NotConfigured(
        "no model name is configured: export QUERYPILOT_MODEL=<name> or "
        "SELECT agent_config('model', '<name>')");
  }
  if (Status st = CheckModelFitsEndpoint(r, *provider, config.provider.empty()); !st.ok())
    return st;
  if (std::string slip = BaseUrlSlipMessage(base, base_source, *provider); !slip.empty())
    r.likely_problems.push_back(std::move(slip));
  return r;
}

}  // namespace querypilot
