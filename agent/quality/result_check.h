// ResultCheck: does a result that ran without error look like an answer to
// the question? Pure functions over the question, the SQL and the first rows.
//
// Each finding becomes a ReflectionIssue of a Finding; its tier, strategy and
// correction text are its row's (findings.cpp). Critical findings are strong
// evidence of a wrong answer (measured on published systems' SQL over real
// databases, see eval/README.md) and make the agent try again; notes are
// recorded only.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/value.h"
#include "agent/knowledge/schema.h"
#include "agent/quality/reflect.h"

namespace querypilot {

// What the question's wording says about the shape of its answer.
struct QuestionShape {
  bool superlative = false;  // "the most", "the oldest", "the dumbest", ...
  bool per_group = false;    // "each", "per", "every", "respectively", ...
  int top_n = 0;             // "top 5", "the three oldest": N > 1, else 0
  bool how_many = false;     // "how many ..."
  bool percentage = false;   // "percent", "percentage"
  // Every row wanted in an order: "sorted by", "ranked", "in order of",
  // "descending", "from youngest to oldest" (a superlative at each end),
  // "oldest first". Its superlatives name the order, not one item.
  bool ordering = false;
  // One item wanted: a superlative, not per group, not top N, not an ordering.
  bool single() const { return superlative && !per_group && top_n == 0 && !ordering; }
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
//   critical: join_on_keys (a join that equates the primary keys of two
//             tables that no foreign key links); hint_column_unused (a
//             "Hint:" line says a phrase refers to one column, and the SQL
//             never reads it); percentage_bounds (a lone percentage below 0,
//             above 100, or exactly 0 or 100); foreign_key_ids (a column
//             returns a foreign key's ids, the question asks for no ids, the
//             column's own words are not all in the question, "country codes"
//             asks for CountryCode, and the question names, word for word, a
//             text column of the referenced table that the SQL never reads);
//   notes:    empty_result, zero_count (a lone COUNT that is 0), all_null (a
//             column that is NULL in every row): an empty, zero or NULL
//             result is an answer when its filters are sound, so value
//             grounding (grounding.h) decides, and sends it back only when a
//             compared value does not occur; too_many_rows (one item asked,
//             several returned; or more than the N asked for: a reading of
//             the question's words); ties (as many rows as tie for the top of
//             `= (SELECT MAX(...))` over the rows the outer query filters);
//             foreign_key_ids when the question names nothing the ids stand
//             for; duplicate_rows (identical rows without DISTINCT or GROUP
//             BY; a join may have multiplied them).
std::vector<ReflectionIssue> CheckResult(std::string_view question, std::string_view sql,
                                         const ResultView& result);

// True when the result gives value grounding a reason to look at the SQL's
// literals: no rows, or a lone COUNT of 0, or a column that is all NULL.
bool ResultSuggestsMissingValue(const std::vector<ReflectionIssue>& issues);

}  // namespace querypilot
