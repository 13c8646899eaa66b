// Settings from SQL (agent_config) and from the environment, Retry-After
// headers, and the question's shape: every option QueryPilot parses.
#include <map>

#include "agent/base/text.h"
#include "agent/config.h"
#include "agent/providers/http.h"
#include "agent/quality/result_check.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace querypilot;
  std::vector<std::string> p = fuzz::Split(data, size, 4);
  Config config;
  Status set = config.Set(p[0], p[1]);
  if (!set.ok() && !text::IsValidUtf8(set.message()) && text::IsValidUtf8(p[0]) &&
      text::IsValidUtf8(p[1])) {
    __builtin_trap();
  }
  auto getenv_none = [](const char*) -> const char* { return nullptr; };
  config.Get(p[0], getenv_none);
  config.ToJson(getenv_none);
  // The same value from every environment variable QueryPilot reads, and
  // one more variable named by the input. Each unusable one is an error that
  // names its variable, in valid UTF-8.
  std::vector<EnvironmentError> errors;
  const std::string value = p[1];
  std::vector<std::string> names;
  if (text::IsValidUtf8(p[0])) names.push_back("QUERYPILOT_" + p[0]);
  Config::FromEnvironment([&](const char*) { return value.c_str(); }, names, &errors);
  for (const EnvironmentError& e : errors) {
    if (e.variable.empty() || e.message.find(e.variable) == std::string::npos) __builtin_trap();
    if (text::IsValidUtf8(value) && !text::IsValidUtf8(e.message)) __builtin_trap();
  }
  RetryPolicy policy;
  for (long status : {0L, 429L, 503L}) {
    std::optional<int> delay = RetryDelayMs(status, p[2], 0, policy);
    if (delay && (*delay < 0 || *delay > policy.max_wait_ms)) __builtin_trap();
  }
  ReadQuestionShape(p[3]);
  return 0;
}
