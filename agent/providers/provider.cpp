#include "agent/providers/provider.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "agent/providers/url.h"
#include "agent/providers/wire.h"

namespace querypilot {

namespace {

// OpenAI's base URLs include /v1 (OPENAI_BASE_URL does too); Anthropic's do not.
constexpr ProviderSpec kProviders[] = {
    {ProviderKind::kOpenAI, "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL",
     "https://api.openai.com/v1", "/chat/completions", OpenAIHeaders, OpenAIRequestBody,
     ParseOpenAIReply},
    {ProviderKind::kAnthropic, "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
     "https://api.anthropic.com", "/v1/messages", AnthropicHeaders, AnthropicRequestBody,
     ParseAnthropicReply},
};

}  // namespace

std::span<const ProviderSpec> Providers() {
  return kProviders;
}

const ProviderSpec& ProviderSpecOf(ProviderKind kind) {
  for (const ProviderSpec& p : kProviders) {
    if (p.kind == kind) return p;
  }
  return kProviders[0];
}

const ProviderSpec* FindProvider(std::string_view name) {
  for (const ProviderSpec& p : kProviders) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string_view ProviderName(ProviderKind kind) {
  return ProviderSpecOf(kind).name;
}

ProviderClient::ProviderClient(ResolvedProvider provider, const ProviderOptions& options,
                               HttpTransport* transport, std::function<bool()> cancelled)
    : provider_(std::move(provider)),
      retry_(options.retry),
      connect_timeout_ms_(options.connect_timeout_ms),
      request_timeout_ms_(options.request_timeout_ms),
      transport_(transport),
      cancelled_(std::move(cancelled)) {
  secrets_ = UrlSecrets(provider_.endpoint);
  if (!provider_.api_key.empty()) secrets_.push_back(provider_.api_key);
}

std::string ProviderClient::Scrubbed(std::string message) const {
  // An error is only shown: a short secret goes too.
  return RedactSecrets(std::move(message), secrets_, 4);
}

Result<ChatReply> ProviderClient::Complete(const ChatRequest& request) {
  const ProviderSpec& wire = ProviderSpecOf(provider_.kind);
  HttpRequest http;
  http.url = provider_.endpoint;
  http.headers = wire.headers(provider_.api_key);
  http.body = wire.request_body(request);
  http.connect_timeout_ms = connect_timeout_ms_;
  http.timeout_ms = request_timeout_ms_;

  auto sleep = [this](int ms) {
    // Sleep in slices so that cancellation is noticed promptly.
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (cancelled_ && cancelled_()) return;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
    }
  };
  auto start = std::chrono::steady_clock::now();
  int tries = 0;
  Result<HttpResponse> resp = PostWithRetries(*transport_, http, retry_, cancelled_, sleep, &tries);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!resp.ok()) {
    return Status(resp.status().kind(), Scrubbed(resp.status().message()));
  }
  if (resp->status >= 300 && resp->status < 400) {
    return Status(
        ErrorKind::kProviderRequest,
        Scrubbed(fmt::format("the provider answered HTTP {} and redirected to {}; QueryPilot "
                             "never follows redirects: set base_url to the address you mean",
                             resp->status,
                             resp->location.empty() ? "nowhere" : RedactUrl(resp->location))));
  }
  Result<ChatReply> reply = wire.parse_reply(resp->status, resp->body);
  if (!reply.ok()) {
    std::string msg = reply.status().message();
    if (tries > 1) msg += " (after " + std::to_string(tries) + " tries)";
    return Status(reply.status().kind(), Scrubbed(std::move(msg)));
  }
  // A model that echoes a credential (the key, a password or key in
  // base_url) never hands it on: the reply is kept, shown and sent back in
  // the next prompt. Only secrets of 8 bytes or more are replaced, so that
  // ordinary text is not rewritten.
  reply->text = RedactSecrets(std::move(reply->text), secrets_, 8);
  reply->http_tries = tries;
  reply->ms = ms;
  return reply;
}

}  // namespace querypilot
