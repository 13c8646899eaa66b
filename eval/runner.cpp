#include "eval/runner.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/base/text.h"
#include "agent/quality/findings.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/statement.h"
#include "eval/descriptions.h"
#include "eval/replay.h"

namespace querypilot::eval {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Result<sqlite3*> OpenReadOnly(const std::string& path) {
  sqlite3* db = nullptr;
  std::string uri = "file:" + path + "?mode=ro";
  int rc = sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::InvalidArgument(fmt::format("cannot open {} read-only: {}", path, msg));
  }
  return db;
}

Status Exec(sqlite3* db, const std::string& sql, const std::vector<std::string>& args = {}) {
  Result<Statement> stmt = Statement::Prepare(db, sql);
  if (!stmt.ok()) return stmt.status();
  for (size_t i = 0; i < args.size(); ++i) stmt->Bind(static_cast<int>(i + 1), args[i]);
  while (true) {
    int rc = stmt->Step();
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return Status::Internal(fmt::format("{}: {}", sql, sqlite3_errmsg(db)));
  }
}

// A connection with the extension loaded and configured for the run.
// The parts of an attempt's reflection JSON that the report counts.
void ReadReflection(const std::string& text, AttemptScore& a) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  a.flagged = a.error_type.empty() && j.value("should_refine", false);
  a.strategy = j.value("strategy", "");
  for (const auto& i : j.value("issues", nlohmann::json::array())) {
    std::string kind = i.value("kind", "");
    // TierNamed: a note is "warning" in reflections recorded before it was "note".
    const std::optional<Tier> tier = TierNamed(i.value("severity", ""));
    if (a.error_type.empty() && tier == Tier::kCritical) a.critical.push_back(kind);
    if (a.error_type.empty() && tier == Tier::kNote) a.notes.push_back(kind);
    const std::optional<Finding> f = FindingNamed(kind);
    if (f == Finding::kValueNotFound || f == Finding::kValueElsewhere ||
        f == Finding::kValueMissing) {
      GroundingFinding g;
      g.kind = kind;
      g.literal = i.value("literal", "");
      g.column = i.value("column", "");
      g.values = i.value("values", std::vector<std::string>{});
      a.grounding.push_back(std::move(g));
    }
  }
}

class AskConnection {
 public:
  ~AskConnection() { sqlite3_close(db_); }
  static Result<std::unique_ptr<AskConnection>> Open(const std::string& path, const RunSpec& spec,
                                                     const std::string& replay_url) {
    Result<sqlite3*> db = OpenReadOnly(path);
    if (!db.ok()) return db.status();
    auto conn = std::unique_ptr<AskConnection>(new AskConnection(db.value()));
    conn->evidence_ = spec.evidence;
    sqlite3_db_config(conn->db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, nullptr);
    char* err = nullptr;
    if (sqlite3_load_extension(conn->db_, spec.extension_path.c_str(), nullptr, &err) !=
        SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return Status::InvalidArgument(
          fmt::format("cannot load the extension {}: {}", spec.extension_path, msg));
    }
    sqlite3_db_config(conn->db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
    std::vector<std::pair<std::string, std::string>> settings = {
        {"max_attempts", std::to_string(spec.max_attempts)},
        {"sql_timeout_ms", std::to_string(spec.timeout_ms)},
        {"max_rows", "0"}};
    if (!replay_url.empty()) {
      // A placeholder key, so that no key from the environment is sent even
      // to this loopback server.
      settings.insert(settings.end(), {{"provider", "openai"},
                                       {"base_url", replay_url},
                                       {"model", "replay"},
                                       {"api_key", "replay"}});
    }
    // Every question is measured on its own model call, and with its
    // database's value index complete: how soon it is complete is
    // bench/values.py's measure, not accuracy's. Each run reads its
    // databases afresh, and writes nothing to the user's cache folder (no
    // kept value index, no history file: its runs are read back here).
    // A doubtful empty answer is scored as the answer it is (its run's SQL),
    // not as the error ask() gives a user for it (empty_doubtful).
    settings.insert(settings.end(), {{"answer_cache", "0"},
                                     {"value_index_wait_ms", "60000"},
                                     {"value_index_cache", "0"},
                                     {"history_file", "off"},
                                     {"empty_doubtful", "rows"}});
    settings.insert(settings.end(), spec.settings.begin(), spec.settings.end());
    for (const auto& [key, value] : settings) {
      if (Status st = Exec(conn->db_, "SELECT agent_config(?1, ?2)", {key, value}); !st.ok()) {
        return Status::InvalidArgument(fmt::format("agent_config('{}'): {}", key, st.message()));
      }
    }
    // Every value read before the first question: on a file of more than
    // 1 MiB, asks read values within a time budget, so without this a
    // prompt's value hints (and every request that repeats the prompt, such
    // as a correction) would depend on how busy the machine is.
    if (Status st = Exec(conn->db_, "SELECT agent_index()", {}); !st.ok()) {
      return Status::InvalidArgument(fmt::format("agent_index(): {}", st.message()));
    }
    if (spec.descriptions) {
      // A description of a column the database lacks (a dataset's CSV may
      // be out of step) is left out, as agent_describe refuses it.
      for (const Description& d : LoadDescriptions(path)) {
        (void)Exec(conn->db_, "SELECT agent_describe(?1, ?2)", {d.Target(), d.text});
      }
    }
    return conn;
  }

  // Runs one question, reading every row as a client would.
  void Ask(const Question& q, QuestionResult& out) {
    last_run_before_ask_ = LastRunId();
    Clock::time_point t0 = Clock::now();
    Result<Statement> stmt = Statement::Prepare(db_, "SELECT row FROM ask(?1)");
    if (!stmt.ok()) {
      out.error = stmt.status().message();
      return;
    }
    stmt->Bind(1, evidence_ ? q.AskText() : q.question);
    int rc;
    while ((rc = stmt->Step()) == SQLITE_ROW) ++out.ask_rows;
    if (rc != SQLITE_DONE) out.error = sqlite3_errmsg(db_);
    out.latency_ms = MsSince(t0);
  }

  // Reads the run the last Ask() made, and its attempts, back from the
  // history tables. A question refused before any run (an empty one, say)
  // leaves `out` with its error and no run.
  void ReadRun(QuestionResult& out) {
    Result<Statement> run = Statement::Prepare(
        db_,
        "SELECT id, status, attempts, llm_calls, prompt_tokens, completion_tokens, llm_ms, error, "
        "provider, model, answer_attempt, duration_ms, "
        "(SELECT total(value) FROM json_each(node_times) WHERE key NOT LIKE '%/%'), advice, sql, "
        "confidence, json_extract(samples, '$.verdict'), samples, review "
        "FROM agent_runs WHERE id > ?1 ORDER BY id DESC LIMIT 1");
    if (!run.ok()) return;
    run->Bind(1, std::to_string(last_run_before_ask_));
    if (run->Step() != SQLITE_ROW) return;
    int64_t id = run->ColumnInt(0);
    out.status = run->ColumnText(1);
    out.attempts = static_cast<int>(run->ColumnInt(2));
    out.llm_calls = static_cast<int>(run->ColumnInt(3));
    out.prompt_tokens = run->ColumnIsNull(4) ? -1 : run->ColumnInt(4);
    out.completion_tokens = run->ColumnIsNull(5) ? -1 : run->ColumnInt(5);
    out.llm_ms = sqlite3_column_double(run->get(), 6);
    if (out.error.empty() && out.status != "ok") out.error = run->ColumnText(7);
    provider_ = fmt::format("{} {}", run->ColumnText(8), run->ColumnText(9));
    out.answer_attempt = static_cast<int>(run->ColumnInt(10));
    out.duration_ms = sqlite3_column_double(run->get(), 11);
    out.node_ms_sum = sqlite3_column_double(run->get(), 12);
    out.advice = run->ColumnText(13);
    out.answer_sql = out.status == "ok" ? run->ColumnText(14) : "";
    out.confidence = run->ColumnIsNull(15) ? -1 : static_cast<int>(run->ColumnInt(15));
    out.samples_verdict = run->ColumnText(16);
    out.samples = run->ColumnText(17);
    out.review = run->ColumnText(18);
    Result<Statement> attempts = Statement::Prepare(
        db_,
        "SELECT attempt, sql, error_type, reflection FROM agent_attempts WHERE run_id = ?1 "
        "ORDER BY attempt");
    if (!attempts.ok()) return;
    attempts->Bind(1, std::to_string(id));
    while (attempts->Step() == SQLITE_ROW) {
      AttemptScore a;
      a.attempt = static_cast<int>(attempts->ColumnInt(0));
      a.sql = attempts->ColumnText(1);
      a.error_type = attempts->ColumnText(2);
      ReadReflection(attempts->ColumnText(3), a);
      out.attempt_scores.push_back(std::move(a));
    }
  }

 private:
  explicit AskConnection(sqlite3* db) : db_(db) {}
  int64_t LastRunId() {
    Result<Statement> last = Statement::Prepare(db_, "SELECT coalesce(max(id), 0) FROM agent_runs");
    return last.ok() && last->Step() == SQLITE_ROW ? last->ColumnInt(0) : 0;
  }
  sqlite3* db_;
  bool evidence_ = true;
  int64_t last_run_before_ask_ = 0;
  std::string provider_;

 public:
  // "<provider> <model>" of the last run read.
  const std::string& provider() const { return provider_; }
};

// Which of the gold SQL's text literals the question names, and which of
// those the first prompt's value hints list.
void CountValueHints(const Question& q, const std::string& user_text, QuestionResult& r) {
  static const std::string kHeader = "Values stored in the database that the question may mean:";
  size_t at = user_text.find(kHeader);
  std::string hints = at == std::string::npos ? "" : user_text.substr(at + kHeader.size());
  for (size_t p = 0; (p = hints.find("\n- ", p)) != std::string::npos; ++p) ++r.value_hints;
  const std::string question = text::Lower(q.question);
  std::set<std::string> named;
  for (const Token& t : TokenizeSql(q.gold_sql)) {
    if (t.kind != TokenKind::kString) continue;
    std::string literal = text::UnquoteSqlString(t.text);
    bool has_letter = std::any_of(literal.begin(), literal.end(), [](char c) {
      return std::isalpha(static_cast<unsigned char>(c));
    });
    if (has_letter && question.find(text::Lower(literal)) != std::string::npos)
      named.insert(literal);
  }
  for (const std::string& literal : named) {
    ++r.named_literals;
    r.hinted_literals += hints.find(" = " + text::QuoteSqlString(literal)) != std::string::npos;
  }
}

bool Primary(const Verdict& v, const std::string& scoring) {
  return scoring == "bag" ? v.bag_ok : v.set_ok;
}

}  // namespace

bool QuestionResult::FirstOk() const {
  return !attempt_scores.empty() && Primary(attempt_scores.front().verdict, scoring);
}

const AttemptScore* QuestionResult::Answer() const {
  if (status != "ok" || !error.empty() || attempt_scores.empty()) return nullptr;
  if (answer_attempt > 0 && answer_attempt <= static_cast<int>(attempt_scores.size())) {
    return &attempt_scores[answer_attempt - 1];
  }
  return &attempt_scores.back();
}

Verdict QuestionResult::FinalVerdict() const {
  // The user gets rows only from a successful run.
  const AttemptScore* a = Answer();
  if (!a) return Verdict{};
  return answer_sql.empty() ? a->verdict : answer_verdict;
}

bool QuestionResult::FinalOk() const {
  return Primary(FinalVerdict(), scoring);
}

bool QuestionResult::OkAfter(int k) const {
  if (attempt_scores.empty()) return false;
  if (k >= static_cast<int>(attempt_scores.size())) return FinalOk();
  return Primary(attempt_scores[k - 1].verdict, scoring);
}

std::string QuestionResult::FirstOutcome() const {
  if (attempt_scores.empty()) return status.empty() ? "no_run" : status;
  const AttemptScore& a = attempt_scores.front();
  if (!a.error_type.empty()) return a.error_type;
  return FirstOk() ? "correct" : "wrong_result";
}

ResultCache::~ResultCache() {
  for (auto& [path, db] : connections_) sqlite3_close(db);
}

const QueryResult& ResultCache::Get(const std::string& db_path, const std::string& sql,
                                    int timeout_ms) {
  auto key = std::make_pair(db_path, sql);
  auto it = results_.find(key);
  if (it != results_.end()) return it->second;
  auto conn = connections_.find(db_path);
  if (conn == connections_.end()) {
    Result<sqlite3*> db = OpenReadOnly(db_path);
    if (!db.ok()) {
      QueryResult failed;
      failed.error = db.status().message();
      return results_.emplace(key, std::move(failed)).first->second;
    }
    sqlite3_exec(db.value(), "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
    conn = connections_.emplace(db_path, db.value()).first;
  }
  return results_.emplace(key, ExecuteForScoring(conn->second, sql, timeout_ms)).first->second;
}

Result<RunOutput> RunEvaluation(const std::vector<Question>& questions, const RunSpec& spec,
                                ResultCache& cache, const Progress& progress) {
  RunOutput out;
  out.spec = spec;
  Clock::time_point started = Clock::now();

  std::unique_ptr<ReplayServer> replay;
  std::vector<const Question*> todo;
  if (spec.replay) {
    replay = std::make_unique<ReplayServer>();
    replay->SetReviewReplies(spec.review_replies);
    if (Status st = replay->Start(); !st.ok()) return st;
    out.provider = "replay";
    out.tokens_estimated = true;
    // Questions of the databases the file covers; the rest are not its business.
    std::set<std::string> covered;
    for (const auto& [key, p] : spec.replay->by_question) covered.insert(key.first);
    size_t matched = 0;
    for (const Question& q : questions) {
      if (!covered.count(q.db_id)) continue;
      if (spec.replay->Find(q)) {
        todo.push_back(&q);
        ++matched;
      } else {
        ++out.without_prediction;
      }
    }
    out.unmatched_predictions = spec.replay->by_question.size() - matched;
  } else {
    for (const Question& q : questions) todo.push_back(&q);
  }

  if (spec.limit > 0 && todo.size() > spec.limit) todo.resize(spec.limit);
  std::map<std::string, std::unique_ptr<AskConnection>> connections;
  size_t correct = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    const Question& q = *todo[i];
    auto it = connections.find(q.db_path);
    if (it == connections.end()) {
      auto conn = AskConnection::Open(q.db_path, spec, replay ? replay->base_url() : "");
      if (!conn.ok()) return conn.status();
      it = connections.emplace(q.db_path, std::move(conn).value()).first;
    }
    QuestionResult r;
    r.id = q.id;
    r.dataset = q.dataset;
    r.db_id = q.db_id;
    r.difficulty = q.difficulty;
    r.scoring = q.scoring;
    if (replay) replay->Expect(q.question, *spec.replay->Find(q));
    it->second->Ask(q, r);
    it->second->ReadRun(r);
    if (!replay) out.provider = it->second->provider();
    if (replay) {
      ReplayServer::Observed seen = replay->observed();
      r.prompt_chars = static_cast<int64_t>(seen.first_prompt_chars);
      CountValueHints(q, seen.first_user_text, r);
      if (seen.rules_differ) ++out.prompt_drift;
      r.review_requests = seen.review_requests;
      r.review_missing = seen.review_missing;
      if (seen.mismatches > 0) {
        return Status::Internal(
            fmt::format("question {}: the replay model got a request without the question", q.id));
      }
    }

    const QueryResult& gold = cache.Get(q.db_path, q.gold_sql, spec.timeout_ms);
    r.gold_failed = !gold.ok;
    const bool ordered = HasOrderBy(q.gold_sql);
    for (AttemptScore& a : r.attempt_scores) {
      if (!a.error_type.empty() || a.sql.empty()) continue;
      const QueryResult& pred = cache.Get(q.db_path, a.sql, spec.timeout_ms);
      a.verdict = Compare(gold, pred, ordered);
    }
    r.gold_sql = q.gold_sql;
    for (const Token& t : TokenizeSql(q.gold_sql)) {
      if (t.kind == TokenKind::kString && t.text.size() >= 2) {
        r.gold_literals.push_back(text::UnquoteSqlString(t.text));
      }
    }
    if (const AttemptScore* answer = r.Answer()) {
      const std::string& sql = r.answer_sql.empty() ? answer->sql : r.answer_sql;
      const QueryResult& final_result = cache.Get(q.db_path, sql, spec.timeout_ms);
      r.answer_verdict = Compare(gold, final_result, ordered);
      r.rows_consistent =
          final_result.ok && static_cast<int64_t>(final_result.rows.size()) == r.ask_rows;
    }
    if (!r.gold_failed && r.FinalOk()) ++correct;
    out.questions.push_back(std::move(r));
    if (progress) progress(i + 1, todo.size(), correct);
  }
  out.wall_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return out;
}

}  // namespace querypilot::eval
