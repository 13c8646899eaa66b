#include "agent/sql/verified.h"

#include "agent/sql/critic.h"

namespace querypilot {

Result<std::unique_ptr<LiveQuery>> RunVerified(sqlite3* db, std::string_view sql,
                                               const ExecutionLimits& limits,
                                               const std::vector<std::string>& params,
                                               VerifiedStage* stage) {
  if (stage) *stage = VerifiedStage::kCheck;
  bool calls_outside = false;
  Result<Statement> stmt = CheckSql(db, sql, &calls_outside);
  if (!stmt.ok()) return stmt.status();
  for (size_t i = 0; i < params.size(); ++i) stmt->Bind(static_cast<int>(i + 1), params[i]);
  if (stage) *stage = VerifiedStage::kRun;
  ExecutionLimits held = limits;
  held.hold_query_only = held.hold_query_only || calls_outside;
  return LiveQuery::Start(db, std::move(stmt).value(), held);
}

}  // namespace querypilot
