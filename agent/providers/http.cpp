#include "agent/providers/http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "agent/base/text.h"
#include "agent/providers/url.h"

namespace querypilot {
namespace {

struct Transfer {
  std::string body;
  std::string retry_after;
  std::string location;
  size_t max_bytes = 0;
  bool too_large = false;
  const std::function<bool()>* cancelled = nullptr;
  bool was_cancelled = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (t->body.size() + bytes > t->max_bytes) {
    t->too_large = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  t->body.append(data, bytes);
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  auto value_of = [&](std::string_view name, std::string* out) {
    if (line.size() > name.size() && text::EqualsIgnoreCase(line.substr(0, name.size()), name)) {
      *out = text::Trim(line.substr(name.size()));
    }
  };
  value_of("retry-after:", &t->retry_after);
  value_of("location:", &t->location);
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->cancelled && *t->cancelled && (*t->cancelled)()) {
    t->was_cancelled = true;
    return 1;  // aborts the transfer
  }
  return 0;
}

// Runs one transfer. With a multi handle it waits at most kPollMs at a time
// and asks `cancelled` between waits, so a stop is seen within about that
// long even while the provider sends nothing (libcurl's own progress callback
// can slow to once a second when idle).
constexpr int kPollMs = 50;

CURLcode Perform(CURL* curl, CURLM* multi, const std::function<bool()>& cancelled,
                 bool* was_cancelled) {
  if (!multi) return curl_easy_perform(curl);
  if (curl_multi_add_handle(multi, curl) != CURLM_OK) return curl_easy_perform(curl);
  CURLcode result = CURLE_OK;
  bool finished = false;
  while (!finished) {
    int running = 0;
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == curl) {
        result = msg->data.result;
        finished = true;
      }
    }
    if (finished) break;
    if (*was_cancelled || (cancelled && cancelled())) {
      *was_cancelled = true;
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    if (curl_multi_poll(multi, nullptr, 0, kPollMs, nullptr) != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
  }
  curl_multi_remove_handle(multi, curl);
  return result;
}

}  // namespace

// Process-wide because libcurl's global state is: curl_global_init runs
// once per process, before the first transport of any connection.
void EnsureCurlInitialised() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CurlTransport::CurlTransport() {
  EnsureCurlInitialised();
  curl_ = curl_easy_init();
  multi_ = curl_multi_init();
}

CurlTransport::~CurlTransport() {
  if (multi_) curl_multi_cleanup(static_cast<CURLM*>(multi_));
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Result<HttpResponse> CurlTransport::Post(const HttpRequest& request,
                                         const std::function<bool()>& cancelled) {
  MutexLock lock(&mu_);
  CURL* curl = static_cast<CURL*>(curl_);
  if (!curl) return Status::Internal("libcurl could not create a handle");
  curl_easy_reset(curl);

  Transfer t;
  t.max_bytes = request.max_response_bytes;
  t.cancelled = &cancelled;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  // No "Expect: 100-continue": it costs a round trip (or a stall) per request.
  headers = curl_slist_append(headers, "Expect:");

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "querypilot");

  CURLcode rc = Perform(curl, static_cast<CURLM*>(multi_), cancelled, &t.was_cancelled);
  curl_slist_free_all(headers);
  std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  // The URL as errors show it: never its credentials (agent/providers/url.h).
  const std::string shown = RedactUrl(request.url);

  if (rc != CURLE_OK) {
    if (t.was_cancelled) return Status(ErrorKind::kInterrupted, "interrupted");
    if (t.too_large) {
      return Status(
          ErrorKind::kProviderBadResponse,
          fmt::format("the provider's reply exceeded {} bytes", request.max_response_bytes));
    }
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        return Status(ErrorKind::kProviderTimeout,
                      fmt::format("no complete reply from {} within {} ms ({})", shown,
                                  request.timeout_ms, detail));
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
        return Status(ErrorKind::kProviderConnection,
                      fmt::format("could not resolve the host of {}: {}", shown, detail));
      case CURLE_COULDNT_CONNECT:
        return Status(ErrorKind::kProviderConnection,
                      fmt::format("could not connect to {}: {}", shown, detail));
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CIPHER:
      case CURLE_SSL_CACERT_BADFILE:
        return Status(ErrorKind::kProviderConnection,
                      fmt::format("TLS failure talking to {}: {}", shown, detail));
      case CURLE_UNSUPPORTED_PROTOCOL:
        if (request.url.rfind("http://", 0) == 0 || request.url.rfind("https://", 0) == 0) {
          // An http(s) URL, but what came back was not HTTP.
          return Status(ErrorKind::kProviderBadResponse,
                        fmt::format("the reply from {} was not HTTP: {}", shown, detail));
        }
        [[fallthrough]];
      case CURLE_URL_MALFORMAT:
        return Status(ErrorKind::kNotConfigured,
                      fmt::format("base_url gives an unusable URL {}: {}", shown, detail));
      default:
        // Resets, empty replies, truncated bodies: transient, worth a retry.
        return Status(ErrorKind::kProviderUnavailable,
                      fmt::format("transfer from {} failed: {}", shown, detail));
    }
  }
  HttpResponse resp;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp.status);
  resp.body = std::move(t.body);
  resp.retry_after = std::move(t.retry_after);
  resp.location = std::move(t.location);
  return resp;
}

std::optional<int> RetryDelayMs(long status, std::string_view retry_after, int retry_index,
                                const RetryPolicy& policy) {
  if (retry_index >= policy.retries) return std::nullopt;
  bool retryable = status == 0 || status == 429 || status == 408 || status >= 500;
  if (!retryable) return std::nullopt;
  if (!retry_after.empty()) {
    char* end = nullptr;
    std::string ra(retry_after);
    double seconds = std::strtod(ra.c_str(), &end);
    if (end != ra.c_str() && seconds >= 0 && std::isfinite(seconds)) {
      double ms = seconds * 1000.0;
      if (ms > policy.max_wait_ms) return std::nullopt;  // the provider wants a long pause
      return static_cast<int>(ms);
    }
  }
  double ms = policy.base_ms * std::pow(2.0, retry_index);
  return static_cast<int>(std::min<double>(ms, policy.max_wait_ms));
}

Result<HttpResponse> PostWithRetries(HttpTransport& transport, const HttpRequest& request,
                                     const RetryPolicy& policy,
                                     const std::function<bool()>& cancelled,
                                     const std::function<void(int ms)>& sleep, int* tries) {
  int n = 0;
  for (int retry = 0;; ++retry) {
    ++n;
    Result<HttpResponse> r = transport.Post(request, cancelled);
    long status = 0;
    std::string_view retry_after;
    if (r.ok()) {
      status = r->status;
      retry_after = r->retry_after;
      bool retryable_status = status == 429 || status == 408 || status >= 500;
      if (!retryable_status) {
        if (tries) *tries = n;
        return r;
      }
    } else if (r.status().kind() != ErrorKind::kProviderUnavailable) {
      // Timeouts, refused connections, DNS and TLS failures are not retried:
      // another try would fail the same way, only later.
      if (tries) *tries = n;
      return r;
    }
    std::optional<int> delay = RetryDelayMs(status, retry_after, retry, policy);
    if (!delay || (cancelled && cancelled())) {
      if (tries) *tries = n;
      return r;
    }
    sleep(*delay);
  }
}

}  // namespace querypilot
