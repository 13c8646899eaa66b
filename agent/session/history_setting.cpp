// Session's history file: the one history_file names, the default of the
// connection's database file (DefaultHistoryFile, agent/memory/history_file.h)
// or none, settled once at the first call that needs the history; and the
// runs it holds that no ask of this process waits on, shown lost.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/answers/async_runs.h"
#include "agent/base/text.h"
#include "agent/memory/history_file.h"
#include "agent/session/session.h"
#include "agent/session/state.h"

namespace querypilot {

Status Session::AttachHistoryFile(const std::string& value) {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  if (state_->history_file) {
    if (value == state_->config.history_file || value == state_->history_path) return Status::Ok();
    return Status::InvalidArgument(
        "history_file is already " + state_->history_path +
        (state_->config.history_file.empty() ? " (the default for this database)" : "") +
        "; open a new connection for another, and set it before that connection's first ask");
  }
  if (value == state_->config.history_file && state_->history_settled) return Status::Ok();
  if (value == kHistoryOff) {  // no file: memory only from now on, whatever was asked
    state_->config.history_file = value;
    state_->history_settled = true;
    state_->history.SetNoSinkReason("");
    return Status::Ok();
  }
  if (!state_->history.empty()) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  if (value.empty()) {  // the default, settled at the first call that needs it
    state_->config.history_file = value;
    state_->history_settled = false;
    state_->history.SetNoSinkReason("");
    return Status::Ok();
  }
  // A file named is opened now: one that cannot be used is refused at once.
  return OpenHistoryFile(value, false);
}

void Session::ShowLostRuns() const {
  // A run that waited on its model (ask_start) and is no longer waiting in
  // this process was started by a process that ended, or by another that
  // may still be waiting: it is shown lost here, and its record in the file
  // is left to the process that started it.
  for (RunRecord& r : state_->history.Runs()) {
    if (r.status != RunStatus::kPending && r.status != RunStatus::kReady) continue;
    // Still waiting, in this process (an id of another database's run is
    // another run).
    if (auto live = AsyncRuns::Process().Find(r.id); live && live->databases == DatabasesKey(db_)) {
      AsyncRun& run = *live;
      MutexLock lock(&run.mu);
      if (run.state == AsyncState::kPending || run.state == AsyncState::kReady) continue;
    }
    r.status = RunStatus::kLost;
    r.error =
        "the process that started it ended (or is another process) while it waited on its "
        "model; ask again";
    r.error_type = std::string(ErrorKindName(ErrorKind::kInterrupted));
    state_->history.ShowOnly(std::move(r));
  }
}

Status Session::SettleHistory() const {
  {
    MutexLock lock(&state_->config_mu);
    if (!state_->history_settled) return SettleHistoryLocked();
  }
  // Settled: what other connections and processes wrote since is read.
  if (state_->history.Refresh()) ShowLostRuns();
  return Status::Ok();
}

Status Session::SettleHistoryLocked() const {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  const std::string named = state_->config.history_file;
  if (named == kHistoryOff) {
    state_->history_settled = true;
    return Status::Ok();
  }
  // A file named (QUERYPILOT_HISTORY_FILE): one that cannot be used fails
  // the call, as the setting would.
  if (!named.empty()) return OpenHistoryFile(named, false);
  Result<std::string> path = DefaultHistoryFile(db_);
  Status st = !path.ok() ? path.status() : Status::Ok();
  if (path.ok() && !path->empty()) st = OpenHistoryFile(*path, true);
  if (!st.ok()) {
    // The default could not be used: memory only, and each run says so.
    state_->history.SetNoSinkReason(fmt::format("the default history file: {}", st.message()));
  }
  state_->history_settled = true;
  return Status::Ok();
}

Status Session::OpenHistoryFile(const std::string& path, bool is_default) const {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  if (!state_->history.empty()) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  std::vector<RunRecord> runs;
  std::vector<AttemptRecord> attempts;
  Result<std::shared_ptr<HistoryFile>> file =
      HistoryFile::Open(db_, path, &runs, &attempts, is_default);
  if (!file.ok()) return file.status();
  // Descriptions kept in the file come back; those given before it was set
  // go into it, before the history is attached: a file that cannot take them
  // is refused, and the connection goes on as it was.
  for (const Description& d : state_->descriptions) {
    if (Status st = file.value()->SaveDescription(d); !st.ok()) {
      return Status(st.kind(),
                    "history_file " + path +
                        " could not keep this connection's descriptions: " + st.message());
    }
  }
  file.value()->SetMaxRuns(state_->config.max_history_runs);
  int64_t largest = 0;
  for (const RunRecord& r : runs) largest = std::max(largest, r.id);
  if (!state_->history.Attach(file.value(), std::move(runs), std::move(attempts))) {
    return Status::InvalidArgument("set history_file before the first ask on this connection");
  }
  if (!is_default) state_->config.history_file = path;
  state_->history_file = std::move(file).value();
  state_->history_path = path;
  state_->history_settled = true;
  state_->history.SetNoSinkReason("");
  // Runs the file holds were numbered by earlier processes (or other
  // connections): the process's asynchronous runs, on every connection,
  // are numbered after them, so that an id never means two runs.
  AsyncRuns::Process().SkipPast(largest);
  ShowLostRuns();
  for (Description& d : state_->history_file->LoadDescriptions()) {
    auto same = [&d](const Description& e) {
      return text::EqualsIgnoreCase(e.Target(), d.Target());
    };
    if (std::none_of(state_->descriptions.begin(), state_->descriptions.end(), same))
      state_->descriptions.push_back(std::move(d));
  }
  return Status::Ok();
}

std::string Session::ShownHistoryFile() const {
  state_->config_mu.AssertHeld();  // its callers hold it (session.h)
  return state_->history_path.empty() ? state_->config.history_file : state_->history_path;
}

}  // namespace querypilot
