#include "agent/memory/history.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace querypilot {

namespace {

using nlohmann::json;

constexpr auto kReplace = json::error_handler_t::replace;

Status NoSuchRun(int64_t run_id) {
  return Status::InvalidArgument(fmt::format("there is no run {} in agent_runs", run_id));
}

template <typename T>
void Get(const json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) *out = it->get<T>();
}

}  // namespace

std::string RunToJson(const RunRecord& r) {
  json j = {{"id", r.id}, {"question", r.question}, {"status", RunStatusName(r.status)}, {"sql", r.sql},
            {"attempts", r.attempts}, {"error", r.error}, {"error_type", r.error_type},
            {"reflection", r.reflection}, {"answer_attempt", r.answer_attempt},
            {"provider", r.provider}, {"model", r.model}, {"duration_ms", r.duration_ms},
            {"llm_ms", r.llm_ms}, {"llm_calls", r.llm_calls}, {"prompt_tokens", r.prompt_tokens},
            {"completion_tokens", r.completion_tokens}, {"truncated", r.truncated},
            {"created_at", r.created_at}, {"cached_from", r.cached_from},
            {"clarifications", r.clarifications}, {"examples", r.examples},
            {"feedback", r.feedback}, {"explanation", r.explanation}, {"session", r.session},
            {"standalone", r.standalone}, {"node_times", r.node_times}, {"advice", r.advice},
            {"stood_by", r.stood_by}};
  if (r.rows) j["rows"] = *r.rows;
  return j.dump(-1, ' ', false, kReplace);
}

std::optional<RunRecord> RunFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("id")) return std::nullopt;
  RunRecord r;
  try {
    Get(j, "id", &r.id);
    Get(j, "question", &r.question);
    std::string status;
    Get(j, "status", &status);
    r.status = RunStatusFromName(status);
    Get(j, "sql", &r.sql);
    Get(j, "attempts", &r.attempts);
    Get(j, "error", &r.error);
    Get(j, "error_type", &r.error_type);
    Get(j, "reflection", &r.reflection);
    Get(j, "answer_attempt", &r.answer_attempt);
    Get(j, "provider", &r.provider);
    Get(j, "model", &r.model);
    Get(j, "duration_ms", &r.duration_ms);
    Get(j, "llm_ms", &r.llm_ms);
    Get(j, "llm_calls", &r.llm_calls);
    Get(j, "prompt_tokens", &r.prompt_tokens);
    Get(j, "completion_tokens", &r.completion_tokens);
    Get(j, "truncated", &r.truncated);
    Get(j, "created_at", &r.created_at);
    Get(j, "cached_from", &r.cached_from);
    Get(j, "clarifications", &r.clarifications);
    Get(j, "examples", &r.examples);
    Get(j, "feedback", &r.feedback);
    Get(j, "explanation", &r.explanation);
    Get(j, "session", &r.session);
    Get(j, "standalone", &r.standalone);
    Get(j, "node_times", &r.node_times);
    Get(j, "advice", &r.advice);
    Get(j, "stood_by", &r.stood_by);
    if (j.contains("rows") && j["rows"].is_number_integer()) r.rows = j["rows"].get<int64_t>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return r;
}

std::string AttemptToJson(const AttemptRecord& a) {
  json j = {{"run_id", a.run_id}, {"attempt", a.attempt}, {"sql", a.sql},
            {"error_type", a.error_type}, {"error", a.error}, {"hint", a.hint},
            {"strategy", a.strategy}, {"diff", a.diff}, {"reply", a.reply},
            {"reflection", a.reflection}, {"prompt_tokens", a.prompt_tokens},
            {"completion_tokens", a.completion_tokens}, {"llm_ms", a.llm_ms},
            {"exec_ms", a.exec_ms}, {"model", a.model}, {"stood_by", a.stood_by}};
  return j.dump(-1, ' ', false, kReplace);
}

std::optional<AttemptRecord> AttemptFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("run_id")) return std::nullopt;
  AttemptRecord a;
  try {
    Get(j, "run_id", &a.run_id);
    Get(j, "attempt", &a.attempt);
    Get(j, "sql", &a.sql);
    Get(j, "error_type", &a.error_type);
    Get(j, "error", &a.error);
    Get(j, "hint", &a.hint);
    Get(j, "strategy", &a.strategy);
    Get(j, "diff", &a.diff);
    Get(j, "reply", &a.reply);
    Get(j, "reflection", &a.reflection);
    Get(j, "prompt_tokens", &a.prompt_tokens);
    Get(j, "completion_tokens", &a.completion_tokens);
    Get(j, "llm_ms", &a.llm_ms);
    Get(j, "exec_ms", &a.exec_ms);
    Get(j, "model", &a.model);
    Get(j, "stood_by", &a.stood_by);
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return a;
}

Status History::WriteLocked(const RunRecord& run) const {
  if (!sink_) return Status::Ok();
  if (run.not_kept.empty()) return sink_->SaveRun(run, nullptr);
  std::vector<AttemptRecord> attempts;
  for (const AttemptRecord& a : attempts_) {
    if (a.run_id == run.id) attempts.push_back(a);
  }
  return sink_->SaveRun(run, &attempts);
}

void History::SaveRunLocked(RunRecord& run, std::string_view what) {
  Status st = WriteLocked(run);
  if (st.ok()) {
    run.not_kept.clear();
    return;
  }
  // A run the file never had stays "this run" until it is written whole.
  if (!run.not_kept.empty()) what = "this run";
  run.not_kept = fmt::format("history_file did not keep {} ({}); it lasts only as long as this connection", what,
                             st.message());
}

bool History::HasGoodRuns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(runs_.begin(), runs_.end(), [](const RunRecord& r) { return r.feedback == "good"; });
}

bool History::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.empty() && next_id_ == 1;
}

bool History::Attach(std::shared_ptr<HistorySink> sink, std::vector<RunRecord> runs,
                     std::vector<AttemptRecord> attempts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!runs_.empty() || next_id_ != 1 || sink_) return false;
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  for (const RunRecord& r : runs) next_id_ = std::max(next_id_, r.id + 1);
  if (runs.size() > capacity_) runs.erase(runs.begin(), runs.end() - static_cast<std::ptrdiff_t>(capacity_));
  const int64_t oldest = runs.empty() ? 0 : runs.front().id;
  attempts.erase(std::remove_if(attempts.begin(), attempts.end(),
                                [&](const AttemptRecord& a) { return a.run_id < oldest; }),
                 attempts.end());
  std::sort(attempts.begin(), attempts.end(), [](const AttemptRecord& a, const AttemptRecord& b) {
    return a.run_id != b.run_id ? a.run_id < b.run_id : a.attempt < b.attempt;
  });
  runs_ = std::move(runs);
  attempts_ = std::move(attempts);
  sink_ = std::move(sink);
  return true;
}

int64_t History::NextRunId() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_++;
}

void History::Add(RunRecord run, std::vector<AttemptRecord> attempts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sink_) {
    if (Status st = sink_->SaveRun(run, &attempts); !st.ok()) {
      run.not_kept = fmt::format(
          "history_file did not keep this run ({}); it lasts only as long as this connection", st.message());
    }
  }
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
      SaveRunLocked(*it, "this run's row count");
      return;
    }
  }
}

Status History::Forget(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::none_of(runs_.begin(), runs_.end(), [&](const RunRecord& r) { return r.id == run_id; })) {
    return NoSuchRun(run_id);
  }
  if (sink_) {
    if (Status st = sink_->ForgetRun(run_id); !st.ok()) {
      return Status(st.kind(), fmt::format("run {} is not forgotten: history_file could not be written ({}); "
                                           "agent_runs and the file still hold it",
                                           run_id, st.message()));
    }
  }
  std::erase_if(runs_, [&](const RunRecord& r) { return r.id == run_id; });
  std::erase_if(attempts_, [&](const AttemptRecord& a) { return a.run_id == run_id; });
  return Status::Ok();
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
    SaveRunLocked(r, "this run's explanation");
  }
}

Status History::SetFeedback(int64_t run_id, const std::string& verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : runs_) {
    if (r.id != run_id) continue;
    // A verdict decides what teaches: one the file lost would come back
    // changed after a restart, so it is recorded in both or in neither.
    RunRecord changed = r;
    changed.feedback = verdict;
    if (Status st = WriteLocked(changed); !st.ok()) {
      return Status(st.kind(), fmt::format("the verdict on run {} is not recorded: history_file could not be "
                                           "written ({}); the run is unchanged",
                                           run_id, st.message()));
    }
    changed.not_kept.clear();
    r = std::move(changed);
    return Status::Ok();
  }
  return NoSuchRun(run_id);
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
