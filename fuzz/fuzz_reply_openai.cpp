// An OpenAI-compatible provider's reply: any status, any body.
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return querypilot::fuzz::FuzzProviderReply(data, size, querypilot::ParseOpenAIReply);
}
