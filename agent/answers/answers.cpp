#include "agent/answers/answers.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "agent/agent.h"
#include "agent/answers/async_runs.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/memory/history.h"
#include "agent/sql/executor.h"
#include "agent/sql/interrupt.h"

namespace querypilot {
namespace {

// Answers kept per connection at most (each is one statement's worth).
constexpr size_t kMaxKeptAnswers = 16;

// `now` holds the same run of `then`'s statement, not a successor at its address.
bool SameRun(const StatementMark& then, const StatementMark& now) {
  return then.stmt == now.stmt && then.runs == now.runs && now.vm_steps >= then.vm_steps;
}

// Every statement of `kept` still runs, the same run, in `now`.
bool StillRunning(const StatementContext& kept, const StatementContext& now) {
  return std::all_of(kept.begin(), kept.end(), [&](const StatementMark& k) {
    return std::any_of(now.begin(), now.end(),
                       [&](const StatementMark& n) { return SameRun(k, n); });
  });
}

}  // namespace

std::vector<std::string> AnswerTableColumnNames(const std::vector<std::string>& names) {
  // SQLite compares column names without regard to ASCII case: "a" and "A"
  // are one column, as JSON keys they are two.
  std::vector<std::string> out;
  std::set<std::string> used;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name = names[i].empty() ? "column" + std::to_string(i + 1) : names[i];
    for (int k = 1; !used.insert(text::Lower(name)).second; ++k)
      name = names[i] + ":" + std::to_string(k);
    out.push_back(std::move(name));
  }
  return out;
}

StatementContext StatementAnswers::Current() {
  StatementContext context;
  MutexLock lock(&mu_);
  for (sqlite3_stmt* p = sqlite3_next_stmt(db_, nullptr); p; p = sqlite3_next_stmt(db_, p)) {
    if (!sqlite3_stmt_busy(p) || own_.count(p)) continue;
    context.push_back({p, sqlite3_stmt_status(p, SQLITE_STMTSTATUS_RUN, 0),
                       sqlite3_stmt_status(p, SQLITE_STMTSTATUS_VM_STEP, 0)});
  }
  std::sort(context.begin(), context.end(),
            [](const StatementMark& a, const StatementMark& b) { return a.stmt < b.stmt; });
  return context;
}

std::shared_ptr<StatementAnswer> StatementAnswers::Find(const std::string& question,
                                                        const StatementContext& context) {
  MutexLock lock(&mu_);
  // Forget answers whose statement has finished. A statement closes its ask()
  // cursors when it halts, is reset or is finalized, so an answer no cursor
  // holds any more belongs to a finished statement. An answer whose
  // statements are not all still running, the same runs, is finished too.
  std::erase_if(kept_, [&](const Kept& k) {
    return k.answer.use_count() == 1 || !StillRunning(k.context, context);
  });
  // Each kept context is now part of `context`; the same size means the same
  // statements: this statement asked the question before.
  for (const auto& k : kept_) {
    if (k.question == question && k.context.size() == context.size()) return k.answer;
  }
  return nullptr;
}

void StatementAnswers::Keep(const std::string& question, StatementContext context,
                            std::shared_ptr<StatementAnswer> answer) {
  MutexLock lock(&mu_);
  if (kept_.size() >= kMaxKeptAnswers) kept_.erase(kept_.begin());
  kept_.push_back({question, std::move(context), std::move(answer)});
}

void StatementAnswers::RegisterOwn(sqlite3_stmt* stmt) {
  MutexLock lock(&mu_);
  own_.insert(stmt);
}

void StatementAnswers::UnregisterOwn(sqlite3_stmt* stmt) {
  MutexLock lock(&mu_);
  own_.erase(stmt);
}

void StatementAnswers::ForgetRun(int64_t run_id) {
  MutexLock lock(&mu_);
  std::erase_if(kept_, [&](const Kept& k) { return k.answer->run_id == run_id; });
}

std::vector<AnswerColumn> AnswerTableColumns(const std::vector<std::string>& names,
                                             const std::vector<std::string>& declared_types) {
  std::vector<AnswerColumn> columns;
  std::set<std::string> taken;
  for (std::string& n : AnswerTableColumnNames(names)) {
    const size_t i = columns.size();
    taken.insert(text::Lower(n));
    columns.push_back({std::move(n), i < declared_types.size() ? declared_types[i] : ""});
  }
  // The hidden columns take names the answer left free: run_id, else
  // querypilot_run_id, else querypilot_run_id_2, ...
  auto hidden = [&](const std::string& plain, const char* type) {
    std::string name = plain;
    if (taken.count(name)) name = "querypilot_" + plain;
    for (int k = 2; taken.count(name); ++k) name = fmt::format("querypilot_{}_{}", plain, k);
    taken.insert(name);
    columns.push_back({std::move(name), type, true});
  };
  hidden("run_id", "INTEGER");
  hidden("sql", "TEXT");
  hidden("confidence", "INTEGER");
  hidden("confidence_reason", "TEXT");
  return columns;
}

std::shared_ptr<AnswerTableSpec> AnswerTableSpecFor(const std::string& question,
                                                    const RunResult& run) {
  auto spec = std::make_shared<AnswerTableSpec>();
  spec->question = question;
  spec->run_id = run.run_id;
  spec->sql = run.sql;
  spec->confidence = run.confidence;
  spec->confidence_reason = run.confidence_reason;
  const std::vector<std::string>& names = run.query->column_names();
  std::vector<std::string> types;
  if (Host().column_decltype) {
    for (size_t i = 0; i < names.size(); ++i) {
      const char* t = sqlite3_column_decltype(run.query->statement(), static_cast<int>(i));
      types.emplace_back(t ? t : "");
    }
  }
  spec->columns = AnswerTableColumns(names, types);
  spec->answer_columns = static_cast<int>(names.size());
  return spec;
}

std::shared_ptr<const AnswerTableSpec> AnswerTables::Find(const std::string& schema,
                                                          const std::string& name) {
  MutexLock lock(&mu_);
  auto it = tables_.find({text::Lower(schema), text::Lower(name)});
  return it == tables_.end() ? nullptr : it->second;
}

void AnswerTables::Keep(const std::string& schema, const std::string& name,
                        std::shared_ptr<const AnswerTableSpec> spec) {
  MutexLock lock(&mu_);
  tables_[{text::Lower(schema), text::Lower(name)}] = std::move(spec);
}

void AnswerTables::Forget(const std::string& schema, const std::string& name) {
  MutexLock lock(&mu_);
  tables_.erase({text::Lower(schema), text::Lower(name)});
}

AnswerStream::AnswerStream(std::unique_ptr<LiveQuery> live, StatementAnswers* owner,
                           History* history, int64_t record_run, RowsRecord record,
                           std::shared_ptr<AsyncRun> async_run)
    : live_(std::move(live)),
      owner_(owner),
      history_(history),
      record_run_(record == RowsRecord::kNothing ? 0 : record_run),
      record_(record),
      async_run_(std::move(async_run)) {
  owner_->RegisterOwn(live_->statement());
}

AnswerStream::~AnswerStream() {
  owner_->UnregisterOwn(live_->statement());
}

Result<bool> AnswerStream::Next(Row* row) {
  Result<bool> got = live_->Next(row);
  Ended(got.ok() ? Status::Ok() : got.status(), got.ok() && got.value(), live_->rows_returned());
  return got;
}

Result<size_t> AnswerStream::ReadAhead(const std::function<size_t(sqlite3_stmt*)>& visit) {
  Result<size_t> got = live_->ReadAhead(visit);
  Ended(got.ok() ? Status::Ok() : got.status(), got.ok() && got.value() > 0,
        live_->rows_returned());
  return got;
}

void AnswerStream::Close(int64_t returned) {
  if (record_run_ <= 0) return;
  // SQLite checks the interrupt before it calls back for the next row, and
  // the flag stays set until every statement of the connection has ended:
  // the statement closing this cursor now is one.
  if (!ConnectionInterrupted(sqlite3_db_handle(live_->statement()))) return;
  Ended(Status(ErrorKind::kInterrupted, "interrupted"), false, returned);
}

void AnswerStream::Ended(const Status& error, bool more, int64_t returned) {
  if (record_run_ <= 0 || (error.ok() && more)) return;
  // An answer table's scan read to its end changes nothing of its run.
  if (error.ok() && record_ == RowsRecord::kStops) return;
  const int64_t run_id = std::exchange(record_run_, 0);
  auto record = [&](History& history) {
    if (error.ok()) {
      history.SetRows(run_id, returned, live_->truncated());
    } else {
      history.SetStopped(run_id, returned, error);
    }
  };
  if (!async_run_) {
    record(*history_);
    return;
  }
  // Its history lives while the run names it: the connection that started
  // it forgets it under this lock before it closes.
  AsyncRun& r = *async_run_;
  MutexLock lock(&r.mu);
  if (r.history) record(*r.history);
}

}  // namespace querypilot
