#include "agent/providers/provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <thread>

#include "agent/providers/url.h"
#include "agent/providers/wire.h"

namespace querypilot {

namespace {

// OpenAI's base URLs include /v1 (OPENAI_BASE_URL does too); Anthropic's do not.
constexpr ProviderSpec kProviders[] = {
    {ProviderKind::kOpenAI, "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL",
     "https://api.openai.com/v1", "/chat/completions", "gpt-", OpenAIHeaders, OpenAIRequestBody,
     ParseOpenAIReply, true},
    {ProviderKind::kAnthropic, "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
     "https://api.anthropic.com", "/v1/messages", "claude-", AnthropicHeaders, AnthropicRequestBody,
     ParseAnthropicReply, false},
};

// `bytes` in base64 (RFC 4648, padded): how HTTP basic authentication sends
// a user and password.
std::string Base64(std::string_view bytes) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) {
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) {
      out.push_back(k <= n ? kDigits[(v >> (18 - 6 * k)) & 63] : '=');
    }
  }
  return out;
}

// A userinfo as curl sends it: each %XX read as its byte ('+' stays '+').
std::string UserinfoDecoded(std::string_view userinfo) {
  std::string out;
  for (size_t i = 0; i < userinfo.size(); ++i) {
    if (userinfo[i] == '%' && i + 2 < userinfo.size() &&
        std::isxdigit(static_cast<unsigned char>(userinfo[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(userinfo[i + 2]))) {
      out.push_back(
          static_cast<char>(std::stoi(std::string(userinfo.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(userinfo[i]);
    }
  }
  return out;
}

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

Secrets ProviderSecrets(const ResolvedProvider& provider) {
  Secrets secrets(UrlSecrets(provider.endpoint));
  secrets.Add(provider.api_key);
  const UrlParts url = SplitUrl(provider.endpoint);
  if (url.has_userinfo && !url.userinfo.empty()) {
    // curl sends the userinfo decoded, as "user:password" in base64.
    const std::string plain = UserinfoDecoded(url.userinfo);
    secrets.Add(Base64(plain.find(':') == std::string::npos ? plain + ":" : plain));
  }
  return secrets;
}

ProviderClient::ProviderClient(ResolvedProvider provider, const ProviderOptions& options,
                               HttpTransport* transport, std::function<bool()> cancelled,
                               TransportFactory more_transports)
    : provider_(std::move(provider)),
      retry_(options.retry),
      connect_timeout_ms_(options.connect_timeout_ms),
      request_timeout_ms_(options.request_timeout_ms),
      transport_(transport),
      cancelled_(std::move(cancelled)),
      more_transports_(std::move(more_transports)) {
  if (!more_transports_) more_transports_ = [] { return std::make_unique<CurlTransport>(); };
  secrets_ = ProviderSecrets(provider_);
}

std::string ProviderClient::Scrubbed(std::string message) const {
  // An error is only shown: a short secret goes too.
  return secrets_.Scrub(message);
}

Result<ChatReply> ProviderClient::Complete(const ChatRequest& request) {
  const ProviderSpec& wire = ProviderSpecOf(provider_.kind);
  const int wanted = std::clamp(request.choices, 1, kMaxChoices);
  if (wanted == 1) return CallOnce(*transport_, request, cancelled_);
  const auto start = std::chrono::steady_clock::now();
  // Further calls never poll `cancelled_` (it may read the host's
  // connection): this thread does, and tells them through `stop`.
  std::atomic<bool> stop{false};
  auto polled = [&] {
    if (stop.load()) return true;
    if (cancelled_ && cancelled_()) stop.store(true);
    return stop.load();
  };
  ChatRequest one = request;
  one.choices = 1;
  std::vector<std::future<Result<ChatReply>>> further;
  auto launch = [&](int n) {
    for (int i = 0; i < n; ++i) {
      further.push_back(std::async(std::launch::async, [this, &one, &stop] {
        std::unique_ptr<HttpTransport> transport = more_transports_();
        return CallOnce(*transport, one, [&stop] { return stop.load(); });
      }));
    }
  };
  // Joins every further call; what they returned goes into `reply`.
  auto gather = [&](ChatReply* reply) {
    for (auto& f : further) {
      while (f.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) polled();
      std::optional<Result<ChatReply>> got;
      try {
        got.emplace(f.get());
      } catch (...) {
        stop.store(true);  // the other calls end soon; their futures wait for them
        throw;
      }
      Result<ChatReply>& r = *got;
      if (!reply) continue;
      ++reply->calls;
      if (!r.ok()) continue;  // one choice fewer
      reply->http_tries += r->http_tries;
      AddTokens(&reply->prompt_tokens, r->prompt_tokens);
      AddTokens(&reply->completion_tokens, r->completion_tokens);
      if (static_cast<int>(reply->more.size()) + 1 < wanted) reply->more.push_back(r->text);
    }
    further.clear();
  };
  if (!wire.takes_n) launch(wanted - 1);
  Result<ChatReply> reply = CallOnce(*transport_, wire.takes_n ? request : one, polled);
  if (!reply.ok()) {
    stop.store(true);
    gather(nullptr);
    return reply;
  }
  if (static_cast<int>(reply->more.size()) + 1 > wanted) reply->more.resize(wanted - 1);
  if (wire.takes_n) launch(wanted - 1 - static_cast<int>(reply->more.size()));
  gather(&reply.value());
  reply->ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return reply;
}

Result<ChatReply> ProviderClient::CallOnce(HttpTransport& transport, const ChatRequest& request,
                                           const std::function<bool()>& cancelled) const {
  const ProviderSpec& wire = ProviderSpecOf(provider_.kind);
  HttpRequest http;
  http.url = provider_.endpoint;
  http.headers = wire.headers(provider_.api_key);
  http.body = wire.request_body(request);
  http.connect_timeout_ms = connect_timeout_ms_;
  http.timeout_ms = request_timeout_ms_;

  auto sleep = [&cancelled](int ms) {
    // Sleep in slices so that cancellation is noticed promptly.
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (cancelled && cancelled()) return;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
    }
  };
  auto start = std::chrono::steady_clock::now();
  int tries = 0;
  Result<HttpResponse> resp = PostWithRetries(transport, http, retry_, cancelled, sleep, &tries);
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
    // A wrong base URL answers 404: the URL asked says which, and a missing
    // /v1 is named.
    if (resp->status == 404) msg += NotFoundNote(provider_.endpoint, wire.path);
    if (tries > 1) msg += " (after " + std::to_string(tries) + " tries)";
    return Status(reply.status().kind(), Scrubbed(std::move(msg)));
  }
  // A model that echoes a credential (the key, a password or key in
  // base_url) never hands a long one on: the reply is sent back in the next
  // prompt. Shorter ones are taken out where the reply is kept or shown
  // (Secrets::Scrub), so that the SQL read from it runs as written.
  reply->text = secrets_.ScrubLong(reply->text);
  for (std::string& text : reply->more) text = secrets_.ScrubLong(text);
  reply->http_tries = tries;
  reply->ms = ms;
  return reply;
}

}  // namespace querypilot
