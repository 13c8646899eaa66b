#include "agent/quality/readings.h"

#include <algorithm>
#include <utility>

#include "agent/sql/critic.h"
#include "agent/sql/statement.h"

namespace querypilot {

int RelativeBudgetMs(double first_ms) {
  return static_cast<int>(first_ms * kReadingsShareOfFirst);
}

std::chrono::steady_clock::time_point ReadingsDeadline(
    std::chrono::steady_clock::time_point launched,
    std::chrono::steady_clock::time_point first_done, double first_ms, int floor_ms) {
  return std::max(launched + std::chrono::milliseconds(floor_ms),
                  first_done + std::chrono::milliseconds(RelativeBudgetMs(first_ms)));
}

std::vector<OtherReading> LaunchOtherReadings(const SqlTarget& target, const std::string& first_sql,
                                              std::vector<std::string> others,
                                              const ExecutionLimits& limits) {
  sqlite3* host = target.db();
  std::vector<OtherReading> out;
  // The program of each reading so far (none where it did not prepare).
  std::vector<std::optional<std::string>> programs;
  if (Result<std::string> first = ProgramOf(host, first_sql); first.ok()) {
    programs.emplace_back(std::move(first).value());
  } else {
    programs.emplace_back();
  }
  std::optional<FilesBeside> files;  // read once, when a reading may run beside
  std::shared_ptr<BesideTurns> turns = BesideTurns::ForThisMachine();
  for (std::string& sql : others) {
    OtherReading r;
    r.sql = std::move(sql);
    Result<Statement> checked = CheckSql(target, r.sql);
    std::optional<std::string> program;
    if (!checked.ok()) {
      r.checked = checked.status();
    } else {
      for (int i = 0; i < checked->ColumnCount(); ++i) r.columns.push_back(checked->ColumnName(i));
      checked = Statement();  // never stepped on the host's connection
      if (Result<std::string> p = ProgramOf(host, r.sql); p.ok()) program = std::move(p).value();
    }
    if (program) {
      auto same = std::find(programs.begin(), programs.end(), program);
      if (same != programs.end()) r.same_as = static_cast<size_t>(same - programs.begin());
    }
    programs.push_back(program);
    if (r.checked.ok() && !r.same_as) {
      if (program && CallsHostFunction(host, *program)) {
        r.not_beside = NotBeside::kHostCode;
      } else if (!program) {
        r.not_beside = NotBeside::kOtherProgram;
      } else {
        if (!files) files = FindFilesBeside(host);
        r.beside = ReadingBeside::Open(*files, r.sql, *program, &r.not_beside);
        if (r.beside) r.beside->Start(limits, turns);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace querypilot
