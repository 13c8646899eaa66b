// Session's asynchronous asks: ask_start('q'), ask_state(id) and
// ask_result(id [, wait_ms]) over the process's runs (agent/answers/async_runs.h),
// and what becomes of a connection's runs when it closes.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "agent/agent.h"
#include "agent/answers/async_runs.h"
#include "agent/session/session.h"
#include "agent/session/state.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/query_only.h"

namespace querypilot {
namespace {

using AsyncClock = std::chrono::steady_clock;

// The record agent_runs shows of a run waiting on its model.
RunRecord WaitingRecord(const AsyncRun& run) REQUIRES(run.mu) {
  RunRecord rec = Agent::PendingRecord(*run.run, RunStatus::kPending);
  rec.provider = run.provider_name;
  rec.model = run.model;
  return rec;
}

// Marks a run that ended (its result `out`) done or failed.
void Ended(AsyncRun& run, const RunResult& out) REQUIRES(run.mu) {
  // No rows, and QueryPilot doubts them: failed, with the error ask() gives.
  const bool doubted = !out.doubt.empty() && run.config.DoubtfulEmptyIsError();
  if (out.status == RunStatus::kOk && out.query && !doubted) {
    run.answer = AnswerOf(out);
    run.state = AsyncState::kDone;
  } else if (doubted) {
    run.error = Status(ErrorKind::kExecutionError, out.DoubtMessage());
    run.state = AsyncState::kFailed;
  } else {
    run.error = Status(out.error.kind(), out.UserMessage());
    run.state = AsyncState::kFailed;
  }
}

}  // namespace

Result<int64_t> Session::AskStart(std::string_view question) {
  SettleQueryOnly(db_, &state_->check->query_only_debt());
  if (Status st = ValidateQuestion(question); !st.ok()) return st;
  if (Status st = CheckAskable(); !st.ok()) return st;
  const Config cfg = config();
  // A model that cannot be asked is said now, as ask() says it.
  Result<ResolvedProvider> provider = Resolved(cfg, state_->history);
  if (!provider.ok()) return Shown(state_->history, provider.status());
  const AskDepthGuard guard(state_->ask_depth);
  auto run = std::make_shared<AsyncRun>();
  run->id = AsyncRuns::Process().NewId(state_->history);
  run->question = std::string(question);
  run->databases = DatabasesKey(db_);
  run->config = cfg;
  run->provider_name = std::string(ProviderName(provider->kind));
  run->model = provider->model;
  {
    MutexLock lock(&run->mu);
    run->owner = state_.get();
    run->history = &state_->history;
    run->answer_cache = &state_->answer_cache;
  }
  // The call, made on a worker thread with a transport of its own; it reads
  // nothing of this connection.
  run->call = [resolved = provider.value(), options = ProviderOptionsFrom(cfg)](
                  const ChatRequest& request, const std::function<bool()>& cancelled) {
    CurlTransport transport;
    ProviderClient client(resolved, options, &transport, cancelled);
    return client.Complete(request);
  };
  Agent::RunStatePtr state = Agent::Begin(run->id, question);
  std::optional<RunResult> out = WithAgent(
      [&](const AgentContext& ctx) {
        AgentContext c = ctx;
        c.config = &run->config;
        return Agent(c).Advance(*state);
      },
      true);
  {
    AsyncRun& r = *run;
    MutexLock lock(&r.mu);
    if (out) {  // ended before any model call: the answer cache, or an error
      Ended(r, *out);
    } else {
      r.run = std::move(state);
      r.request = Agent::AwaitedCall(*r.run);
      r.waiting_since = AsyncClock::now();
      state_->history.Add(WaitingRecord(r), Agent::AttemptsSoFar(*r.run));
    }
  }
  // A cached answer's statement closes here: ask_result runs its SQL again.
  out.reset();
  AsyncRuns::Process().Add(run, cfg.async_threads);
  return run->id;
}

Result<std::shared_ptr<AsyncRun>> Session::FindAsyncRun(int64_t run_id) const {
  // A run of this process is the one meant: a record this connection read
  // from the history file may show it lost only because another connection
  // wrote it there as it started, before the process listed it
  // (ShowLostRuns).
  std::shared_ptr<AsyncRun> run = AsyncRuns::Process().Find(run_id);
  if (run && run->databases == DatabasesKey(db_)) return run;
  // A run lost by an earlier process, read back from history_file: the
  // process numbers its runs after those the file held (SkipPast), so that
  // record is the one meant.
  for (const RunRecord& r : state_->history.Runs()) {
    if (r.id == run_id && r.status == RunStatus::kLost) {
      return Status(ErrorKind::kInterrupted, fmt::format("run {} is lost: {}", run_id, r.error));
    }
  }
  if (run) {
    return Status::InvalidArgument(
        fmt::format("run {} was started on a connection to other databases; ask for it on a "
                    "connection to the same database files",
                    run_id));
  }
  return Status::InvalidArgument(fmt::format(
      "no run {} was started by ask_start in this process (ids come from ask_start; a run is "
      "known to the process that started it)",
      run_id));
}

Result<std::string> Session::AskState(int64_t run_id) {
  Result<std::shared_ptr<AsyncRun>> run = FindAsyncRun(run_id);
  if (!run.ok()) {
    if (run.status().kind() == ErrorKind::kInterrupted) return std::string("lost");
    return run.status();
  }
  AsyncRun& r = **run;
  MutexLock lock(&r.mu);
  return std::string(AsyncStateName(r.state));
}

Result<AskedRows> Session::AskResult(int64_t run_id, int64_t wait_ms) {
  SettleQueryOnly(db_, &state_->check->query_only_debt());
  if (wait_ms < 0 || wait_ms > kMaxResultWaitMs) {
    return Status::InvalidArgument(
        fmt::format("wait_ms is from 0 (do not wait) to {}, not {}", kMaxResultWaitMs, wait_ms));
  }
  Result<std::shared_ptr<AsyncRun>> found = FindAsyncRun(run_id);
  if (!found.ok()) return found.status();
  if (Status st = CheckAskable(); !st.ok()) return st;
  std::shared_ptr<AsyncRun> run = std::move(found).value();
  AsyncRun& r = *run;
  // The run's settings may be another connection's: what they hold is taken
  // out of what this one shows too.
  (void)Resolved(r.config, state_->history);
  AskedRows rows;
  rows.question = r.question;
  InterruptProbe probe(db_);
  // A run that goes back to its model (a correction, a review) is claimed
  // again while the wait lasts: one ask_result(id, ms) sees the whole run
  // through when its model answers in time.
  const auto deadline = AsyncClock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    const auto left = std::max(AsyncClock::duration::zero(), deadline - AsyncClock::now());
    Result<ClaimedRun> claimed =
        r.Claim(std::chrono::duration_cast<std::chrono::milliseconds>(left),
                [&probe] { return probe.Interrupted(); });
    if (!claimed.ok()) return claimed.status();
    if (claimed->answer) {  // done: its SQL is checked and run again
      rows.answer = claimed->answer;
      auto live =
          RunAgain(rows.answer->sql, 1,
                   "could not re-run the answer's SQL: ", "the answer's SQL failed when re-run: ");
      if (!live.ok()) return live.status();
      rows.stream = Stream(std::move(live).value(), 0, RowsRecord::kNothing);
      return rows;
    }
    // Ready: the reply is checked and run here, on this connection, recorded
    // where the run started, as ask() there would record it.
    Agent::RunStatePtr state = std::move(claimed->paused);
    History* history = claimed->history;
    std::optional<RunResult> out;
    {
      const AskDepthGuard guard(state_->ask_depth);
      out = WithAgent(
          [&](const AgentContext& ctx) {
            AgentContext c = ctx;
            c.config = &r.config;
            c.history = history;
            c.provider_name = r.provider_name;
            c.model = r.model;
            c.answer_cache = claimed->answer_cache;
            return Agent(c).Advance(*state);
          },
          true);
    }
    Status error;  // ok: `rows` is the answer
    bool again = false;
    {
      MutexLock lock(&r.mu);
      r.busy = false;
      if (!out) {  // a correction: back to the model
        r.run = std::move(state);
        r.request = Agent::AwaitedCall(*r.run);
        r.waiting_since = AsyncClock::now();
        r.state = AsyncState::kPending;
        history->Add(WaitingRecord(r), Agent::AttemptsSoFar(*r.run));
        error = r.PendingError();
        again = true;
      } else {
        Ended(r, *out);
        if (r.state == AsyncState::kFailed) {
          error = r.error;
        } else {
          rows.answer = r.answer;
          // The rows' count is recorded where the run is, whichever
          // connection reads them.
          rows.stream = Stream(std::move(out->query), run_id, RowsRecord::kAll, run);
        }
      }
    }
    r.changed.SignalAll();
    if (again) {
      AsyncRuns::Process().Submit(run, run->config.async_threads);
      if (AsyncClock::now() < deadline) continue;
    }
    if (!error.ok()) return Shown(state_->history, error);
    return rows;
  }
}

void Session::AbandonAsyncRuns() {
  // Runs this connection started and nobody finished are lost: their calls
  // are cancelled, and their records say so (agent/answers/async_runs.h).
  AsyncRuns::Process().Abandon(state_.get(), [this](AsyncRun& run) {
    run.mu.AssertHeld();  // Abandon calls it under the run's lock
    const std::string why = fmt::format(
        "the connection that started run {} closed while it waited on its model; ask again",
        run.id);
    RunRecord rec = Agent::PendingRecord(*run.run, RunStatus::kLost);
    rec.provider = run.provider_name;
    rec.model = run.model;
    rec.error = why;
    rec.error_type = std::string(ErrorKindName(ErrorKind::kInterrupted));
    state_->history.Add(std::move(rec), Agent::AttemptsSoFar(*run.run));
    run.error = Status(ErrorKind::kInterrupted, fmt::format("run {} is lost: {}", run.id, why));
  });
}

}  // namespace querypilot
