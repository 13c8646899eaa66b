#include "agent/base/sqlite.h"

namespace querypilot {

HostSqlite Host() {
  HostSqlite h;
#ifdef QUERYPILOT_LOADABLE_EXTENSION
  h.progress_handler = sqlite3_api->progress_handler != nullptr;
  h.authorizer = sqlite3_api->set_authorizer != nullptr;
  h.column_metadata =
      sqlite3_api->column_table_name != nullptr && sqlite3_api->column_origin_name != nullptr;
  h.column_decltype = sqlite3_api->column_decltype != nullptr;
#endif
  h.threads = sqlite3_threadsafe() != 0;
  return h;
}

bool HostKeywordCheck(std::string_view word) {
  // sqlite3_keyword_check came with 3.24; a host table without it has none.
  if (sqlite3_libversion_number() < 3024000) return false;
#ifdef QUERYPILOT_LOADABLE_EXTENSION
  if (sqlite3_api->keyword_check == nullptr) return false;
#endif
  return sqlite3_keyword_check(word.data(), static_cast<int>(word.size())) != 0;
}

}  // namespace querypilot
