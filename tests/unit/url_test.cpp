#include "agent/providers/url.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/providers/provider.h"

namespace querypilot {
namespace {

TEST(RedactUrl, HidesUserinfoAndEveryParameterValueButHarmlessOnes) {
  struct Case {
    const char* url;
    const char* shown;
  } cases[] = {
      {"", ""},
      {"http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
      {"https://user:pass@host.example/v1", "https://[redacted]@host.example/v1"},
      {"https://token@host.example", "https://[redacted]@host.example"},
      {"https://u:p%40ss@host.example:8443/v1/", "https://[redacted]@host.example:8443/v1/"},
      {"https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01",
       "https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01"},
      {"https://h/v1?api-version=2024-06-01&api-key=abc123secret",
       "https://h/v1?api-version=2024-06-01&api-key=[redacted]"},
      // Every value, whatever its name: the rule is the URL's structure.
      {"https://h/v1?key=K1&api_key=K2&token=K3&sig=K7&code=K9&x=K10&model=m",
       "https://h/"
       "v1?key=[redacted]&api_key=[redacted]&token=[redacted]&sig=[redacted]&code=[redacted]"
       "&x=[redacted]&model=[redacted]"},
      {"https://h/v1?API-Version=1&API_VERSION=2", "https://h/v1?API-Version=1&API_VERSION=2"},
      // ';' separates parameters as '&' does.
      {"https://h/v1?api-version=1;api_key=K-SECRET-1",
       "https://h/v1?api-version=1;api_key=[redacted]"},
      {"https://h/v1?api-version=1;key=K;x=y&z=w",
       "https://h/v1?api-version=1;key=[redacted];x=[redacted]&z=[redacted]"},
      // A parameter with no '=' is all value; an empty value hides nothing.
      {"https://h/v1?sk-SECRET-2&key=&api-version", "https://h/v1?[redacted]&key=&[redacted]"},
      {"https://h/v1#access_token=K1", "https://h/v1#access_token=[redacted]"},
      {"https://h/v1#K-SECRET-3", "https://h/v1#[redacted]"},
      {"https://a:b@h/v1?key=K#frag", "https://[redacted]@h/v1?key=[redacted]#[redacted]"},
      // Parameters of a path segment.
      {"https://h/v1;key=K-SECRET-4/x", "https://h/v1;key=[redacted]/x"},
      // An '@' after the host's end: a password with an unencoded '/', '?'
      // or '#' cannot be told from the rest, so nothing is shown.
      {"https://u:pa/ss@host.example/v1", "https://[redacted]"},
      {"https://u:pa?ss@host.example/v1", "https://[redacted]"},
      {"https://u:pa#ss@host.example/v1?key=K", "https://[redacted]"},
      {"https://host.example/v1?email=a@b.example&key=K", "https://[redacted]"},
      // Not a URL (no scheme): the same treatment, so an error can name it.
      {"127.0.0.1:11434/v1", "127.0.0.1:11434/v1"},
      {"user:pw@127.0.0.1:11434/v1?key=K", "[redacted]@127.0.0.1:11434/v1?key=[redacted]"},
  };
  for (const auto& c : cases) EXPECT_EQ(RedactUrl(c.url), c.shown) << c.url;
}

TEST(IsHarmlessParameter, OnlyTheApiVersion) {
  for (const char* name : {"api-version", "api_version", "API-Version"}) {
    EXPECT_TRUE(IsHarmlessParameter(name)) << name;
  }
  for (const char* name :
       {"key", "api_key", "model", "deployment", "v", "version", "x-api-version-key", ""}) {
    EXPECT_FALSE(IsHarmlessParameter(name)) << name;
  }
}

TEST(UrlSecrets, UserinfoPartsAndParameterValues) {
  std::vector<std::string> got =
      UrlSecrets("https://alice:s3cr%2Ft@h/v1?api-version=2024-06-01&api-key=k%3D1&model=m");
  std::vector<std::string> want = {"alice:s3cr%2Ft", "alice:s3cr/t", "alice", "s3cr%2Ft",
                                   "s3cr/t",         "k%3D1",        "k=1",   "m"};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(UrlSecrets("http://127.0.0.1:8080/v1?api-version=1").empty());
  EXPECT_EQ(UrlSecrets("http://h/v1?api-version=1;api_key=K-1#frag"),
            (std::vector<std::string>{"K-1", "frag"}));
  EXPECT_EQ(UrlSecrets("http://h/v1;key=K-2/x"), (std::vector<std::string>{"K-2"}));
  // An '@' after the host's end: all up to the last '@' too.
  std::vector<std::string> ambiguous = UrlSecrets("https://u:pa?ss#word@h/v1");
  EXPECT_NE(std::find(ambiguous.begin(), ambiguous.end(), "pa?ss#word"), ambiguous.end());
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

// A 404 names the URL asked, redacted, and the missing /v1 where the base URL
// has no path and the wire's path no version segment.
TEST(NotFoundNote, NamesTheUrlAndAMissingV1) {
  EXPECT_EQ(NotFoundNote("http://127.0.0.1:8080/chat/completions", "/chat/completions"),
            " (POST http://127.0.0.1:8080/chat/completions; the base URL has no /v1: try "
            "base_url 'http://127.0.0.1:8080/v1')");
  EXPECT_EQ(NotFoundNote("https://u:secretpw@h/chat/completions?key=k1&api-version=2",
                         "/chat/completions"),
            " (POST https://[redacted]@h/chat/completions?key=[redacted]&api-version=2; the "
            "base URL has no /v1: try base_url "
            "'https://[redacted]@h/v1?key=[redacted]&api-version=2')");
  // A base URL with a path of its own (an Azure deployment's, a proxy's) is
  // not one /v1 away from working: the URL only.
  EXPECT_EQ(NotFoundNote("https://r.openai.azure.com/openai/deployments/d/chat/completions"
                         "?api-version=2024-10-21",
                         "/chat/completions"),
            " (POST https://r.openai.azure.com/openai/deployments/d/chat/completions"
            "?api-version=2024-10-21)");
  // A version in the base URL, or in the wire's path: the URL only.
  EXPECT_EQ(NotFoundNote("http://h/v1/chat/completions", "/chat/completions"),
            " (POST http://h/v1/chat/completions)");
  EXPECT_EQ(NotFoundNote("https://h/v1beta/openai/chat/completions", "/chat/completions"),
            " (POST https://h/v1beta/openai/chat/completions)");
  EXPECT_EQ(NotFoundNote("https://api.anthropic.com/v1/messages", "/v1/messages"),
            " (POST https://api.anthropic.com/v1/messages)");
}

// A base URL whose path ends as the wire's path starts (the endpoint repeats
// it), or a root with no version: the slip and the base URL to use.
TEST(FindBaseUrlSlip, RepeatedPathOrNoVersion) {
  struct Case {
    const char* base;
    const char* path;
    BaseUrlSlipKind kind;
    const char* repeated;
    const char* fix;
  } cases[] = {
      {"http://h:8080/v1/chat/completions", "/chat/completions", BaseUrlSlipKind::kRepeatsPath,
       "/chat/completions", "http://h:8080/v1"},
      {"http://h:8080/v1/chat/completions/", "/chat/completions", BaseUrlSlipKind::kRepeatsPath,
       "/chat/completions", "http://h:8080/v1"},
      {"http://u:p@h/v1/Chat/Completions?key=k#f", "/chat/completions",
       BaseUrlSlipKind::kRepeatsPath, "/chat/completions", "http://u:p@h/v1?key=k#f"},
      {"http://h/v1/chat", "/chat/completions", BaseUrlSlipKind::kRepeatsPath, "/chat",
       "http://h/v1"},
      {"https://api.anthropic.com/v1", "/v1/messages", BaseUrlSlipKind::kRepeatsPath, "/v1",
       "https://api.anthropic.com"},
      {"https://api.anthropic.com/v1/", "/v1/messages", BaseUrlSlipKind::kRepeatsPath, "/v1",
       "https://api.anthropic.com"},
      {"https://gw/proxy/v1/messages", "/v1/messages", BaseUrlSlipKind::kRepeatsPath,
       "/v1/messages", "https://gw/proxy"},
      {"http://127.0.0.1:11434", "/chat/completions", BaseUrlSlipKind::kNoVersion, "",
       "http://127.0.0.1:11434/v1"},
      {"http://127.0.0.1:11434/?k=1", "/chat/completions", BaseUrlSlipKind::kNoVersion, "",
       "http://127.0.0.1:11434/v1?k=1"},
      // Nothing to say: the usual forms, a path of its own, Anthropic's root.
      {"http://127.0.0.1:11434/v1", "/chat/completions", BaseUrlSlipKind::kNone, "", ""},
      {"https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01",
       "/chat/completions", BaseUrlSlipKind::kNone, "", ""},
      {"https://api.anthropic.com", "/v1/messages", BaseUrlSlipKind::kNone, "", ""},
      {"http://h/anthropic", "/v1/messages", BaseUrlSlipKind::kNone, "", ""},
      {"http://h/v1/completions", "/chat/completions", BaseUrlSlipKind::kNone, "", ""},
  };
  for (const auto& c : cases) {
    const BaseUrlSlip slip = FindBaseUrlSlip(c.base, c.path);
    EXPECT_EQ(slip.kind, c.kind) << c.base;
    EXPECT_EQ(slip.repeated, c.repeated) << c.base;
    EXPECT_EQ(slip.fix, c.fix) << c.base;
  }
}

// A 404 of a doubled path names the base URL that would have worked.
TEST(NotFoundNote, NamesARepeatedPath) {
  EXPECT_EQ(NotFoundNote("http://h/v1/chat/completions/chat/completions", "/chat/completions"),
            " (POST http://h/v1/chat/completions/chat/completions; the base URL already ends with "
            "/chat/completions, which is added to it: try base_url 'http://h/v1')");
  EXPECT_EQ(NotFoundNote("https://u:pw@h/v1/v1/messages?key=k1", "/v1/messages"),
            " (POST https://[redacted]@h/v1/v1/messages?key=[redacted]; the base URL already ends "
            "with /v1, which is added to it: try base_url 'https://[redacted]@h?key=[redacted]')");
}

TEST(ProviderSecrets, TheKeyTheUrlsSecretsAndTheBasicCredential) {
  struct Case {
    std::string endpoint;
    std::string api_key;
    std::string text;
    std::string scrubbed;
  };
  const Case cases[] = {
      // The URL: a request line and the basic credential echoed.
      {"http://user:pass@h/v1/chat/completions?key=SECRET", "",
       "POST /v1/chat/completions?key=SECRET HTTP/1.1\nAuthorization: Basic dXNlcjpwYXNz",
       "POST /v1/chat/completions?key=[redacted] HTTP/1.1\nAuthorization: Basic [redacted]"},
      {"http://h/v1/chat/completions", "sk-key-0123456789", "Bearer sk-key-0123456789",
       "Bearer [redacted]"},
      // api-version is no secret; a path parameter's and a fragment's values are.
      {"https://h/v1;tok=PathTok/chat/completions?api-version=2024-06-01#frag=FragS3cret", "",
       "/v1;tok=PathTok?api-version=2024-06-01 FragS3cret",
       "/v1;tok=[redacted]?api-version=2024-06-01 [redacted]"},
      // A user alone is sent as "user:"; a percent-encoded password decoded.
      {"https://token1@h/v1", "", "dG9rZW4xOg== token1", "[redacted] [redacted]"},
      {"https://u:p%40ssw0rd@h/v1", "", "dTpwQHNzdzByZA== p@ssw0rd p%40ssw0rd",
       "[redacted] [redacted] [redacted]"},
      // Nothing to hide.
      {"http://127.0.0.1:8080/v1/chat/completions", "", "nothing here", "nothing here"},
  };
  for (const Case& c : cases) {
    ResolvedProvider p;
    p.endpoint = c.endpoint;
    p.api_key = c.api_key;
    EXPECT_EQ(ProviderSecrets(p).Scrub(c.text), c.scrubbed) << c.endpoint;
  }
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
