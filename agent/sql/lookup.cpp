#include "agent/sql/lookup.h"

#include "agent/base/sqlite.h"
#include "agent/sql/executor.h"
#include "agent/sql/verified.h"

namespace querypilot {

using Clock = std::chrono::steady_clock;

BoundedLookup::BoundedLookup(SqlTarget target, int budget_ms, StopMethod stop)
    : target_(std::move(target)),
      deadline_(Clock::now() + std::chrono::milliseconds(budget_ms)),
      stop_(stop == StopMethod::kWatchdog ? StopMethod::kBetweenSteps : stop) {}

bool BoundedLookup::expired() const {
  return Clock::now() >= deadline_;
}

std::vector<Row> BoundedLookup::Rows(const std::string& sql, const std::vector<std::string>& params,
                                     size_t max_rows) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  if (left.count() <= 0) return {};
  ExecutionLimits limits;
  limits.timeout_ms = static_cast<int>(left.count());
  limits.max_rows = 0;
  limits.probe_rows = max_rows;
  limits.stop = stop_;
  auto q = RunVerified(target_, sql, limits, params);
  if (!q.ok()) return {};
  const auto& rows = (*q)->buffered_rows();
  return std::vector<Row>(rows.begin(), rows.end());
}

std::vector<std::string> BoundedLookup::Texts(const std::string& sql,
                                              const std::vector<std::string>& params,
                                              size_t max_rows) {
  std::vector<std::string> out;
  for (Row& r : Rows(sql, params, max_rows)) {
    if (!r.empty()) {
      if (auto* s = std::get_if<std::string>(&r[0])) out.push_back(std::move(*s));
    }
  }
  return out;
}

}  // namespace querypilot
