// The providers QueryPilot speaks to, one row each (Providers()), and
// ProviderClient: an LlmClient that speaks to one of them over HTTP.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/providers/http.h"
#include "agent/providers/llm.h"

namespace querypilot {

enum class ProviderKind { kOpenAI, kAnthropic };

// What QueryPilot knows of one provider family: its name, the ecosystem's
// variables that point at it, its public endpoint and its wire format
// (agent/providers/wire.h). One row per provider in Providers(); the agent
// resolves its settings against these rows and never names a provider itself.
struct ProviderSpec {
  ProviderKind kind;
  std::string_view name;          // the provider setting's value: "openai"
  const char* key_variable;       // the ecosystem's key: "OPENAI_API_KEY"
  const char* base_url_variable;  // the ecosystem's base URL: "OPENAI_BASE_URL"
  // Used when a key is set and no base URL is: "https://api.openai.com/v1".
  std::string_view public_base_url;
  // Appended to the base URL (before its query): "/chat/completions".
  std::string_view path;
  // Headers besides Content-Type; no credential header when the key is empty.
  std::vector<std::string> (*headers)(std::string_view api_key);
  std::string (*request_body)(const ChatRequest& request);
  Result<ChatReply> (*parse_reply)(long http_status, std::string_view body);
};

// Every provider, the default one (used when nothing says which) first.
std::span<const ProviderSpec> Providers();
// The row of `kind`.
const ProviderSpec& ProviderSpecOf(ProviderKind kind);
// The row named `name` (exactly, as the provider setting holds it), or null.
const ProviderSpec* FindProvider(std::string_view name);

std::string_view ProviderName(ProviderKind kind);

// Where and how to reach the model, resolved from a Config and the environment.
struct ResolvedProvider {
  ProviderKind kind = ProviderKind::kOpenAI;
  // Full URL of chat/completions or messages, credentials included (sent,
  // never shown: RedactUrl).
  std::string endpoint;
  std::string model;
  std::string api_key;  // may be empty (a local server needs none)
  bool is_default_cloud_endpoint = false;
};

// How the client talks to the provider: the agent maps its settings onto
// these (ProviderOptionsFrom in agent/config.h); the providers know nothing
// of the agent's settings.
struct ProviderOptions {
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 60000;  // one HTTP try, connect included
  RetryPolicy retry;
};

class ProviderClient : public LlmClient {
 public:
  // `transport` is not owned and must outlive this client. `cancelled` is
  // polled during transfers and between retries.
  ProviderClient(ResolvedProvider provider, const ProviderOptions& options,
                 HttpTransport* transport, std::function<bool()> cancelled = {});

  // One chat completion. Neither the reply's text nor an error's message
  // ever holds the API key or a credential of the endpoint's URL (userinfo,
  // a key in its query): each is replaced by [redacted], and URLs in errors
  // are shown redacted (agent/providers/url.h).
  Result<ChatReply> Complete(const ChatRequest& request) override;

 private:
  std::string Scrubbed(std::string message) const;

  std::vector<std::string> secrets_;  // the key and the endpoint's credentials
  ResolvedProvider provider_;
  RetryPolicy retry_;
  int connect_timeout_ms_;
  int request_timeout_ms_;
  HttpTransport* transport_;
  std::function<bool()> cancelled_;
};

}  // namespace querypilot
