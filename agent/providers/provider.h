// The providers QueryPilot speaks to, one row each (Providers()), and
// ProviderClient: an LlmClient that speaks to one of them over HTTP.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/secrets.h"
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
  // How the names of this provider's own models start ("claude-"): such a
  // model sent to another provider's public endpoint is a slip.
  std::string_view model_prefix;
  // Headers besides Content-Type; no credential header when the key is empty.
  std::vector<std::string> (*headers)(std::string_view api_key);
  std::string (*request_body)(const ChatRequest& request);
  Result<ChatReply> (*parse_reply)(long http_status, std::string_view body);
  // Whether the wire can ask for several choices in one request ("n"). Where
  // it cannot, ProviderClient asks for them by calls side by side at once.
  bool takes_n;
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
  // What is most likely wrong with a base URL the ask still sends to (a
  // path the endpoint repeats, no /v1), each message with its fix; shown by
  // agent_config('problems') before the first ask.
  std::vector<std::string> likely_problems;
};

// Every secret of `provider`'s settings, for Secrets to take out of texts:
// the API key, the endpoint's (UrlSecrets: its userinfo, user and password,
// every parameter value but api-version's), and the basic credential
// (base64 of the decoded user:password) its userinfo is sent as.
Secrets ProviderSecrets(const ResolvedProvider& provider);

// How the client talks to the provider: the agent maps its settings onto
// these (ProviderOptionsFrom in agent/config.h); the providers know nothing
// of the agent's settings.
struct ProviderOptions {
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 60000;  // one HTTP try, connect included
  RetryPolicy retry;
};

// Makes a transport for one further call run beside the first (a transport
// does one transfer at a time).
using TransportFactory = std::function<std::unique_ptr<HttpTransport>()>;

class ProviderClient : public LlmClient {
 public:
  // `transport` is not owned and must outlive this client. `cancelled` is
  // polled during transfers and between retries, on the calling thread only.
  // `more_transports` makes the transports of further calls (default: a
  // CurlTransport each).
  ProviderClient(ResolvedProvider provider, const ProviderOptions& options,
                 HttpTransport* transport, std::function<bool()> cancelled = {},
                 TransportFactory more_transports = {});

  // One chat completion. An error's message never holds a secret of the
  // provider's settings (ProviderSecrets, taken out by Secrets::Scrub), and
  // URLs in errors are shown redacted (agent/providers/url.h). The reply's
  // texts have the secrets of 8 bytes or more taken out wherever they occur
  // (Secrets::ScrubLong), so that the SQL read from them runs as the model
  // wrote it; what of a reply is kept or shown goes through Secrets::Scrub.
  //
  // With request.choices = k > 1: one request asks for k where the wire takes
  // "n"; the choices a provider did not return (Ollama ignores n; Anthropic
  // has no n: all k at once) are asked by further calls of one choice each,
  // run side by side on threads of their own, each with its own transport and
  // the same timeouts and retries. They use no SQLite connection: this thread
  // polls `cancelled` while they run and stops them when it says so. A
  // further call that fails is one choice fewer, never the reply's error.
  // The reply's tokens, calls and tries add up every call made; its ms is the
  // wall time of them all.
  Result<ChatReply> Complete(const ChatRequest& request) override;

 private:
  // One request, retries included, with `cancelled` polled as it runs.
  Result<ChatReply> CallOnce(HttpTransport& transport, const ChatRequest& request,
                             const std::function<bool()>& cancelled) const;
  std::string Scrubbed(std::string message) const;

  Secrets secrets_;  // ProviderSecrets(provider_)
  ResolvedProvider provider_;
  RetryPolicy retry_;
  int connect_timeout_ms_;
  int request_timeout_ms_;
  HttpTransport* transport_;
  std::function<bool()> cancelled_;
  TransportFactory more_transports_;
};

}  // namespace querypilot
