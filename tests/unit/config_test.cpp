#include "agent/config.h"

#include <map>

#include <gtest/gtest.h>

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
};

TEST(Config, SetValidatesAndLeavesConfigUnchangedOnError) {
  Config c;
  struct Case {
    const char* key;
    const char* value;
    bool ok;
  } cases[] = {
      {"max_attempts", "5", true},     {"max_attempts", "0", false},   {"max_attempts", "11", false},
      {"max_attempts", "3x", false},   {"max_attempts", "", false},    {"provider", "anthropic", true},
      {"provider", "gemini", false},   {"base_url", "ftp://x", false}, {"base_url", "http://127.0.0.1:1/v1", true},
      {"temperature", "0.5", true},    {"temperature", "3", false},    {"nope", "1", false},
      {"sql_timeout_ms", "5", false},  {"max_rows", "0", true},       {"model", "gpt\xe0", false},
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
      {"openai key", {{"OPENAI_API_KEY", "k1"}, {"QUERYPILOT_MODEL", "m"}}, {}, true,
       "https://api.openai.com/v1/chat/completions", "k1", ProviderKind::kOpenAI},
      {"openai base url", {{"OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/"}, {"QUERYPILOT_MODEL", "m"}}, {}, true,
       "http://127.0.0.1:8080/v1/chat/completions", "", ProviderKind::kOpenAI},
      {"anthropic key picks anthropic", {{"ANTHROPIC_API_KEY", "k2"}, {"QUERYPILOT_MODEL", "m"}}, {}, true,
       "https://api.anthropic.com/v1/messages", "k2", ProviderKind::kAnthropic},
      {"anthropic base url has no /v1", {{"ANTHROPIC_BASE_URL", "http://127.0.0.1:9000"}, {"QUERYPILOT_MODEL", "m"}},
       {}, true, "http://127.0.0.1:9000/v1/messages", "", ProviderKind::kAnthropic},
      {"querypilot key wins", {{"QUERYPILOT_API_KEY", "qk"}, {"OPENAI_API_KEY", "ok"}, {"QUERYPILOT_MODEL", "m"}}, {},
       true, "https://api.openai.com/v1/chat/completions", "qk", ProviderKind::kOpenAI},
      {"sql settings win", {{"OPENAI_API_KEY", "ok"}},
       {{"provider", "anthropic"}, {"base_url", "http://127.0.0.1:1"}, {"model", "c"}, {"api_key", "sk"}}, true,
       "http://127.0.0.1:1/v1/messages", "sk", ProviderKind::kAnthropic},
      {"no model", {{"OPENAI_API_KEY", "k1"}}, {}, false, "", "", ProviderKind::kOpenAI},
  };
  for (const auto& c : cases) {
    FakeEnv env;
    env.vars = c.env;
    Config cfg = Config::FromEnvironment(env.fn(), nullptr);
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

TEST(Config, FromEnvironmentReportsBadValues) {
  FakeEnv env;
  env.vars = {{"QUERYPILOT_MAX_ATTEMPTS", "99"}, {"QUERYPILOT_MODEL", "m"}};
  std::vector<std::string> warnings;
  Config c = Config::FromEnvironment(env.fn(), &warnings);
  EXPECT_EQ(c.max_attempts, 3);
  EXPECT_EQ(c.model, "m");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("QUERYPILOT_MAX_ATTEMPTS"), std::string::npos);
}

}  // namespace
}  // namespace querypilot
