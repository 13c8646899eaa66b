#include "agent/providers/wire.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/base/text.h"
#include "agent/providers/provider.h"

namespace querypilot {
namespace {

using nlohmann::json;

ChatRequest SampleRequest() {
  ChatRequest r;
  r.model = "m";
  r.messages = {{ChatRole::kSystem, "rules"},
                {ChatRole::kUser, "q"},
                {ChatRole::kAssistant, "a"},
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
      {"content parts", 200,
       R"({"choices":[{"message":{"content":[{"type":"text","text":"SEL"},{"type":"text","text":"ECT 2"}]}}]})",
       ErrorKind::kNone, "SELECT 2"},
      {"401", 401,
       R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}})",
       ErrorKind::kProviderAuth, "HTTP 401: Incorrect API key provided"},
      {"429", 429, R"({"error":{"message":"Rate limit reached"}})", ErrorKind::kProviderRateLimit,
       "Rate limit"},
      {"404 ollama", 404, R"({"error":"model 'llama9' not found"})", ErrorKind::kProviderRequest,
       "model 'llama9' not found"},
      {"503 html", 503, "<html><title>Service Unavailable</title></html>",
       ErrorKind::kProviderUnavailable, "HTML page: Service Unavailable"},
      {"not json", 200, "{\"choices\": [", ErrorKind::kProviderBadResponse, "not a JSON object"},
      {"error in 200", 200, R"({"error":{"message":"context length exceeded"}})",
       ErrorKind::kProviderBadResponse, "context length exceeded"},
      {"no choices", 200, R"({"choices":[]})", ErrorKind::kProviderBadResponse, "no choices"},
      {"empty content hit length", 200,
       R"({"choices":[{"message":{"content":""},"finish_reason":"length"}]})",
       ErrorKind::kProviderBadResponse, "max_tokens"},
      {"refusal", 200, R"({"choices":[{"message":{"content":null,"refusal":"I can't help"}}]})",
       ErrorKind::kProviderBadResponse, "declined"},
      {"wrong types", 200, R"({"choices":[{"message":"oops"}]})", ErrorKind::kProviderBadResponse,
       "no message"},
      {"invalid utf-8", 200, "{\"choices\":[{\"message\":{\"content\":\"SELECT '\xff\xfe'\"}}]}",
       ErrorKind::kProviderBadResponse, "not valid UTF-8"},
      {"invalid utf-8 in an error page", 500, "<html>\xc3</html>", ErrorKind::kProviderUnavailable,
       "HTML"},
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
      200,
      R"({"type":"message","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"SELECT 1"}],
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
      {401,
       R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
       ErrorKind::kProviderAuth, "invalid x-api-key"},
      {529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
       ErrorKind::kProviderUnavailable, "Overloaded"},
      {200, R"({"type":"error","error":{"type":"api_error","message":"boom"}})",
       ErrorKind::kProviderBadResponse, "boom"},
      {200, R"({"content":[],"stop_reason":"max_tokens"})", ErrorKind::kProviderBadResponse,
       "max_tokens"},
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
  EXPECT_EQ(text::ToValidUtf8("a\xff"
                              "b"),
            "a\xef\xbf\xbd"
            "b");
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

// "n" is sent only when more than one choice is wanted (Anthropic has none),
// and every choice of a reply is read, in the order of its index.
TEST(OpenAIWire, AsksForAndReadsEveryChoice) {
  ChatRequest one = SampleRequest();
  EXPECT_FALSE(json::parse(OpenAIRequestBody(one)).contains("n"));
  ChatRequest three = SampleRequest();
  three.choices = 3;
  EXPECT_EQ(json::parse(OpenAIRequestBody(three))["n"], 3);
  three.choices = 99;
  EXPECT_EQ(json::parse(OpenAIRequestBody(three))["n"], kMaxChoices);
  three.choices = 3;
  EXPECT_FALSE(json::parse(AnthropicRequestBody(three)).contains("n"));

  struct Case {
    const char* name;
    const char* body;
    const char* first;
    std::vector<std::string> more;
  } cases[] = {
      {"in order",
       R"({"choices":[{"index":0,"message":{"content":"A"}},{"index":1,"message":{"content":"B"}},
                      {"index":2,"message":{"content":"C"}}]})",
       "A",
       {"B", "C"}},
      {"out of order",
       R"({"choices":[{"index":2,"message":{"content":"C"}},{"index":0,"message":{"content":"A"}},
                      {"index":1,"message":{"content":"B"}}]})",
       "A",
       {"B", "C"}},
      {"another choice empty: one fewer",
       R"({"choices":[{"index":0,"message":{"content":"A"}},{"index":1,"message":{"content":""}},
                      {"index":2,"message":{"content":"C"}}]})",
       "A",
       {"C"}},
      {"one choice (n ignored)", R"({"choices":[{"message":{"content":"A"}}]})", "A", {}},
  };
  for (const Case& c : cases) {
    Result<ChatReply> r = ParseOpenAIReply(200, c.body);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().message();
    EXPECT_EQ(r->text, c.first) << c.name;
    EXPECT_EQ(r->more, c.more) << c.name;
    EXPECT_EQ(r->calls, 1) << c.name;
  }
  // The first choice without text is still the reply's error.
  EXPECT_FALSE(ParseOpenAIReply(200, R"({"choices":[{"index":0,"message":{"content":""}},
                                         {"index":1,"message":{"content":"B"}}]})")
                   .ok());
}

// A transport on a thread of its own answers with `texts` as choices (one
// only when it ignores n), and counts what it was sent.
class ChoicesTransport : public HttpTransport {
 public:
  explicit ChoicesTransport(bool takes_n, bool anthropic = false, std::atomic<int>* posts = nullptr,
                            std::atomic<int>* seen_n = nullptr, bool fail = false)
      : takes_n_(takes_n), anthropic_(anthropic), posts_(posts), seen_n_(seen_n), fail_(fail) {}
  Result<HttpResponse> Post(const HttpRequest& request, const std::function<bool()>&) override {
    const int call = posts_ ? posts_->fetch_add(1) : 0;
    if (fail_) return Status(ErrorKind::kProviderConnection, "refused");
    const json body = json::parse(request.body);
    const int n = takes_n_ ? body.value("n", 1) : 1;
    if (seen_n_) seen_n_->fetch_add(body.value("n", 1));
    HttpResponse r;
    r.status = 200;
    if (anthropic_) {
      r.body = json{{"content", {{{"type", "text"}, {"text", "reply " + std::to_string(call)}}}},
                    {"usage", {{"input_tokens", 100}, {"output_tokens", 10}}}}
                   .dump();
      return r;
    }
    json choices = json::array();
    for (int i = 0; i < n; ++i) {
      choices.push_back(
          {{"index", i},
           {"message", {{"content", "reply " + std::to_string(call) + "." + std::to_string(i)}}}});
    }
    r.body = json{{"choices", choices},
                  {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 10 * n}}}}
                 .dump();
    return r;
  }

 private:
  bool takes_n_, anthropic_;
  std::atomic<int>* posts_;
  std::atomic<int>* seen_n_;
  bool fail_;
};

// k choices: one request where the server takes n; where it ignores n or has
// none, the rest by further calls on transports of their own; the tokens and
// calls of every call add up; a further call that fails is one choice fewer.
TEST(ProviderClient, AsksForChoicesWhereTheProviderGivesFewer) {
  struct Case {
    const char* name;
    ProviderKind kind;
    bool takes_n;
    bool further_fail;
    size_t more;
    int calls;
    int64_t prompt_tokens, completion_tokens;
    int further_transports;
    int n_sent;  // the "n" of every request read, summed (1 where absent)
  } cases[] = {
      {"openai takes n", ProviderKind::kOpenAI, true, false, 2, 1, 100, 30, 0, 3},
      {"ollama ignores n", ProviderKind::kOpenAI, false, false, 2, 3, 300, 30, 2, 3 + 1 + 1},
      {"anthropic has no n", ProviderKind::kAnthropic, false, false, 2, 3, 300, 30, 2, 3},
      {"further calls fail", ProviderKind::kOpenAI, false, true, 0, 3, 100, 10, 2, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::atomic<int> posts{0}, seen_n{0}, made{0};
    const bool anthropic = c.kind == ProviderKind::kAnthropic;
    ChoicesTransport first(c.takes_n, anthropic, &posts, &seen_n);
    ResolvedProvider p;
    p.kind = c.kind;
    p.endpoint = "http://127.0.0.1:1/v1/chat/completions";
    p.model = "m";
    ProviderClient client(p, ProviderOptions{}, &first, {},
                          [&]() -> std::unique_ptr<HttpTransport> {
                            made.fetch_add(1);
                            return std::make_unique<ChoicesTransport>(c.takes_n, anthropic, &posts,
                                                                      &seen_n, c.further_fail);
                          });
    ChatRequest request;
    request.messages = {{ChatRole::kUser, "q"}};
    request.choices = 3;
    Result<ChatReply> r = client.Complete(request);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r->text.empty());
    EXPECT_EQ(r->more.size(), c.more);
    EXPECT_EQ(r->calls, c.calls);
    EXPECT_EQ(r->prompt_tokens, c.prompt_tokens);
    EXPECT_EQ(r->completion_tokens, c.completion_tokens);
    EXPECT_EQ(made.load(), c.further_transports);
    // Only the first request asks for n, and only on a wire that has it.
    EXPECT_EQ(seen_n.load(), c.n_sent);
    std::vector<std::string> all = {r->text};
    all.insert(all.end(), r->more.begin(), r->more.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::unique(all.begin(), all.end()), all.end()) << "every choice is its own";
  }
  // One choice asked: one call, no n, no further transport.
  std::atomic<int> posts{0}, seen_n{0}, made{0};
  ChoicesTransport only(true, false, &posts, &seen_n);
  ResolvedProvider p;
  p.endpoint = "http://127.0.0.1:1/v1/chat/completions";
  ProviderClient client(p, ProviderOptions{}, &only, {}, [&]() -> std::unique_ptr<HttpTransport> {
    made.fetch_add(1);
    return nullptr;
  });
  ChatRequest request;
  request.messages = {{ChatRole::kUser, "q"}};
  Result<ChatReply> r = client.Complete(request);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->more.empty());
  EXPECT_EQ(r->calls, 1);
  EXPECT_EQ(posts.load(), 1);
  EXPECT_EQ(made.load(), 0);
}

// A 404 (a base URL without /v1) names the URL asked, redacted, and the
// missing /v1, beside the provider's own message.
TEST(ProviderClient, ANotFoundNamesTheUrlAndTheMissingV1) {
  class NotFound : public HttpTransport {
   public:
    Result<HttpResponse> Post(const HttpRequest&, const std::function<bool()>&) override {
      HttpResponse r;
      r.status = 404;
      r.body = R"({"error":{"message":"Unknown request URL: POST /chat/completions."}})";
      return r;
    }
  } transport;
  ResolvedProvider p;
  p.endpoint = "http://user:longpassword@127.0.0.1:1/chat/completions";
  p.model = "m";
  ProviderClient client(p, ProviderOptions{}, &transport);
  ChatRequest request;
  request.messages = {{ChatRole::kUser, "q"}};
  Result<ChatReply> r = client.Complete(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kProviderRequest);
  EXPECT_EQ(r.status().message(),
            "the provider answered HTTP 404: Unknown request URL: POST /chat/completions. (POST "
            "http://[redacted]@127.0.0.1:1/chat/completions; the base URL has no /v1: try "
            "base_url 'http://[redacted]@127.0.0.1:1/v1')");
}

// Further calls never poll the caller's `cancelled` (it may read the host's
// connection): the calling thread does, and an interruption there stops them.
TEST(ProviderClient, AnInterruptStopsTheFurtherCalls) {
  // Waits until told to stop (5 s at most, so a broken stop fails, not hangs).
  class Waiting : public HttpTransport {
   public:
    explicit Waiting(std::atomic<int>* stopped) : stopped_(stopped) {}
    Result<HttpResponse> Post(const HttpRequest&, const std::function<bool()>& cancelled) override {
      for (int i = 0; i < 500; ++i) {
        if (cancelled()) {
          stopped_->fetch_add(1);
          return Status(ErrorKind::kInterrupted, "interrupted");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return Status(ErrorKind::kProviderTimeout, "never stopped");
    }

   private:
    std::atomic<int>* stopped_;
  };
  std::atomic<int> posts{0}, stopped{0};
  std::atomic<bool> interrupted{false};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> polled_elsewhere{false};
  ChoicesTransport first(false, false, &posts);
  ResolvedProvider p;
  p.endpoint = "http://127.0.0.1:1/v1/chat/completions";
  ProviderClient client(
      p, ProviderOptions{}, &first,
      [&] {
        if (std::this_thread::get_id() != caller) polled_elsewhere = true;
        return interrupted.load();
      },
      [&]() -> std::unique_ptr<HttpTransport> {
        interrupted = true;  // Ctrl-C once the further calls are under way
        return std::make_unique<Waiting>(&stopped);
      });
  ChatRequest request;
  request.messages = {{ChatRole::kUser, "q"}};
  request.choices = 3;
  Result<ChatReply> r = client.Complete(request);
  ASSERT_TRUE(r.ok()) << r.status().message();  // the first reply stands
  EXPECT_TRUE(r->more.empty());
  EXPECT_EQ(r->calls, 3);
  EXPECT_EQ(stopped.load(), 2);
  EXPECT_FALSE(polled_elsewhere.load());
}

}  // namespace
}  // namespace querypilot
