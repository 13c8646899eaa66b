// Error classification and hints from SQLite's error text.
#include "agent/base/text.h"
#include "agent/quality/analyse.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace querypilot;
  std::vector<std::string> p = fuzz::Split(data, size, 2);
  const std::string& message = p[0];
  ErrorKind kind = ClassifySqliteError(message);
  if (ErrorKindName(kind).empty() && kind != ErrorKind::kNone) __builtin_trap();
  std::string missing = MissingName(message);
  if (missing.size() > message.size()) __builtin_trap();
  for (ErrorKind k : {kind, ErrorKind::kColumnNotFound, ErrorKind::kTableNotFound,
                      ErrorKind::kAggregationError}) {
    ComputeHint(k, message, p[1], fuzz::ShopSchema());
  }
  ClosestNames(message, {"customers", "orders", "customer_id", "name"}, 5);
  return 0;
}
