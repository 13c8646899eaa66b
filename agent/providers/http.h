// HTTP for the providers: a libcurl POST, and the retry policy around it.
//
// The policy is pure (RetryDelayMs) and the loop takes its transport and its
// sleep as parameters, so both are tested without a network or a clock.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"

namespace querypilot {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  int connect_timeout_ms = 5000;
  int timeout_ms = 60000;               // the whole try, connect included
  size_t max_response_bytes = 8 << 20;  // a larger reply is an error, not a crash
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
  std::string location;     // the Location header, if any (never followed)
};

// Something that performs one HTTP POST.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // A response of any status, or a provider error for transport failures:
  // kProviderUnavailable for transient ones worth a retry (reset, empty or
  // cut reply), kProviderConnection (refused, DNS, TLS), kProviderTimeout,
  // kProviderBadResponse for an oversized body, kInterrupted when
  // `cancelled`, polled during the transfer, returned true.
  virtual Result<HttpResponse> Post(const HttpRequest& request,
                                    const std::function<bool()>& cancelled) = 0;
};

// libcurl, one reusable easy handle driven by a multi handle (keeps
// connections alive between calls, and polls `cancelled` every 50 ms while
// waiting). Redirects are never followed; only http and https are allowed.
class CurlTransport : public HttpTransport {
 public:
  CurlTransport();
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;
  Result<HttpResponse> Post(const HttpRequest& request,
                            const std::function<bool()>& cancelled) override;

 private:
  Mutex mu_;  // one transfer at a time on the handle
  void* curl_ GUARDED_BY(mu_) = nullptr;
  void* multi_ GUARDED_BY(mu_) = nullptr;
};

// Initialises libcurl once per process (thread-safe; never cleaned up, as the
// host may unload nothing and other code in the process may use libcurl).
void EnsureCurlInitialised();

struct RetryPolicy {
  int retries = 2;          // extra tries after the first
  int base_ms = 500;        // backoff before retry 1; doubles each retry
  int max_wait_ms = 20000;  // a longer Retry-After ends the retries
};

// Whether to retry after a try that got `status` (0 = a transient transport
// failure), and how long to wait: Retry-After (seconds) when given, else
// exponential backoff. nullopt = do not retry.
std::optional<int> RetryDelayMs(long status, std::string_view retry_after, int retry_index,
                                const RetryPolicy& policy);

// POSTs with retries. `tries` receives the number of HTTP requests made.
// The result is the last response (any status) or the last transport error;
// the caller turns statuses into errors.
Result<HttpResponse> PostWithRetries(HttpTransport& transport, const HttpRequest& request,
                                     const RetryPolicy& policy,
                                     const std::function<bool()>& cancelled,
                                     const std::function<void(int ms)>& sleep, int* tries);

}  // namespace querypilot
