#include "agent/providers/url.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "agent/providers/provider.h"

namespace querypilot {
namespace {

TEST(RedactUrl, HidesUserinfoAndCredentialParameters) {
  struct Case {
    const char* url;
    const char* shown;
  } cases[] = {
      {"", ""},
      {"http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
      {"https://user:pass@host.example/v1", "https://[redacted]@host.example/v1"},
      {"https://token@host.example", "https://[redacted]@host.example"},
      {"https://u:p%40ss@host.example:8443/v1/", "https://[redacted]@host.example:8443/v1/"},
      // A '/' in the password still ends in the userinfo, never in the path.
      {"https://u:pa/ss@host.example/v1", "https://[redacted]@host.example/v1"},
      {"https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01",
       "https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01"},
      {"https://h/v1?api-version=2024-06-01&api-key=abc123secret",
       "https://h/v1?api-version=2024-06-01&api-key=[redacted]"},
      {"https://h/"
       "v1?key=K1&api_key=K2&token=K3&access_token=K4&secret=K5&password=K6&sig=K7&signature=K8&"
       "code=K9",
       "https://h/"
       "v1?key=[redacted]&api_key=[redacted]&token=[redacted]&access_token=[redacted]&secret=["
       "redacted]"
       "&password=[redacted]&sig=[redacted]&signature=[redacted]&code=[redacted]"},
      {"https://h/v1?KEY=K1&Api-Key=K2&subscription-key=K3&model=m",
       "https://h/v1?KEY=[redacted]&Api-Key=[redacted]&subscription-key=[redacted]&model=m"},
      {"https://h/v1?flag&key=&x=1", "https://h/v1?flag&key=&x=1"},
      {"https://h/v1#access_token=K1", "https://h/v1#access_token=[redacted]"},
      {"https://a:b@h/v1?key=K#frag", "https://[redacted]@h/v1?key=[redacted]#frag"},
      // Not a URL (no scheme): the same treatment, so an error can name it.
      {"127.0.0.1:11434/v1", "127.0.0.1:11434/v1"},
      {"user:pw@127.0.0.1:11434/v1?key=K", "[redacted]@127.0.0.1:11434/v1?key=[redacted]"},
  };
  for (const auto& c : cases) EXPECT_EQ(RedactUrl(c.url), c.shown) << c.url;
}

TEST(IsCredentialParameter, NamesThatCarrySecrets) {
  for (const char* name : {"key", "api_key", "api-key", "apikey", "API_KEY", "token",
                           "access_token", "secret", "client_secret", "password", "passwd", "sig",
                           "signature", "code", "x-api-key", "subscription-key", "auth"}) {
    EXPECT_TRUE(IsCredentialParameter(name)) << name;
  }
  for (const char* name :
       {"api-version", "api_version", "model", "deployment", "format", "v", ""}) {
    EXPECT_FALSE(IsCredentialParameter(name)) << name;
  }
}

TEST(UrlSecrets, UserinfoPartsAndParameterValues) {
  std::vector<std::string> got =
      UrlSecrets("https://alice:s3cr%2Ft@h/v1?api-version=2024-06-01&api-key=k%3D1&model=m");
  std::vector<std::string> want = {"alice:s3cr%2Ft", "alice:s3cr/t", "alice", "s3cr%2Ft",
                                   "s3cr/t",         "k%3D1",        "k=1"};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(UrlSecrets("http://127.0.0.1:8080/v1?api-version=1").empty());
}

TEST(EndpointUrl, PathGoesBeforeTheQuery) {
  struct Case {
    const char* base;
    const char* path;
    const char* want;
  } cases[] = {
      {"http://127.0.0.1:11434/v1", "/chat/completions",
       "http://127.0.0.1:11434/v1/chat/completions"},
      {"http://127.0.0.1:11434/v1/", "/chat/completions",
       "http://127.0.0.1:11434/v1/chat/completions"},
      {"http://127.0.0.1:11434/v1//", "/chat/completions",
       "http://127.0.0.1:11434/v1/chat/completions"},
      {"https://api.anthropic.com", "/v1/messages", "https://api.anthropic.com/v1/messages"},
      {"https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01",
       "/chat/completions",
       "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01"},
      {"https://r.openai.azure.com/openai/deployments/d/?api-version=2024-06-01&api-key=K",
       "/chat/completions",
       "https://r.openai.azure.com/openai/deployments/d/chat/"
       "completions?api-version=2024-06-01&api-key=K"},
      {"https://h?key=K", "/v1/messages", "https://h/v1/messages?key=K"},
      {"https://h/v1#frag", "/chat/completions", "https://h/v1/chat/completions#frag"},
      {"https://u:p@h/v1", "/chat/completions", "https://u:p@h/v1/chat/completions"},
  };
  for (const auto& c : cases) EXPECT_EQ(EndpointUrl(c.base, c.path), c.want) << c.base;
}

TEST(RedactSecrets, ReplacesEveryOccurrenceOfLongEnoughSecrets) {
  EXPECT_EQ(RedactSecrets("key sk-abc12345 and sk-abc12345", {"sk-abc12345"}),
            "key [redacted] and [redacted]");
  // Shorter than the minimum: ordinary text is left alone.
  EXPECT_EQ(RedactSecrets("SELECT 'abc' FROM t", {"abc", ""}), "SELECT 'abc' FROM t");
  EXPECT_EQ(RedactSecrets("abcd", {"abcd"}, 4), "[redacted]");
  // The longer secret first, so no part of it is left.
  EXPECT_EQ(RedactSecrets("user:password123", {"password123", "user:password123"}), "[redacted]");
  EXPECT_EQ(RedactSecrets("no secret here", {}), "no secret here");
  // A secret that looks like the placeholder does not loop.
  EXPECT_EQ(RedactSecrets("[redacted] x", {"[redacted]"}), "[redacted] x");
}

// A transport that records what was sent and replays one result.
class RecordingTransport : public HttpTransport {
 public:
  Result<HttpResponse> reply = HttpResponse{};
  std::vector<HttpRequest> sent;
  Result<HttpResponse> Post(const HttpRequest& request, const std::function<bool()>&) override {
    sent.push_back(request);
    return reply;
  }
};

HttpResponse OpenAIReply(long status, const std::string& text) {
  HttpResponse r;
  r.status = status;
  nlohmann::json body;
  if (status == 200) {
    body = {{"choices", {{{"message", {{"role", "assistant"}, {"content", text}}}}}}};
  } else {
    body = {{"error", {{"message", text}}}};
  }
  r.body = body.dump();
  return r;
}

ResolvedProvider Provider(std::string endpoint, std::string key) {
  ResolvedProvider p;
  p.kind = ProviderKind::kOpenAI;
  p.endpoint = std::move(endpoint);
  p.model = "m";
  p.api_key = std::move(key);
  return p;
}

TEST(ProviderClient, SendsCredentialsButNeverHandsThemOn) {
  const std::string key = "sk-live-KEY-0123456789";
  const std::string endpoint =
      "https://bob:hunter2-password@h.example/v1/chat/"
      "completions?api-version=2024-06-01&api-key=QKEY-abcdef12";
  ChatRequest request;
  request.messages = {{ChatRole::kUser, "q"}};
  struct Case {
    const char* name;
    Result<HttpResponse> reply;
  } cases[] = {
      {"reply echoes them",
       OpenAIReply(200, "SELECT '" + key + "', 'hunter2-password', 'QKEY-abcdef12'")},
      {"error echoes them",
       OpenAIReply(400, "bad key " + key + " for bob:hunter2-password QKEY-abcdef12")},
      {"redirect names the URL",
       [] {
         HttpResponse r;
         r.status = 302;
         r.location = "https://bob:hunter2-password@elsewhere.example/v1?key=QKEY-abcdef12";
         return Result<HttpResponse>(r);
       }()},
      {"transport error names the URL",
       Status(ErrorKind::kProviderConnection, "could not connect to " + endpoint + " with " + key)},
  };
  for (const auto& c : cases) {
    RecordingTransport t;
    t.reply = c.reply;
    ProviderClient client(Provider(endpoint, key), ProviderOptions{}, &t);
    Result<ChatReply> r = client.Complete(request);
    ASSERT_EQ(t.sent.size(), 1u) << c.name;
    EXPECT_EQ(t.sent[0].url, endpoint) << c.name;  // sent as configured
    std::string out = r.ok() ? r->text : r.status().message();
    for (const char* secret : {"sk-live-KEY-0123456789", "hunter2-password", "QKEY-abcdef12"}) {
      EXPECT_EQ(out.find(secret), std::string::npos) << c.name << ": " << out;
    }
    EXPECT_NE(out.find("[redacted]"), std::string::npos) << c.name << ": " << out;
  }
}

TEST(CurlTransport, ErrorsShowTheUrlRedacted) {
  // A loopback port that nothing listens on: the connection is refused.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  close(fd);

  CurlTransport curl;
  HttpRequest request;
  request.url = fmt::format(
      "http://bob:hunter2-password@127.0.0.1:{}/v1/chat/"
      "completions?api-version=1&key=QKEY-abcdef12",
      port);
  request.connect_timeout_ms = 2000;
  request.timeout_ms = 2000;
  Result<HttpResponse> r = curl.Post(request, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kProviderConnection) << r.status().message();
  EXPECT_NE(
      r.status().message().find(fmt::format(
          "http://[redacted]@127.0.0.1:{}/v1/chat/completions?api-version=1&key=[redacted]", port)),
      std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find("hunter2"), std::string::npos);
  EXPECT_EQ(r.status().message().find("QKEY"), std::string::npos);
}

}  // namespace
}  // namespace querypilot
