// An Anthropic Messages provider's reply: any status, any body.
#include "agent/providers/wire.h"
#include "agent/text.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace querypilot;
  static const long kStatuses[] = {200, 200, 200, 201, 400, 401, 403, 404, 429, 500, 502, 503};
  if (size == 0) return 0;
  long status = kStatuses[data[0] % (sizeof(kStatuses) / sizeof(kStatuses[0]))];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  Result<ChatReply> r = ParseAnthropicReply(status, body);
  // Every error message can go straight into sqlite3_result_error.
  if (!r.ok() && !text::IsValidUtf8(r.status().message())) __builtin_trap();
  return 0;
}
