// The review's figures (the `review` setting) over replayed answers whose
// rightness is known: per data set and per half of its questions (the
// parity of the CRC-32 of the question's id, as eval/halves.py splits), for
// the runs with review on and those with it off.
//
// Over questions whose gold SQL ran, by the first answer (attempt 1's SQL,
// the replayed prediction) when it ran without error:
//   wrong     the first answer's result differs from gold's
//   caught    ... and the answer returned is right, or its confidence is
//             below 50 (the user is told to doubt it)
//   fixed     ... and the answer returned is right
//   right     the first answer is right
//   flagged   ... and the answer returned has a confidence below 50
//   replaced  ... and the answer returned is wrong (the target is none)
// Calls and tokens are per question asked (every model call of the run,
// the review's included); tokens are the replay's estimates. Calibration:
// per confidence band, the answers returned and the share right.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "eval/runner.h"

namespace querypilot::eval {

struct ReviewGroup {
  size_t questions = 0;  // asked and scored
  size_t first_ran = 0;  // the first answer ran without error
  size_t wrong = 0, caught = 0, fixed = 0;
  size_t right = 0, flagged = 0, replaced = 0;
  size_t llm_calls = 0;
  int64_t tokens = 0;
  size_t review_requests = 0, review_missing = 0;
  std::map<std::string, size_t> outcomes;  // agent_runs.review -> answers
  struct Band {
    size_t n = 0, right = 0;
  };
  std::map<std::string, Band> bands;  // by ReviewBands()' name
};

// "0-24", "25-49", "50-74", "75-89", "90-100": split at 50, where the
// review's doubt puts an answer below.
const std::vector<std::pair<std::string, int>>& ReviewBands();

struct ReviewReport {
  // mode ("review on" / "review off") -> group ("spider_dev6 A", ...,
  // "spider_dev6", "all") -> figures.
  std::map<std::string, std::map<std::string, ReviewGroup>> modes;
};

// A run is "review on" when its last `review` setting is not "0", else
// "review off".
ReviewReport BuildReviewReport(const std::vector<RunOutput>& runs);

void PrintReviewReport(std::ostream& out, const ReviewReport& report);

nlohmann::ordered_json ReviewReportJson(const ReviewReport& report);

}  // namespace querypilot::eval
