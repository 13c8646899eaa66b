// ResultCheck: does a result that ran without error look like an answer to
// the question? Pure functions over the question, the SQL and the first rows.
//
// Each finding becomes a ReflectionIssue. "critical" findings are strong
// evidence of a wrong answer (measured on published systems' SQL over real
// databases, see eval/README.md) and make the agent try again; "warning"
// findings are recorded only.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "agent/quality/reflect.h"
#include "agent/knowledge/schema.h"
#include "agent/base/value.h"

namespace querypilot {

// What the question's wording says about the shape of its answer.
struct QuestionShape {
  bool superlative = false;  // "the most", "the oldest", "the dumbest", ...
  bool per_group = false;    // "each", "per", "every", "respectively", ...
  int top_n = 0;             // "top 5", "the three oldest": N > 1, else 0
  bool how_many = false;     // "how many ..."
  bool percentage = false;   // "percent", "percentage"
  // One item wanted: a superlative, not per group, not top N.
  bool single() const { return superlative && !per_group && top_n == 0; }
};

QuestionShape ReadQuestionShape(std::string_view question);

// The rows a check may look at.
struct ResultView {
  const std::vector<std::string>* columns = nullptr;
  const std::deque<Row>* rows = nullptr;  // the first rows; all of them when complete
  bool complete = false;
  // Optional: each column's {table, column} origin ({"", ""} for an
  // expression), and the schema, for the checks that need them.
  const std::vector<std::pair<std::string, std::string>>* origins = nullptr;
  const Schema* schema = nullptr;
};

// Findings about the result of `sql` for `question`, in a fixed order:
//   critical: empty_result when the question asks for the top item(s) (a top
//             item cannot be nothing); zero_count (a lone COUNT that is 0);
//             all_null (a column that is NULL in every row); too_many_rows
//             (one item asked, several returned; or more than the N asked
//             for); percentage_bounds (a lone percentage below 0, above 100,
//             or exactly 0 or 100); join_on_keys (a join that equates the
//             primary keys of two tables that no foreign key links);
//             foreign_key_ids (a column returns a foreign key's ids, and the
//             question does not ask for ids);
//   warning:  empty_result otherwise, duplicate_rows (identical rows without
//             DISTINCT or GROUP BY; a join may have multiplied them).
std::vector<ReflectionIssue> CheckResult(std::string_view question, std::string_view sql,
                                         const ResultView& result);

// True when the result gives value grounding a reason to look at the SQL's
// literals: no rows, or a lone COUNT of 0, or a column that is all NULL.
bool ResultSuggestsMissingValue(const std::vector<ReflectionIssue>& issues);

}  // namespace querypilot
