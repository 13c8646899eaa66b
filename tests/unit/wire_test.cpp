#include "agent/providers/wire.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "agent/base/text.h"
#include "agent/providers/provider.h"
#include <nlohmann/json.hpp>

namespace querypilot {
namespace {

using nlohmann::json;

ChatRequest SampleRequest() {
  ChatRequest r;
  r.model = "m";
  r.messages = {{ChatRole::kSystem, "rules"}, {ChatRole::kUser, "q"}, {ChatRole::kAssistant, "a"},
                {ChatRole::kUser, "fix"}};
  r.max_tokens = 100;
  return r;
}

TEST(OpenAIWire, RequestBody) {
  json b = json::parse(OpenAIRequestBody(SampleRequest()));
  EXPECT_EQ(b["model"], "m");
  ASSERT_EQ(b["messages"].size(), 4u);
  EXPECT_EQ(b["messages"][0], (json{{"role", "system"}, {"content", "rules"}}));
  EXPECT_EQ(b["messages"][2]["role"], "assistant");
  EXPECT_EQ(b["stream"], false);
  EXPECT_EQ(b["max_tokens"], 100);
}

TEST(OpenAIWire, HeadersCarryKeyOnlyWhenSet) {
  auto h = OpenAIHeaders("k");
  EXPECT_NE(std::find(h.begin(), h.end(), "Authorization: Bearer k"), h.end());
  for (const auto& x : OpenAIHeaders("")) EXPECT_EQ(x.find("Authorization"), std::string::npos);
}

TEST(OpenAIWire, Replies) {
  struct Case {
    const char* name;
    long status;
    const char* body;
    ErrorKind kind;  // kNone: success
    const char* text_or_message;
  } cases[] = {
      {"ok", 200,
       R"({"choices":[{"message":{"role":"assistant","content":"SELECT 1"},"finish_reason":"stop"}],
           "usage":{"prompt_tokens":12,"completion_tokens":3}})",
       ErrorKind::kNone, "SELECT 1"},
      {"content parts", 200, R"({"choices":[{"message":{"content":[{"type":"text","text":"SEL"},{"type":"text","text":"ECT 2"}]}}]})",
       ErrorKind::kNone, "SELECT 2"},
      {"401", 401, R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}})",
       ErrorKind::kProviderAuth, "HTTP 401: Incorrect API key provided"},
      {"429", 429, R"({"error":{"message":"Rate limit reached"}})", ErrorKind::kProviderRateLimit, "Rate limit"},
      {"404 ollama", 404, R"({"error":"model 'llama9' not found"})", ErrorKind::kProviderRequest,
       "model 'llama9' not found"},
      {"503 html", 503, "<html><title>Service Unavailable</title></html>", ErrorKind::kProviderUnavailable,
       "HTML page: Service Unavailable"},
      {"not json", 200, "{\"choices\": [", ErrorKind::kProviderBadResponse, "not a JSON object"},
      {"error in 200", 200, R"({"error":{"message":"context length exceeded"}})", ErrorKind::kProviderBadResponse,
       "context length exceeded"},
      {"no choices", 200, R"({"choices":[]})", ErrorKind::kProviderBadResponse, "no choices"},
      {"empty content hit length", 200, R"({"choices":[{"message":{"content":""},"finish_reason":"length"}]})",
       ErrorKind::kProviderBadResponse, "max_tokens"},
      {"refusal", 200, R"({"choices":[{"message":{"content":null,"refusal":"I can't help"}}]})",
       ErrorKind::kProviderBadResponse, "declined"},
      {"wrong types", 200, R"({"choices":[{"message":"oops"}]})", ErrorKind::kProviderBadResponse, "no message"},
      {"invalid utf-8", 200, "{\"choices\":[{\"message\":{\"content\":\"SELECT '\xff\xfe'\"}}]}",
       ErrorKind::kProviderBadResponse, "not valid UTF-8"},
      {"invalid utf-8 in an error page", 500, "<html>\xc3</html>", ErrorKind::kProviderUnavailable, "HTML"},
  };
  for (const auto& c : cases) {
    Result<ChatReply> r = ParseOpenAIReply(c.status, c.body);
    if (!r.ok()) {
      EXPECT_TRUE(text::IsValidUtf8(r.status().message())) << c.name;
    }
    if (c.kind == ErrorKind::kNone) {
      ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
      EXPECT_EQ(r->text, c.text_or_message) << c.name;
    } else {
      ASSERT_FALSE(r.ok()) << c.name;
      EXPECT_EQ(r.status().kind(), c.kind) << c.name;
      EXPECT_NE(r.status().message().find(c.text_or_message), std::string::npos)
          << c.name << ": " << r.status().message();
    }
  }
  Result<ChatReply> ok = ParseOpenAIReply(200, cases[0].body);
  EXPECT_EQ(ok->prompt_tokens, 12);
  EXPECT_EQ(ok->completion_tokens, 3);
  EXPECT_EQ(ParseOpenAIReply(200, cases[1].body)->prompt_tokens, -1);  // not reported
}

TEST(AnthropicWire, RequestBodyMovesSystemOut) {
  json b = json::parse(AnthropicRequestBody(SampleRequest()));
  EXPECT_EQ(b["system"], "rules");
  ASSERT_EQ(b["messages"].size(), 3u);
  EXPECT_EQ(b["messages"][0]["role"], "user");
  EXPECT_EQ(b["messages"][1]["role"], "assistant");
  EXPECT_EQ(b["max_tokens"], 100);
  auto h = AnthropicHeaders("k");
  EXPECT_NE(std::find(h.begin(), h.end(), "x-api-key: k"), h.end());
  EXPECT_NE(std::find(h.begin(), h.end(), "anthropic-version: 2023-06-01"), h.end());
}

TEST(AnthropicWire, Replies) {
  Result<ChatReply> ok = ParseAnthropicReply(
      200, R"({"type":"message","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"SELECT 1"}],
              "stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":4}})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->text, "SELECT 1");
  EXPECT_EQ(ok->prompt_tokens, 20);
  EXPECT_EQ(ok->completion_tokens, 4);

  struct Case {
    long status;
    const char* body;
    ErrorKind kind;
    const char* message;
  } cases[] = {
      {401, R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
       ErrorKind::kProviderAuth, "invalid x-api-key"},
      {529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
       ErrorKind::kProviderUnavailable, "Overloaded"},
      {200, R"({"type":"error","error":{"type":"api_error","message":"boom"}})", ErrorKind::kProviderBadResponse,
       "boom"},
      {200, R"({"content":[],"stop_reason":"max_tokens"})", ErrorKind::kProviderBadResponse, "max_tokens"},
      {200, "[]", ErrorKind::kProviderBadResponse, "not a JSON object"},
  };
  for (const auto& c : cases) {
    Result<ChatReply> r = ParseAnthropicReply(c.status, c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().kind(), c.kind) << c.body;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
}

TEST(Text, ToValidUtf8ReplacesOnlyBadBytes) {
  EXPECT_EQ(text::ToValidUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(text::ToValidUtf8("a\xff" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(text::ToValidUtf8("\xc3"), "\xef\xbf\xbd");
  EXPECT_EQ(text::ToValidUtf8(""), "");
}

// Each provider is one row: a name the provider setting accepts, the
// ecosystem's variables, a public endpoint and a wire format that round-trips.
TEST(Providers, EveryRowIsComplete) {
  ASSERT_FALSE(Providers().empty());
  EXPECT_EQ(Providers().front().kind, ProviderKind::kOpenAI);  // the default
  for (const ProviderSpec& p : Providers()) {
    SCOPED_TRACE(std::string(p.name));
    EXPECT_EQ(FindProvider(p.name), &p);
    EXPECT_EQ(&ProviderSpecOf(p.kind), &p);
    EXPECT_EQ(ProviderName(p.kind), p.name);
    EXPECT_EQ(std::string(p.key_variable).find("_API_KEY"), std::string(p.key_variable).size() - 8);
    EXPECT_EQ(std::string(p.base_url_variable).find("_BASE_URL"),
              std::string(p.base_url_variable).size() - 9);
    EXPECT_EQ(p.public_base_url.rfind("https://", 0), 0u);
    EXPECT_EQ(p.path.front(), '/');
    ASSERT_TRUE(p.headers && p.request_body && p.parse_reply);
    EXPECT_EQ(json::parse(p.request_body(SampleRequest()))["model"], "m");
    const std::vector<std::string> headers = p.headers("sk-test");
    EXPECT_TRUE(std::any_of(headers.begin(), headers.end(), [](const std::string& h) {
      return h.find("sk-test") != std::string::npos;
    }));
    EXPECT_FALSE(p.parse_reply(200, "not json").ok());
  }
  EXPECT_EQ(FindProvider(""), nullptr);
  EXPECT_EQ(FindProvider("OpenAI"), nullptr);  // the setting's value, exactly
  EXPECT_EQ(FindProvider("gemini"), nullptr);
}

}  // namespace
}  // namespace querypilot
