// A token-level diff between two attempts' SQL, for agent_attempts.diff.
#pragma once

#include <string>
#include <string_view>

namespace querypilot {

// Each changed run of tokens, in order, separated by "; ":
//   "'id' -> 'product_id'"       a replacement
//   "+ 'GROUP BY c.name'"        an insertion
//   "- 'DISTINCT'"               a deletion
// A change made at several places (a column renamed in SELECT and in GROUP
// BY) is listed once, at its first place, with their number:
//   "'category_name' -> 'category' (2 places)"
// "" when the two are the same token for token. Comments, white space and
// keyword case do not count as changes.
std::string DiffSql(std::string_view before, std::string_view after);

}  // namespace querypilot
