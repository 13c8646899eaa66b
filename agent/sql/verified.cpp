#include "agent/sql/verified.h"

#include "agent/sql/critic.h"

namespace querypilot {

Result<std::unique_ptr<LiveQuery>> RunVerified(const SqlTarget& target, std::string_view sql,
                                               const ExecutionLimits& limits,
                                               const std::vector<std::string>& params,
                                               VerifiedStage* stage) {
  if (stage) *stage = VerifiedStage::kCheck;
  Result<Statement> stmt = CheckSql(target, sql);
  if (!stmt.ok()) return stmt.status();
  for (size_t i = 0; i < params.size(); ++i) stmt->Bind(static_cast<int>(i + 1), params[i]);
  if (stage) *stage = VerifiedStage::kRun;
  // Every step under PRAGMA query_only (agent/sql/executor.h).
  return LiveQuery::Start(target, std::move(stmt).value(), limits);
}

Result<std::unique_ptr<LiveQuery>> RunAgainVerified(const SqlTarget& target, std::string_view sql,
                                                    const ExecutionLimits& limits,
                                                    std::string_view refused,
                                                    std::string_view failed) {
  VerifiedStage stage = VerifiedStage::kCheck;
  auto live = RunVerified(target, sql, limits, {}, &stage);
  if (live.ok()) return live;
  std::string message(stage == VerifiedStage::kCheck ? refused : failed);
  message += live.status().message();
  return Status(live.status().kind(), std::move(message));
}

}  // namespace querypilot
