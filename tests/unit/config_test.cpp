#include "agent/config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "agent/base/text.h"

namespace querypilot {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> fn() {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : vars) out.push_back(name);
    return out;
  }
};

TEST(Config, SetValidatesAndLeavesConfigUnchangedOnError) {
  Config c;
  struct Case {
    const char* key;
    const char* value;
    bool ok;
  } cases[] = {
      {"max_attempts", "5", true},
      {"max_attempts", "0", false},
      {"max_attempts", "11", false},
      {"max_attempts", "3x", false},
      {"max_attempts", "", false},
      {"provider", "anthropic", true},
      {"provider", "gemini", false},
      {"base_url", "ftp://x", false},
      {"base_url", "http://127.0.0.1:1/v1", true},
      {"temperature", "0.5", true},
      {"temperature", "3", false},
      {"nope", "1", false},
      {"sql_timeout_ms", "5", false},
      {"max_rows", "0", true},
      {"model", "gpt\xe0", false},
      {"base_url", "http://127\xe0\xe0/v1", false},
  };
  for (const auto& k : cases) {
    Config before = c;
    Status st = c.Set(k.key, k.value);
    EXPECT_EQ(st.ok(), k.ok) << k.key << "=" << k.value << ": " << st.message();
    EXPECT_TRUE(text::IsValidUtf8(st.message())) << k.key;
    EXPECT_NO_THROW(c.ToJson(FakeEnv().fn()));
    if (!st.ok()) {
      EXPECT_EQ(st.kind(), ErrorKind::kInvalidArgument);
      EXPECT_EQ(c.Get(k.key == std::string("nope") ? "model" : k.key, FakeEnv().fn()).value(),
                before.Get(k.key == std::string("nope") ? "model" : k.key, FakeEnv().fn()).value());
    }
  }
  EXPECT_EQ(c.max_attempts, 5);
}

TEST(Config, AnUnknownSettingNamesTheClosestOne) {
  struct Case {
    const char* key;
    const char* suggestion;  // "" when nothing is near enough
  } cases[] = {
      {"max_attempt", "max_attempts"},
      {"MAX_ROWS", "max_rows"},
      {"temprature", "temperature"},
      {"modle", "model"},
      {"sql_timeout", "sql_timeout_ms"},
      {"colour", ""},
      {"x", ""},
      {"history", "history_file"},
      {"hist", "history_file"},
      {"max_", ""},
  };
  for (const auto& k : cases) {
    for (bool set : {true, false}) {
      Config c;
      Status st = set ? c.Set(k.key, "1") : c.Get(k.key, FakeEnv().fn()).status();
      ASSERT_FALSE(st.ok()) << k.key;
      std::string want =
          std::string(k.suggestion).empty()
              ? fmt::format("unknown setting '{}'; the settings are: provider, ", k.key)
              : fmt::format("unknown setting '{}'; did you mean '{}'? The settings are: provider, ",
                            k.key, k.suggestion);
      EXPECT_EQ(st.message().rfind(want, 0), 0u) << st.message();
    }
  }
}

// The read-only keys are rows of the settings table: each is found by its
// key, refused by Set with its row's text, and is no setting of Keys().
TEST(Config, ReadOnlyKeysAreRowsThatSetRefuses) {
  const std::vector<std::string> keys = Config::Keys();
  std::vector<std::string> names;
  for (const ReadOnlySettingRow& row : ReadOnlySettings()) {
    names.emplace_back(row.key);
    EXPECT_EQ(FindReadOnlySetting(row.key), &row);
    Config c;
    Status st = c.Set(row.key, "1");
    EXPECT_EQ(st.kind(), ErrorKind::kInvalidArgument) << row.key;
    EXPECT_EQ(st.message(), std::string(row.key) + " is read-only: " + row.shows);
    EXPECT_EQ(std::count(keys.begin(), keys.end(), row.key), 0) << row.key;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"host", "in_use", "problems", "value_index",
                                             "findings", "confidence"}));
  EXPECT_EQ(FindReadOnlySetting("max_rows"), nullptr);
}

TEST(Config, ApiKeyIsNeverReadBack) {
  FakeEnv env;
  Config c;
  EXPECT_EQ(c.Get("api_key", env.fn()).value(), "unset");
  env.vars["OPENAI_API_KEY"] = "sk-env-secret";
  EXPECT_EQ(c.Get("api_key", env.fn()).value(), "set (environment: OPENAI_API_KEY)");
  ASSERT_TRUE(c.Set("api_key", "sk-sql-secret").ok());
  EXPECT_EQ(c.Get("api_key", env.fn()).value(), "set (agent_config)");
  std::string json = c.ToJson(env.fn());
  EXPECT_EQ(json.find("secret"), std::string::npos) << json;
}

TEST(ResolveProvider, EnvironmentFallbacks) {
  struct Case {
    const char* name;
    std::map<std::string, std::string> env;
    std::map<std::string, std::string> settings;
    bool ok;
    const char* endpoint;
    const char* key;
    ProviderKind kind;
  } cases[] = {
      {"nothing configured", {}, {}, false, "", "", ProviderKind::kOpenAI},
      {"openai key",
       {{"OPENAI_API_KEY", "k1"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       true,
       "https://api.openai.com/v1/chat/completions",
       "k1",
       ProviderKind::kOpenAI},
      {"openai base url",
       {{"OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       true,
       "http://127.0.0.1:8080/v1/chat/completions",
       "",
       ProviderKind::kOpenAI},
      {"anthropic key picks anthropic",
       {{"ANTHROPIC_API_KEY", "k2"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       true,
       "https://api.anthropic.com/v1/messages",
       "k2",
       ProviderKind::kAnthropic},
      {"anthropic base url has no /v1",
       {{"ANTHROPIC_BASE_URL", "http://127.0.0.1:9000"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       true,
       "http://127.0.0.1:9000/v1/messages",
       "",
       ProviderKind::kAnthropic},
      {"querypilot key wins",
       {{"QUERYPILOT_API_KEY", "qk"}, {"OPENAI_API_KEY", "ok"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       true,
       "https://api.openai.com/v1/chat/completions",
       "qk",
       ProviderKind::kOpenAI},
      {"sql settings win",
       {{"OPENAI_API_KEY", "ok"}},
       {{"provider", "anthropic"},
        {"base_url", "http://127.0.0.1:1"},
        {"model", "c"},
        {"api_key", "sk"}},
       true,
       "http://127.0.0.1:1/v1/messages",
       "sk",
       ProviderKind::kAnthropic},
      {"no model", {{"OPENAI_API_KEY", "k1"}}, {}, false, "", "", ProviderKind::kOpenAI},
  };
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars = c.env;
    Config cfg = Config::FromEnvironment(env.fn(), env.names(), nullptr);
    for (const auto& [k, v] : c.settings) ASSERT_TRUE(cfg.Set(k, v).ok());
    Result<ResolvedProvider> r = ResolveProvider(cfg, env.fn());
    ASSERT_EQ(r.ok(), c.ok) << c.name << ": " << r.status().message();
    if (!c.ok) {
      EXPECT_EQ(r.status().kind(), ErrorKind::kNotConfigured) << c.name;
      continue;
    }
    EXPECT_EQ(r->endpoint, c.endpoint) << c.name;
    EXPECT_EQ(r->api_key, c.key) << c.name;
    EXPECT_EQ(r->kind, c.kind) << c.name;
  }
}

TEST(Config, FromEnvironmentNamesEveryBadVariable) {
  struct Case {
    const char* var;
    const char* value;
    const char* says;  // besides the variable's name
  } cases[] = {
      {"QUERYPILOT_MAX_ATTEMPTS", "50", "must be a whole number from 1 to 10, not '50'"},
      {"QUERYPILOT_MAX_ATTEMPTS", "three", "from 1 to 10"},
      {"QUERYPILOT_REQUEST_TIMEOUT_MS", "-1", "from 100 to 3600000"},
      {"QUERYPILOT_SQL_TIMEOUT_MS", "1s", "from 10 to 3600000"},
      {"QUERYPILOT_MAX_ROWS", "1e3", "from 0 to 1000000000"},
      {"QUERYPILOT_ANSWER_CACHE", "yes", "from 0 to 1"},
      {"QUERYPILOT_CLARIFY", "2", "from 0 to 1"},
      {"QUERYPILOT_PROVIDER", "antropic", "must be 'openai' or 'anthropic', not 'antropic'"},
      {"QUERYPILOT_BASE_URL", "127.0.0.1:11434/v1", "must start with http:// or https://"},
      {"QUERYPILOT_BASE_URL", "localhost:8080", "must start with http:// or https://"},
      {"QUERYPILOT_BASE_URL", "ftp://127.0.0.1/v1", "must start with http:// or https://"},
      {"QUERYPILOT_BASE_URL", "http:///v1", "must name a host"},
      {"QUERYPILOT_BASE_URL", "http://127.0.0.1:11434/v1 ", "must not contain spaces"},
      {"QUERYPILOT_MODEL", "gpt\xe0", "valid UTF-8"},
      {"QUERYPILOT_CORRECTION_MODEL", "m\xff", "valid UTF-8"},
      {"QUERYPILOT_API_KEY", "sk-abc\r\nX-Evil: 1", "line break"},
  };
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars = {{c.var, c.value}, {"QUERYPILOT_MODEL", "m"}};
    if (std::string(c.var) == "QUERYPILOT_MODEL") env.vars[c.var] = c.value;
    std::vector<EnvironmentError> errors;
    Config cfg;
    ASSERT_NO_THROW(cfg = Config::FromEnvironment(env.fn(), env.names(), &errors)) << c.var;
    ASSERT_EQ(errors.size(), 1u) << c.var << "=" << c.value;
    EXPECT_EQ(errors[0].variable, c.var);
    EXPECT_EQ(errors[0].message.rfind(c.var, 0), 0u)
        << errors[0].message;  // the variable comes first
    EXPECT_NE(errors[0].message.find(c.says), std::string::npos) << errors[0].message;
    EXPECT_TRUE(text::IsValidUtf8(errors[0].message)) << c.var;
    // The setting keeps its default.
    if (errors[0].key != "api_key") {
      EXPECT_EQ(cfg.Get(errors[0].key, env.fn()).value(),
                Config().Get(errors[0].key, env.fn()).value())
          << c.var;
    }
    Status st = EnvironmentStatus(errors);
    EXPECT_EQ(st.kind(), ErrorKind::kNotConfigured);
    EXPECT_NE(st.message().find(c.var), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("agent_config('" + errors[0].key + "'"), std::string::npos)
        << st.message();
  }
  // A key is named, never shown.
  FakeEnv env;
  env.vars = {{"QUERYPILOT_API_KEY", "sk-SECRET-1234\n"}};
  std::vector<EnvironmentError> errors;
  Config::FromEnvironment(env.fn(), env.names(), &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message.find("SECRET"), std::string::npos) << errors[0].message;
}

TEST(Config, FromEnvironmentTakesGoodValuesAndReportsEachBadOne) {
  FakeEnv env;
  env.vars = {{"QUERYPILOT_MAX_ATTEMPTS", "99"},
              {"QUERYPILOT_MODEL", "m"},
              {"QUERYPILOT_MAX_ROWS", " 20 "},
              {"QUERYPILOT_BASE_URL", "https://u:pw-SECRET-99@h/v1?api-key=K-SECRET-77"},
              {"QUERYPILOT_CLARIFY", "maybe"}};
  std::vector<EnvironmentError> errors;
  Config c = Config::FromEnvironment(env.fn(), env.names(), &errors);
  EXPECT_EQ(c.max_attempts, 3);
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.max_rows, 20);
  EXPECT_EQ(c.base_url, "https://u:pw-SECRET-99@h/v1?api-key=K-SECRET-77");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].variable, "QUERYPILOT_MAX_ATTEMPTS");
  EXPECT_EQ(errors[1].variable, "QUERYPILOT_CLARIFY");
  Status st = EnvironmentStatus(errors);
  EXPECT_NE(
      st.message().find("QUERYPILOT_MAX_ATTEMPTS must be a whole number from 1 to 10, not '99'"),
      std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("QUERYPILOT_CLARIFY"), std::string::npos) << st.message();
  EXPECT_TRUE(EnvironmentStatus({}).ok());
}

TEST(Config, TheHistoryFileAndItsBoundAreReadFromTheEnvironment) {
  // A file of the user's naming, or none; checked against the connection
  // when it first uses its history (agent/session/session.h), not here.
  for (const char* value : {"/tmp/mine.history", "off"}) {
    FakeEnv env;
    env.vars = {{"QUERYPILOT_HISTORY_FILE", value}, {"QUERYPILOT_MAX_HISTORY_RUNS", "50"}};
    std::vector<EnvironmentError> errors;
    Config c = Config::FromEnvironment(env.fn(), env.names(), &errors);
    EXPECT_TRUE(errors.empty()) << value;
    EXPECT_EQ(c.history_file, value);
    EXPECT_EQ(c.max_history_runs, 50);
  }
  FakeEnv env;
  env.vars = {{"QUERYPILOT_MAX_HISTORY_RUNS", "0"}};
  std::vector<EnvironmentError> errors;
  Config c = Config::FromEnvironment(env.fn(), env.names(), &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "QUERYPILOT_MAX_HISTORY_RUNS must be a whole number from 1 to 1000000, not '0'");
  EXPECT_EQ(c.history_file, "");  // the default: a file of QueryPilot's own, for a database file
  EXPECT_EQ(c.max_history_runs, 10000);
}

TEST(Config, AnUnknownOrEmptyVariableIsAnErrorNamingTheNearestOneRead) {
  struct Case {
    const char* var;
    const char* value;
    const char* key;   // the setting it carries ("" for none)
    const char* says;  // after the variable's name
  } cases[] = {
      // A slip: the question, schema and key would go to OPENAI_BASE_URL or
      // a cloud default instead.
      {"QUERYPILOT_BASEURL", "http://127.0.0.1:9/v1", "base_url",
       " is not a variable QueryPilot reads; did you mean QUERYPILOT_BASE_URL?"},
      {"QUERYPILOT_MODLE", "m", "model",
       " is not a variable QueryPilot reads; did you mean QUERYPILOT_MODEL?"},
      {"QUERYPILOT_APIKEY", "sk-SECRET-5e5e", "api_key",
       " is not a variable QueryPilot reads; did you mean QUERYPILOT_API_KEY?"},
      {"querypilot_max_rows", "5", "max_rows",
       " is not a variable QueryPilot reads; did you mean QUERYPILOT_MAX_ROWS?"},
      {"QUERYPILOTBASE_URL", "http://127.0.0.1:9/v1", "base_url",
       " is not a variable QueryPilot reads; did you mean QUERYPILOT_BASE_URL?"},
      {"QUERYPILOT_COLOUR", "blue", "",
       " is not a variable QueryPilot reads (the nearest one it reads is QUERYPILOT_"},
      // A setting's own variable that is not read at load.
      {"QUERYPILOT_VALUE_INDEX_FILE", "v.db", "value_index_file",
       " is not read from the environment: set value_index_file on the connection"},
      {"QUERYPILOT_PROGRESS_HANDLER", "1", "progress_handler",
       " is not read from the environment: set progress_handler on the connection"},
      // Set to nothing: no default, since the setting would come from elsewhere.
      {"QUERYPILOT_BASE_URL", "", "base_url", " is set but empty; unset it for the default"},
      {"QUERYPILOT_API_KEY", "", "api_key", " is set but empty; unset it for the default"},
      {"QUERYPILOT_SQL_TIMEOUT_MS", "", "sql_timeout_ms",
       " is set but empty; unset it for the default"},
  };
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars = {
        {c.var, c.value}, {"QUERYPILOT_MODEL", "m"}, {"OPENAI_BASE_URL", "http://127.0.0.1:8/v1"}};
    if (std::string(c.var) == "QUERYPILOT_MODLE") env.vars.erase("QUERYPILOT_MODEL");
    std::vector<EnvironmentError> errors;
    Config::FromEnvironment(env.fn(), env.names(), &errors);
    ASSERT_EQ(errors.size(), 1u) << c.var;
    EXPECT_EQ(errors[0].variable, c.var);
    EXPECT_EQ(errors[0].key, c.key) << c.var;
    EXPECT_EQ(errors[0].message.rfind(std::string(c.var) + c.says, 0), 0u) << errors[0].message;
    Status st = EnvironmentStatus(errors);
    EXPECT_EQ(st.kind(), ErrorKind::kNotConfigured);
    EXPECT_EQ(st.message().find("SECRET"), std::string::npos) << st.message();  // never a value
    // Setting it on the connection answers it, where it has a setting.
    if (*c.key) {
      EXPECT_NE(st.message().find(fmt::format("SELECT agent_config('{}', ...)", c.key)),
                std::string::npos)
          << st.message();
    } else {
      EXPECT_EQ(st.message().find("agent_config("), std::string::npos) << st.message();
    }
  }
  // Every variable read is a setting's row, named from its key; no other
  // QUERYPILOT_* name is one.
  for (const std::string& key : Config::EnvironmentKeys()) {
    FakeEnv env;
    env.vars = {{EnvironmentVariable(key), ""}};
    std::vector<EnvironmentError> errors;
    Config::FromEnvironment(env.fn(), env.names(), &errors);
    ASSERT_EQ(errors.size(), 1u) << key;
    EXPECT_EQ(errors[0].key, key);
    EXPECT_NE(errors[0].message.find("is set but empty"), std::string::npos) << errors[0].message;
  }
  EXPECT_EQ(EnvironmentVariable("request_timeout_ms"), "QUERYPILOT_REQUEST_TIMEOUT_MS");
  // Other variables are not QueryPilot's: nothing said.
  FakeEnv env;
  env.vars = {{"OPENAI_BASE_URL", "http://127.0.0.1:8/v1"}, {"QP_SANITIZE", ""}, {"HOME", "/h"}};
  std::vector<EnvironmentError> errors;
  Config::FromEnvironment(env.fn(), env.names(), &errors);
  EXPECT_TRUE(errors.empty());
}

TEST(Config, BaseUrlIsShownRedacted) {
  Config c;
  const std::string url =
      "https://alice:pw-SECRET-1@h.example/v1?api-version=2024-06-01&api-key=K-SECRET-2";
  ASSERT_TRUE(c.Set("base_url", url).ok());
  EXPECT_EQ(c.base_url, url);  // kept whole for the request
  EXPECT_EQ(c.Get("base_url", FakeEnv().fn()).value(),
            "https://[redacted]@h.example/v1?api-version=2024-06-01&api-key=[redacted]");
  std::string json = c.ToJson(FakeEnv().fn());
  EXPECT_EQ(json.find("SECRET"), std::string::npos) << json;
  EXPECT_NE(json.find("api-version=2024-06-01"), std::string::npos) << json;
  // A bad one is named redacted too.
  Status st = c.Set("base_url", "alice:pw-SECRET-1@h.example/v1");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("SECRET"), std::string::npos) << st.message();
  // A ';' separates parameters as '&' does: the key after it is hidden.
  ASSERT_TRUE(c.Set("base_url", "https://h.example/v1?api-version=1;api_key=K-SECRET-4").ok());
  EXPECT_EQ(c.Get("base_url", FakeEnv().fn()).value(),
            "https://h.example/v1?api-version=1;api_key=[redacted]");
  // A password with an unencoded '?', '#' or '/' leaves no telling where the
  // userinfo ends: refused, saying what to encode, and never shown.
  for (const char* bad :
       {"https://alice:pw?SECRET-5@h.example/v1", "https://alice:pw#SECRET-6@h.example/v1",
        "https://alice:pw/SECRET-7@h.example/v1", "https://h.example/v1?x=a@SECRET-8"}) {
    st = c.Set("base_url", bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("percent-encode"), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find("SECRET"), std::string::npos) << st.message();
  }
  ASSERT_TRUE(c.Set("base_url", url).ok());
  // What agent_config() shows, written back, is refused: it would send the
  // marker as the credential. The URL set before stays.
  st = c.Set("base_url", c.Get("base_url", FakeEnv().fn()).value());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("write the credential out"), std::string::npos) << st.message();
  EXPECT_EQ(c.base_url, url);
  // A key that would break its header is refused without being shown.
  st = c.Set("api_key", "sk-SECRET-3\nX: y");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("SECRET"), std::string::npos) << st.message();
  EXPECT_FALSE(c.api_key.has_value());
}

TEST(ResolveProvider, AnUnusableEndpointNeverFallsBack) {
  struct Case {
    const char* name;
    std::map<std::string, std::string> env;
    std::map<std::string, std::string> settings;
    const char* says;
  } cases[] = {
      {"bad OPENAI_BASE_URL with a cloud key",
       {{"OPENAI_BASE_URL", "127.0.0.1:8080/v1"},
        {"OPENAI_API_KEY", "k1"},
        {"QUERYPILOT_MODEL", "m"}},
       {},
       "OPENAI_BASE_URL must start with http:// or https://"},
      {"bad ANTHROPIC_BASE_URL",
       {{"ANTHROPIC_BASE_URL", "api.anthropic.com"},
        {"ANTHROPIC_API_KEY", "k2"},
        {"QUERYPILOT_MODEL", "m"}},
       {},
       "ANTHROPIC_BASE_URL must start with http:// or https://"},
      {"bad key in the environment",
       {{"OPENAI_API_KEY", "sk-SECRET\n"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       "OPENAI_API_KEY: the API key contains"},
      {"bad QUERYPILOT_API_KEY is not skipped for the next",
       {{"QUERYPILOT_API_KEY", "a b"}, {"OPENAI_API_KEY", "good-key-1"}, {"QUERYPILOT_MODEL", "m"}},
       {},
       "QUERYPILOT_API_KEY: the API key contains"},
  };
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars = c.env;
    Config cfg = Config::FromEnvironment(env.fn(), env.names(), nullptr);
    for (const auto& [k, v] : c.settings) ASSERT_TRUE(cfg.Set(k, v).ok());
    Result<ResolvedProvider> r = ResolveProvider(cfg, env.fn());
    ASSERT_FALSE(r.ok()) << c.name << ": resolved to " << r->endpoint;
    EXPECT_EQ(r.status().kind(), ErrorKind::kNotConfigured) << c.name;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_EQ(r.status().message().find("SECRET"), std::string::npos) << c.name;
  }
}

// A base URL the ask still sends to, but most likely wrongly: named with its
// fix, the endpoint as it would be sent.
TEST(ResolveProvider, NamesABaseUrlThatIsMostLikelyWrong) {
  struct Case {
    const char* name;
    std::map<std::string, std::string> env;
    const char* endpoint;
    std::vector<std::string> says;  // each in the one likely problem; none when empty
  } cases[] = {
      {"a whole endpoint as the base URL",
       {{"QUERYPILOT_BASE_URL", "http://127.0.0.1:8080/v1/chat/completions"},
        {"QUERYPILOT_MODEL", "m"}},
       "http://127.0.0.1:8080/v1/chat/completions/chat/completions",
       {"base_url ends with /chat/completions, which QueryPilot adds itself",
        "POST to http://127.0.0.1:8080/v1/chat/completions/chat/completions",
        "SELECT agent_config('base_url', 'http://127.0.0.1:8080/v1')"}},
      {"an Anthropic base URL ending in /v1",
       {{"ANTHROPIC_BASE_URL", "https://api.anthropic.com/v1"},
        {"ANTHROPIC_API_KEY", "k"},
        {"QUERYPILOT_MODEL", "claude-sonnet-4-5"}},
       "https://api.anthropic.com/v1/v1/messages",
       {"ANTHROPIC_BASE_URL ends with /v1", "/v1/v1/messages",
        "export ANTHROPIC_BASE_URL=https://api.anthropic.com"}},
      {"an OpenAI base URL with no path",
       {{"OPENAI_BASE_URL", "http://user:pw-SECRET@127.0.0.1:11434"}, {"QUERYPILOT_MODEL", "m"}},
       "http://user:pw-SECRET@127.0.0.1:11434/chat/completions",
       {"OPENAI_BASE_URL has no path", "POST to http://[redacted]@127.0.0.1:11434/chat/completions",
        "export OPENAI_BASE_URL=http://[redacted]@127.0.0.1:11434/v1", "can keep it"}},
      {"the usual local form",
       {{"OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"}, {"QUERYPILOT_MODEL", "m"}},
       "http://127.0.0.1:11434/v1/chat/completions",
       {}},
      {"Anthropic's root",
       {{"ANTHROPIC_API_KEY", "k"}, {"QUERYPILOT_MODEL", "claude-x"}},
       "https://api.anthropic.com/v1/messages",
       {}},
  };
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars = c.env;
    Config cfg = Config::FromEnvironment(env.fn(), env.names(), nullptr);
    Result<ResolvedProvider> r = ResolveProvider(cfg, env.fn());
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().message();
    EXPECT_EQ(r->endpoint, c.endpoint) << c.name;
    if (c.says.empty()) {
      EXPECT_TRUE(r->likely_problems.empty()) << c.name << ": " << r->likely_problems[0];
      continue;
    }
    ASSERT_EQ(r->likely_problems.size(), 1u) << c.name;
    for (const std::string& part : c.says) {
      EXPECT_NE(r->likely_problems[0].find(part), std::string::npos)
          << c.name << ": " << r->likely_problems[0];
    }
    EXPECT_EQ(r->likely_problems[0].find("SECRET"), std::string::npos) << c.name;
  }
}

// A Claude model at OpenAI's endpoint (both keys set, provider not) is never
// sent: the ask stops, naming the provider to set.
TEST(ResolveProvider, AModelOfAnotherProviderAtAPublicEndpointIsRefused) {
  FakeEnv env;
  env.vars = {{"OPENAI_API_KEY", "k1"},
              {"ANTHROPIC_API_KEY", "k2"},
              {"QUERYPILOT_MODEL", "claude-sonnet-4-5"}};
  Config cfg = Config::FromEnvironment(env.fn(), env.names(), nullptr);
  Result<ResolvedProvider> r = ResolveProvider(cfg, env.fn());
  ASSERT_FALSE(r.ok()) << r->endpoint;
  EXPECT_EQ(r.status().kind(), ErrorKind::kNotConfigured);
  for (const char* part : {"model 'claude-sonnet-4-5' is anthropic's",
                           "https://api.openai.com/v1/chat/completions", "provider is not set",
                           "SELECT agent_config('provider', 'anthropic')", "ANTHROPIC_API_KEY"}) {
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
  }
  // The fix works; a GPT model at Anthropic's endpoint is refused the same way.
  ASSERT_TRUE(cfg.Set("provider", "anthropic").ok());
  r = ResolveProvider(cfg, env.fn());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->endpoint, "https://api.anthropic.com/v1/messages");
  ASSERT_TRUE(cfg.Set("model", "gpt-4o-mini").ok());
  r = ResolveProvider(cfg, env.fn());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SELECT agent_config('provider', 'openai')"),
            std::string::npos)
      << r.status().message();
  // Any name goes to a server of the user's own (a proxy may serve it).
  ASSERT_TRUE(cfg.Set("provider", "openai").ok());
  ASSERT_TRUE(cfg.Set("model", "claude-sonnet-4-5").ok());
  ASSERT_TRUE(cfg.Set("base_url", "http://127.0.0.1:4000/v1").ok());
  r = ResolveProvider(cfg, env.fn());
  ASSERT_TRUE(r.ok()) << r.status().message();
}

TEST(ResolveProvider, QueryOfTheBaseUrlFollowsThePath) {
  FakeEnv env;
  env.vars = {{"QUERYPILOT_BASE_URL",
               "https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01"},
              {"QUERYPILOT_API_KEY", "k"},
              {"QUERYPILOT_MODEL", "m"}};
  Config cfg = Config::FromEnvironment(env.fn(), env.names(), nullptr);
  Result<ResolvedProvider> r = ResolveProvider(cfg, env.fn());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(
      r->endpoint,
      "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01");
  ASSERT_TRUE(cfg.Set("provider", "anthropic").ok());
  ASSERT_TRUE(cfg.Set("base_url", "http://127.0.0.1:9000/?key=abc").ok());
  r = ResolveProvider(cfg, env.fn());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->endpoint, "http://127.0.0.1:9000/v1/messages?key=abc");
}

}  // namespace
}  // namespace querypilot
