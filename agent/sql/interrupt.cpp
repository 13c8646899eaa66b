#include "agent/sql/interrupt.h"

#include "agent/base/sqlite.h"

namespace querypilot {

bool InterruptProbe::Interrupted() noexcept {
  if (interrupted_) return true;
  if (!prepared_) {
    prepared_ = true;
    try {
      int code = SQLITE_OK;
      Result<Statement> stmt = Statement::Prepare(db_, "SELECT 1", nullptr, &code);
      if (stmt.ok()) probe_ = std::move(stmt).value();
      // The parser checks the flag too.
      interrupted_ = (code & 0xff) == SQLITE_INTERRUPT;
    } catch (...) {
      return false;
    }
    if (interrupted_) return true;
  }
  if (!probe_) return false;
  int rc = probe_.Step();
  sqlite3_reset(probe_.get());
  interrupted_ = rc == SQLITE_INTERRUPT;
  return interrupted_;
}

bool ConnectionInterrupted(sqlite3* db) noexcept {
  return InterruptProbe(db).Interrupted();
}

}  // namespace querypilot
