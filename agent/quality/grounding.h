// Grounding: checks the text literals of a query against the data.
//
// When a result is empty (or counts nothing), the usual cause is a literal
// that does not occur in its column: 'usa' for 'USA', 'human' for 'Human',
// a hero's name compared with the full-name column. GroundLiterals() looks
// each compared literal up in its column and, when it is absent, finds the
// values that do occur: the same text in another case or with spaces
// trimmed, values containing it, values within a few edits (from a bounded
// sample of distinct values, or, for a column the value index holds whole,
// from all its values sharing the literal's first letter); and, failing those, other text columns
// of the query's tables (then of the whole schema) that hold it.
//
// Every lookup is a read-only statement built here with quoted identifiers
// and the literal bound as a parameter, checked by the critic, and run with
// the executor's time budget; the whole check has one budget.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "agent/quality/reflect.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"

struct sqlite3;

namespace querypilot {

struct GroundingLimits {
  int budget_ms = 1000;      // for all lookups of one check together
  int sample_values = 5000;  // distinct values read for edit distance
  size_t max_suggestions = 5;
  size_t max_literals = 8;        // literals looked up per query
  size_t max_pivot_columns = 64;  // other columns searched for a lost literal
  // How a lookup past the budget stops: never by interrupting the connection.
  StopMethod stop = StopMethod::kBetweenSteps;
};

// One issue per literal that does not occur in its column:
//   value_not_found (critical): `values` holds the nearest real values;
//   value_elsewhere (critical): no near value, but the literal occurs in the
//     columns named in `values` ("table.column");
//   value_missing (warning): no trace of it anywhere searched, and nothing
//     near it: the empty answer may be right, so it is a note only;
//   null_absent (critical): `column IS NULL` on a column that has no NULL;
//     `values` holds values that look like "none" ('No Colour', 'Unknown'),
//     in the column or in the table its foreign key refers to.
// Literals that occur are not reported. LIKE patterns are looked up as
// patterns. Returns nothing when the budget runs out before a lookup.
// `values`, when given, supplies near values of a column with more distinct
// values than the sample holds, from every value the index has read.
std::vector<ReflectionIssue> GroundLiterals(const SqlTarget& target, const Schema& schema,
                                            std::string_view sql,
                                            const GroundingLimits& limits = {},
                                            const ValueLookup* values = nullptr);

}  // namespace querypilot
