// Performance: why an answer was slow, from SQLite's own plan, with no model
// call, and the index that would help.
//
// Before a query runs, its plan is read (EXPLAIN QUERY PLAN: one prepare and
// a few rows, no data read). After it ran, or when it ran past its budget, a
// table the plan reads in full ("SCAN t", no index), or reads in full to
// build an automatic index at every run (the inner side of a join: "SEARCH
// t USING AUTOMATIC COVERING INDEX (email=?)"), is a slow scan when:
//   - the query filters it on a column (compared with a literal: =, IN, <, >,
//     <=, >=, BETWEEN) or joins it on a column (an equality with another
//     table's column), and
//   - no index of the table starts with that column (nor is it the rowid),
//     and
//   - the table holds at least `min_rows` rows (sqlite_stat1 when ANALYZE has
//     run, else its largest rowid, else a count that stops at `min_rows`).
// A scan with no such column reads the table because the question needs all
// of it ("list every order"): no index would help, and none is proposed. So
// are small tables. Every slow scan of a plan is named at once, so a join
// that no index serves on either side gets both indexes in one piece of
// advice, not one per round. A slow scan is a warning, never a reason to retry, and
// QueryPilot never runs the CREATE INDEX it proposes: the database is the
// user's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/quality/reflect.h"
#include "agent/sql/check_connection.h"

struct sqlite3;

namespace querypilot {

// The detail lines of EXPLAIN QUERY PLAN for `sql` ("SCAN o", "SEARCH c USING
// INTEGER PRIMARY KEY (rowid=?)"), or none when it cannot be read. The SQL is
// checked by the critic as generated SQL is; nothing runs.
std::vector<std::string> ReadQueryPlan(const SqlTarget& target, std::string_view sql);

// A table read in full, and the columns the query filters or joins it on.
struct ScanCandidate {
  const TableInfo* table = nullptr;
  std::vector<std::string> columns;  // filter columns first, then join columns
};

// Pure: the full scans in `plan` of schema tables (resolved through the
// query's aliases) that the query filters or joins on some column.
std::vector<ScanCandidate> ScanCandidates(const std::vector<std::string>& plan,
                                          std::string_view sql, const Schema& schema);

struct PerformanceLimits {
  int64_t min_rows = 100000;  // a smaller table is never a slow scan
  int budget_ms = 200;        // for the lookups (sizes, indexes) of one check
};

struct SlowScan {
  std::string table;
  std::string column;           // the column an index would serve
  int64_t rows = 0;             // the table's size, or at least this many
  bool rows_estimated = false;  // from sqlite_stat1 or the largest rowid
  std::string create_index;     // the statement to paste
};

// The slow scans of a query whose plan is `plan` (see the top of this file).
std::vector<SlowScan> FindSlowScans(const SqlTarget& target, const std::vector<std::string>& plan,
                                    std::string_view sql, const Schema& schema,
                                    const PerformanceLimits& limits = {});

// CREATE INDEX IF NOT EXISTS "idx_<table>_<column>" ON "<table>"("<column>");
std::string CreateIndexStatement(const std::string& table, const std::string& column);

// The note for one slow scan (Finding::kSlowScan), naming the table, the
// column, its size and `exec_ms`, with the CREATE INDEX.
ReflectionIssue SlowScanIssue(const SlowScan& scan, double exec_ms);

// One sentence for a query stopped by its time budget: what it scans and the
// index that would help; "" when the plan shows no slow scan.
std::string SlowScanSentence(const std::vector<SlowScan>& scans);

}  // namespace querypilot
