// SQL extraction from a model's reply: fences, JSON, <think>, bare SQL; and
// the normalising, tokenising and diffing that follow it.
#include "agent/prompt/extract.h"
#include "agent/sql/sqldiff.h"
#include "agent/sql/sqltokens.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string reply(reinterpret_cast<const char*>(data), size);
  querypilot::Result<std::string> sql = querypilot::ExtractSql(reply);
  if (!sql.ok()) return 0;
  // What came out is a part of what went in, and never more.
  if (sql->size() > reply.size()) __builtin_trap();
  querypilot::NormaliseSql(*sql);
  querypilot::TokenizeSql(*sql);
  querypilot::DiffSql("SELECT name FROM customers WHERE id = 1", *sql);
  return 0;
}
