// How QueryPilot's test models tell a review of an answer (the `review`
// setting, on by default) from the question's other calls, and the record
// they accept an answer with when no review reply is scripted: the unit
// tests' clients, the concurrency test's server and querypilot-scripted-llm.
#pragma once

#include <string_view>

namespace querypilot::test_models {

// A review's system message names the reflection record's field.
inline bool IsReviewSystemText(std::string_view system) {
  return system.find("\"is_acceptable\"") != std::string_view::npos;
}

inline constexpr std::string_view kAcceptingReview =
    R"({"is_acceptable": true, "should_refine": false, "issues": [], "reasoning": "The result answers the question."})";

}  // namespace querypilot::test_models
