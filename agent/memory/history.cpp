#include "agent/memory/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <type_traits>

namespace querypilot {

namespace {

using nlohmann::json;

constexpr auto kReplace = json::error_handler_t::replace;

Status NoSuchRun(int64_t run_id) {
  return Status::InvalidArgument(fmt::format("there is no run {} in agent_runs", run_id));
}

// The member types each way of showing a field fits.
template <typename Record>
constexpr bool ShownFits(const RecordField<Record>& field) {
  return std::visit(
      [&](auto member) {
        using T = std::remove_cvref_t<decltype(std::declval<Record>().*member)>;
        constexpr bool number = std::is_same_v<T, int> || std::is_same_v<T, int64_t>;
        constexpr bool list = std::is_same_v<T, std::vector<std::string>> ||
                              std::is_same_v<T, std::vector<int64_t>> ||
                              std::is_same_v<T, NodeTimes>;
        switch (field.shown) {
          case ShownAs::kAsIs:
            return !list;
          case ShownAs::kNullIfEmpty:
            return list || std::is_same_v<T, std::string>;
          case ShownAs::kNullUnlessPositive:
          case ShownAs::kNullIfNegative:
            return number;
          case ShownAs::kLines:
            return std::is_same_v<T, std::vector<std::string>>;
        }
        return false;
      },
      field.member);
}

// Every field shown in a way its type has, under a column name and a file
// key no other field of its table has.
template <typename Record, size_t N>
constexpr bool WellFormed(const RecordField<Record> (&fields)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (fields[i].column.empty() || fields[i].doc.empty() || !ShownFits(fields[i])) return false;
    for (size_t k = 0; k < i; ++k) {
      if (fields[k].column == fields[i].column || fields[k].key() == fields[i].key()) return false;
    }
  }
  return true;
}
static_assert(WellFormed(kRunFields));
static_assert(WellFormed(kAttemptFields));

template <typename Record>
std::string RecordToJson(const Record& record, std::span<const RecordField<Record>> fields) {
  json j = json::object();
  for (const RecordField<Record>& f : fields) {
    if (!f.in_file) continue;
    const std::string key(f.key());
    std::visit(
        [&](auto member) {
          const auto& v = record.*member;
          using T = std::remove_cvref_t<decltype(v)>;
          if constexpr (std::is_same_v<T, RunStatus>) {
            j[key] = RunStatusName(v);
          } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
            if (v) j[key] = *v;  // no key while there is none
          } else {
            j[key] = v;
          }
        },
        f.member);
  }
  return j.dump(-1, ' ', false, kReplace);
}

// The record `text` holds, which must be an object with `required`. A key
// missing or null leaves its field's default; a value of the wrong type fails
// the whole record, but for an optional number, which it leaves unset.
template <typename Record>
std::optional<Record> RecordFromJson(std::string_view text,
                                     std::span<const RecordField<Record>> fields,
                                     const char* required) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains(required)) return std::nullopt;
  Record record;
  try {
    for (const RecordField<Record>& f : fields) {
      if (!f.in_file) continue;
      auto it = j.find(std::string(f.key()));
      if (it == j.end() || it->is_null()) continue;
      std::visit(
          [&](auto member) {
            auto& v = record.*member;
            using T = std::remove_cvref_t<decltype(v)>;
            if constexpr (std::is_same_v<T, RunStatus>) {
              v = RunStatusFromName(it->template get<std::string>());
            } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
              if (it->is_number_integer()) v = it->template get<int64_t>();
            } else {
              v = it->template get<T>();
            }
          },
          f.member);
    }
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return record;
}

// `record` with each of its texts (a text field, each text of a list)
// scrubbed of `secrets`.
template <typename Record>
void ScrubRecord(Record& record, std::span<const RecordField<Record>> fields,
                 const Secrets& secrets) {
  if (secrets.empty()) return;
  for (const RecordField<Record>& f : fields) {
    std::visit(
        [&](auto member) {
          auto& v = record.*member;
          using T = std::remove_cvref_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            v = secrets.Scrub(v);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            for (std::string& text : v) text = secrets.Scrub(text);
          }
        },
        f.member);
  }
}

// A list as a JSON array, NULL when empty.
template <typename T>
ShownValue JsonArrayOrNull(const std::vector<T>& items) {
  if (items.empty()) return {};
  return {json(items).dump(-1, ' ', false, kReplace), true};
}

}  // namespace

template <typename Record>
std::string_view DeclaredType(const RecordField<Record>& field) {
  return std::visit(
      [](auto member) -> std::string_view {
        using T = std::remove_cvref_t<decltype(std::declval<Record>().*member)>;
        if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t> ||
                      std::is_same_v<T, bool> || std::is_same_v<T, std::optional<int64_t>>) {
          return "INTEGER";
        } else if constexpr (std::is_same_v<T, double>) {
          return "REAL";
        } else {
          return "TEXT";
        }
      },
      field.member);
}

template <typename Record>
ShownValue ShowField(const RecordField<Record>& field, const Record& record) {
  return std::visit(
      [&](auto member) -> ShownValue {
        const auto& v = record.*member;
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          if (field.shown == ShownAs::kNullUnlessPositive && v <= 0) return {};
          if (field.shown == ShownAs::kNullIfNegative && v < 0) return {};
          return {static_cast<int64_t>(v)};
        } else if constexpr (std::is_same_v<T, bool>) {
          return {static_cast<int64_t>(v ? 1 : 0)};
        } else if constexpr (std::is_same_v<T, double>) {
          return {v};
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (field.shown == ShownAs::kNullIfEmpty && v.empty()) return {};
          return {v};
        } else if constexpr (std::is_same_v<T, RunStatus>) {
          return {std::string(RunStatusName(v))};
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          if (!v) return {};
          return {*v};
        } else if constexpr (std::is_same_v<T, NodeTimes>) {
          if (v.empty()) return {};
          nlohmann::ordered_json j = nlohmann::ordered_json::object();
          for (const auto& [node, ms] : v) j[node] = std::round(ms * 1000.0) / 1000.0;
          return {j.dump(-1, ' ', false, kReplace), true};
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          if (field.shown != ShownAs::kLines) return JsonArrayOrNull(v);
          std::string text;
          for (const std::string& line : v) text += (text.empty() ? "" : "\n") + line;
          if (text.empty()) return {};
          return {std::move(text)};
        } else {
          return JsonArrayOrNull(v);
        }
      },
      field.member);
}

template std::string_view DeclaredType(const RecordField<RunRecord>&);
template std::string_view DeclaredType(const RecordField<AttemptRecord>&);
template ShownValue ShowField(const RecordField<RunRecord>&, const RunRecord&);
template ShownValue ShowField(const RecordField<AttemptRecord>&, const AttemptRecord&);

std::string RunToJson(const RunRecord& run) {
  return RecordToJson<RunRecord>(run, kRunFields);
}

std::optional<RunRecord> RunFromJson(std::string_view text) {
  return RecordFromJson<RunRecord>(text, kRunFields, "id");
}

std::string AttemptToJson(const AttemptRecord& attempt) {
  return RecordToJson<AttemptRecord>(attempt, kAttemptFields);
}

std::optional<AttemptRecord> AttemptFromJson(std::string_view text) {
  return RecordFromJson<AttemptRecord>(text, kAttemptFields, "run_id");
}

Status History::WriteLocked(const RunRecord& run) {
  if (!sink_) return Status::Ok();
  const bool claim = unclaimed_.contains(run.id);
  Status st;
  if (run.not_kept.empty() && !claim) {
    st = sink_->SaveRun(run, nullptr, false);
  } else {
    std::vector<AttemptRecord> attempts;
    for (const AttemptRecord& a : attempts_) {
      if (a.run_id == run.id) attempts.push_back(a);
    }
    st = sink_->SaveRun(run, &attempts, claim);
  }
  if (st.ok()) unclaimed_.erase(run.id);
  return st;
}

void History::SaveRunLocked(RunRecord& run, std::string_view what) {
  if (!sink_) return;  // memory only: not_kept, if any, says so already
  Status st = WriteLocked(run);
  if (st.ok()) {
    run.not_kept.clear();
    return;
  }
  // A run the file never had stays "this run" until it is written whole.
  if (!run.not_kept.empty()) what = "this run";
  run.not_kept =
      fmt::format("history_file did not keep {} ({}); it lasts only as long as this connection",
                  what, st.message());
}

History::Standing History::StandingOf(int64_t run_id) const {
  MutexLock lock(&mu_);
  for (const RunRecord& r : runs_) {
    if (r.id == run_id) return {r.confidence, r.confidence_reason, r.alternatives};
  }
  return {};
}

bool History::HasGoodRuns() const {
  MutexLock lock(&mu_);
  return std::any_of(runs_.begin(), runs_.end(),
                     [](const RunRecord& r) { return r.feedback == "good"; });
}

bool History::empty() const {
  MutexLock lock(&mu_);
  return runs_.empty() && next_id_ == 1;
}

bool History::Attach(std::shared_ptr<HistorySink> sink, std::vector<RunRecord> runs,
                     std::vector<AttemptRecord> attempts) {
  MutexLock lock(&mu_);
  if (!runs_.empty() || next_id_ != 1 || sink_) return false;
  std::sort(runs.begin(), runs.end(),
            [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  for (const RunRecord& r : runs) next_id_ = std::max(next_id_, r.id + 1);
  if (runs.size() > capacity_)
    runs.erase(runs.begin(), runs.end() - static_cast<std::ptrdiff_t>(capacity_));
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

bool History::Refresh() {
  MutexLock lock(&mu_);
  if (!sink_ || !sink_->ChangedElsewhere()) return false;
  std::vector<RunRecord> runs;
  std::vector<AttemptRecord> attempts;
  if (!sink_->Load(&runs, &attempts).ok()) return false;
  // What only this history has: runs the sink did not keep, as they are
  // here, and their attempts.
  std::set<int64_t> mine;
  for (const RunRecord& r : runs_) {
    if (!r.not_kept.empty()) mine.insert(r.id);
  }
  std::erase_if(runs, [&](const RunRecord& r) { return mine.contains(r.id); });
  std::erase_if(attempts, [&](const AttemptRecord& a) { return mine.contains(a.run_id); });
  for (const RunRecord& r : runs_) {
    if (mine.contains(r.id)) runs.push_back(r);
  }
  for (const AttemptRecord& a : attempts_) {
    if (mine.contains(a.run_id)) attempts.push_back(a);
  }
  std::sort(runs.begin(), runs.end(),
            [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  if (runs.size() > capacity_)
    runs.erase(runs.begin(), runs.end() - static_cast<std::ptrdiff_t>(capacity_));
  const int64_t oldest = runs.empty() ? 0 : runs.front().id;
  std::erase_if(attempts, [&](const AttemptRecord& a) { return a.run_id < oldest; });
  std::sort(attempts.begin(), attempts.end(), [](const AttemptRecord& a, const AttemptRecord& b) {
    return a.run_id != b.run_id ? a.run_id < b.run_id : a.attempt < b.attempt;
  });
  for (const RunRecord& r : runs) next_id_ = std::max(next_id_, r.id + 1);
  runs_ = std::move(runs);
  attempts_ = std::move(attempts);
  return true;
}

int64_t History::NextRunId() {
  return NextRunIdFrom(1);
}

int64_t History::NextRunIdFrom(int64_t at_least) {
  MutexLock lock(&mu_);
  const int64_t wanted = std::max(next_id_, at_least);
  if (sink_) {
    if (Result<int64_t> id = sink_->NewRunId(wanted); id.ok()) {
      next_id_ = *id + 1;
      return *id;
    }
    // Claimed when the run is written (HistorySink::SaveRun's claim_id).
    unclaimed_.insert(wanted);
  }
  next_id_ = wanted + 1;
  return wanted;
}

void History::SetNoSinkReason(std::string why) {
  MutexLock lock(&mu_);
  no_sink_reason_ = std::move(why);
}

void History::ShowOnly(RunRecord replaced) {
  MutexLock lock(&mu_);
  for (RunRecord& r : runs_) {
    if (r.id == replaced.id) r = std::move(replaced);
  }
}

void History::KnowSecrets(const Secrets& secrets) {
  MutexLock lock(&mu_);
  secrets_.Add(secrets);
}

std::string History::Scrub(std::string_view text) const {
  MutexLock lock(&mu_);
  return secrets_.Scrub(text);
}

void History::Add(RunRecord run, std::vector<AttemptRecord> attempts) {
  MutexLock lock(&mu_);
  ScrubRecord<RunRecord>(run, kRunFields, secrets_);
  for (AttemptRecord& a : attempts) ScrubRecord<AttemptRecord>(a, kAttemptFields, secrets_);
  const int64_t id = run.id;
  std::erase_if(runs_, [id](const RunRecord& r) { return r.id == id; });
  std::erase_if(attempts_, [id](const AttemptRecord& a) { return a.run_id == id; });
  if (sink_) {
    const bool claim = unclaimed_.contains(id);
    if (Status st = sink_->SaveRun(run, &attempts, claim); !st.ok()) {
      run.not_kept = fmt::format(
          "history_file did not keep this run ({}); it lasts only as long as this connection",
          st.message());
    } else {
      unclaimed_.erase(id);
    }
  } else if (!no_sink_reason_.empty()) {
    run.not_kept =
        fmt::format("no history file keeps this run ({}); it lasts only as long as this connection",
                    no_sink_reason_);
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
  MutexLock lock(&mu_);
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    if (it->id == run_id) {
      it->rows = rows;
      it->truncated = truncated;
      SaveRunLocked(*it, "this run's row count");
      return;
    }
  }
}

void History::SetStopped(int64_t run_id, int64_t rows, const Status& error) {
  MutexLock lock(&mu_);
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    if (it->id == run_id) {
      it->status = RunStatusFor(error);
      it->error = secrets_.Scrub(
          fmt::format("the answer's rows stopped after {} rows: {}", rows, error.message()));
      it->error_type = std::string(ErrorKindName(error.kind()));
      it->rows = rows;
      it->confidence.reset();  // no answer: no confidence, and no reason for one
      it->confidence_reason.clear();
      SaveRunLocked(*it, "what stopped this run's rows");
      return;
    }
  }
}

Status History::Forget(int64_t run_id) {
  MutexLock lock(&mu_);
  if (std::none_of(runs_.begin(), runs_.end(),
                   [&](const RunRecord& r) { return r.id == run_id; })) {
    return NoSuchRun(run_id);
  }
  if (sink_) {
    if (Status st = sink_->ForgetRun(run_id); !st.ok()) {
      return Status(st.kind(),
                    fmt::format("run {} is not forgotten: history_file could not be written ({}); "
                                "agent_runs and the file still hold it",
                                run_id, st.message()));
    }
  }
  std::erase_if(runs_, [&](const RunRecord& r) { return r.id == run_id; });
  std::erase_if(attempts_, [&](const AttemptRecord& a) { return a.run_id == run_id; });
  return Status::Ok();
}

void History::AddModelCall(int64_t run_id, int64_t prompt_tokens, int64_t completion_tokens) {
  MutexLock lock(&mu_);
  for (auto& r : runs_) {
    if (r.id != run_id) continue;
    ++r.llm_calls;
    if (prompt_tokens >= 0) r.prompt_tokens = std::max<int64_t>(r.prompt_tokens, 0) + prompt_tokens;
    if (completion_tokens >= 0) {
      r.completion_tokens = std::max<int64_t>(r.completion_tokens, 0) + completion_tokens;
    }
    SaveRunLocked(r, "this run's model calls");
  }
}

void History::SetExplanation(int64_t run_id, const std::string& text, int64_t prompt_tokens,
                             int64_t completion_tokens) {
  MutexLock lock(&mu_);
  for (auto& r : runs_) {
    if (r.id != run_id) continue;
    r.explanation = secrets_.Scrub(text);
    ++r.llm_calls;
    if (prompt_tokens >= 0) r.prompt_tokens = std::max<int64_t>(r.prompt_tokens, 0) + prompt_tokens;
    if (completion_tokens >= 0) {
      r.completion_tokens = std::max<int64_t>(r.completion_tokens, 0) + completion_tokens;
    }
    SaveRunLocked(r, "this run's explanation");
  }
}

Status History::SetFeedback(int64_t run_id, const std::string& verdict) {
  MutexLock lock(&mu_);
  for (auto& r : runs_) {
    if (r.id != run_id) continue;
    // A verdict decides what teaches: one the file lost would come back
    // changed after a restart, so it is recorded in both or in neither.
    RunRecord changed = r;
    changed.feedback = verdict;
    if (Status st = WriteLocked(changed); !st.ok()) {
      return Status(st.kind(),
                    fmt::format("the verdict on run {} is not recorded: history_file could not be "
                                "written ({}); the run is unchanged",
                                run_id, st.message()));
    }
    changed.not_kept.clear();
    r = std::move(changed);
    return Status::Ok();
  }
  return NoSuchRun(run_id);
}

std::vector<RunRecord> History::Runs(std::optional<int64_t> id) const {
  MutexLock lock(&mu_);
  if (!id) return runs_;
  std::vector<RunRecord> out;
  for (const RunRecord& r : runs_) {
    if (r.id == *id) out.push_back(r);
  }
  return out;
}

Result<RunRecord> History::AnsweredRun(int64_t run_id, std::string_view missing) const {
  MutexLock lock(&mu_);
  auto it = std::find_if(runs_.begin(), runs_.end(),
                         [run_id](const RunRecord& r) { return r.id == run_id; });
  if (it == runs_.end()) {
    return Status::InvalidArgument(fmt::format("there is no run {} in agent_runs", run_id));
  }
  if (it->status != RunStatus::kOk || it->sql.empty()) {
    return Status::InvalidArgument(fmt::format("run {} has no {} (its status is {})", run_id,
                                               missing, RunStatusName(it->status)));
  }
  return *it;
}

std::vector<AttemptRecord> History::Attempts(std::optional<int64_t> run_id) const {
  MutexLock lock(&mu_);
  if (!run_id) return attempts_;
  std::vector<AttemptRecord> out;
  for (const AttemptRecord& a : attempts_) {
    if (a.run_id == *run_id) out.push_back(a);
  }
  return out;
}

}  // namespace querypilot
