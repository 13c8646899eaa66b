// Readings: a reply's other readings (the `candidates` setting) at about the
// cost of one.
//
// Each is checked on the host's connection as the first was (CheckSql:
// QueryPilot's rules and the host's authorizer; prepared there, never
// stepped), then:
//  - one whose program is the program of an earlier reading (ProgramOf, as
//    SQLite would run it: the same query written another way) is not run
//    again: it gives that reading's result;
//  - one that can run beside the host's connection (agent/sql/beside.h)
//    starts at once, on a connection of QueryPilot's own in a thread of its
//    own, while the host's connection runs the first reading (as many at
//    once as there are cores beside the one that runs it, the others in
//    turn, at the lowest priority: the first reading is not slowed); the
//    watchdog's sqlite3_interrupt stops it there at its share of
//    sql_timeout_ms, a single step that never ends included;
//  - the others wait for the candidates node, which runs them on the host's
//    connection where a step can be stopped there without ending the ask
//    (QueryPilot's progress handler, `progress_handler` 1), and otherwise
//    skips them with the reason.
// Once the first reading is done, the readings get RelativeBudgetMs() more
// at most, so that they add at most 40% of the first reading's time to a
// slow question; and at least kReadingsFloorMs from their start, so that
// those of a quick question end on a busy machine too.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/status.h"
#include "agent/sql/beside.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"

struct sqlite3;

namespace querypilot {

// The part of the first reading's time the other readings get past its end
// (and at least the `readings_wait_ms` setting from their start).
inline constexpr double kReadingsShareOfFirst = 0.4;

// How long, at most, the other readings may still take once the first
// reading is done, which took `first_ms`.
int RelativeBudgetMs(double first_ms);

// When the other readings, started at `launched`, are stopped if still
// running, the first reading (of `first_ms`) having ended at `first_done`:
// RelativeBudgetMs() past its end, or `floor_ms` (readings_wait_ms) past
// their start, whichever is later.
std::chrono::steady_clock::time_point ReadingsDeadline(
    std::chrono::steady_clock::time_point launched,
    std::chrono::steady_clock::time_point first_done, double first_ms, int floor_ms);

// One other reading of a reply, as launched.
struct OtherReading {
  std::string sql;
  // The critic's verdict on the host's connection; nothing runs unless Ok.
  Status checked;
  // Its result columns as the host's connection prepares them.
  std::vector<std::string> columns;
  // The reading (0: the first, k: the k-th other) SQLite runs the same
  // program for: this one is not run again.
  std::optional<size_t> same_as;
  // Running beside the host's connection, or null: why not.
  std::unique_ptr<ReadingBeside> beside;
  NotBeside not_beside = NotBeside::kNone;
};

// Checks each of `others` for `target` (the host's connection) and starts those that can run beside
// it (see above) under `limits` (each its own share of sql_timeout_ms, as they run at the same
// time). `first_sql` is the first reading's SQL, whose program the others are compared with.
// Readings running beside are stopped and their connections closed when the returned vector is
// destroyed.
std::vector<OtherReading> LaunchOtherReadings(const SqlTarget& target, const std::string& first_sql,
                                              std::vector<std::string> others,
                                              const ExecutionLimits& limits);

}  // namespace querypilot
