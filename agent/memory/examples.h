// Examples: verified question/SQL pairs from the connection's history, picked
// by similarity to a new question, for the first prompt (few-shot memory).
//
// Which runs may teach: those marked good with agent_feedback(), and, when
// the user allows it (learn_from_success), runs answered by their first
// attempt. A run marked bad never teaches, whatever else is true of it.
// Similarity is BM25 over the questions' words (stop words dropped, a
// trailing plural "s" removed); no embedding service is needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/memory/history.h"

namespace querypilot {

struct Example {
  int64_t run_id = 0;
  std::string question;
  std::string sql;
  double score = 0;
};

// The runs of `history` that may serve as examples.
std::vector<Example> TeachingRuns(const std::vector<RunRecord>& history, bool learn_from_success);

// The last `k` answered runs of `session` (oldest first), each as the
// question (restated on its own when the model did so) and its SQL. None for
// the empty session.
std::vector<Example> SessionTurns(const std::vector<RunRecord>& history, const std::string& session,
                                  size_t k);

// At most `k` of `candidates`, most similar to `question` first; only those
// sharing at least one word with it.
std::vector<Example> PickExamples(std::string_view question, const std::vector<Example>& candidates,
                                  size_t k);

}  // namespace querypilot
