// ProviderClient: an LlmClient that speaks to a real provider over HTTP.
#pragma once

#include <functional>

#include "agent/config.h"
#include "agent/llm.h"
#include "agent/providers/http.h"

namespace querypilot {

class ProviderClient : public LlmClient {
 public:
  // `transport` is not owned and must outlive this client. `cancelled` is
  // polled during transfers and between retries.
  ProviderClient(ResolvedProvider provider, const Config& config, HttpTransport* transport,
                 std::function<bool()> cancelled = {});

  Result<ChatReply> Complete(const ChatRequest& request) override;

 private:
  ResolvedProvider provider_;
  RetryPolicy retry_;
  int connect_timeout_ms_;
  int request_timeout_ms_;
  HttpTransport* transport_;
  std::function<bool()> cancelled_;
};

}  // namespace querypilot
