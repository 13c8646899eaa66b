#include "agent/history.h"

#include <algorithm>

namespace querypilot {

int64_t History::NextRunId() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_++;
}

void History::Add(RunRecord run, std::vector<AttemptRecord> attempts) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.push_back(std::move(run));
  for (auto& a : attempts) attempts_.push_back(std::move(a));
  if (runs_.size() > capacity_) {
    size_t drop = runs_.size() - capacity_;
    int64_t oldest_kept = runs_[drop].id;
    runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(drop));
    attempts_.erase(std::remove_if(attempts_.begin(), attempts_.end(),
                                   [&](const AttemptRecord& a) { return a.run_id < oldest_kept; }),
                    attempts_.end());
  }
}

void History::SetRows(int64_t run_id, int64_t rows, bool truncated) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    if (it->id == run_id) {
      it->rows = rows;
      it->truncated = truncated;
      return;
    }
  }
}

void History::SetExplanation(int64_t run_id, const std::string& text, int64_t prompt_tokens,
                             int64_t completion_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : runs_) {
    if (r.id != run_id) continue;
    r.explanation = text;
    ++r.llm_calls;
    if (prompt_tokens >= 0) r.prompt_tokens = std::max<int64_t>(r.prompt_tokens, 0) + prompt_tokens;
    if (completion_tokens >= 0) {
      r.completion_tokens = std::max<int64_t>(r.completion_tokens, 0) + completion_tokens;
    }
  }
}

bool History::SetFeedback(int64_t run_id, const std::string& verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : runs_) {
    if (r.id == run_id) {
      r.feedback = verdict;
      return true;
    }
  }
  return false;
}

std::vector<RunRecord> History::Runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_;
}

std::vector<AttemptRecord> History::Attempts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return attempts_;
}

}  // namespace querypilot
