// ProviderClient: an LlmClient that speaks to a real provider over HTTP.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/providers/http.h"
#include "agent/providers/llm.h"

namespace querypilot {

enum class ProviderKind { kOpenAI, kAnthropic };

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
