// What the agent reads out of the model's SQL against the schema: the tables
// it uses, the literals it compares, its joins, and the hint for an error.
#include "agent/quality/analyse.h"
#include "agent/sql/sqlrefs.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace querypilot;
  std::vector<std::string> p = fuzz::Split(data, size, 2);
  const Schema& schema = fuzz::ShopSchema();
  const std::string& sql = p[0];
  FindQueryTables(sql, schema);
  FindLiteralComparisons(sql, schema);
  FindColumnEqualities(sql, schema);
  ErrorKind kind = ClassifySqliteError(p[1]);
  ComputeHint(kind, p[1], sql, schema);
  return 0;
}
