// The session's private parts, shared by the files that implement Session
// (agent/session/*.cpp) and by nothing else: what a session holds (State),
// and the steps several of its methods take (WithAgent, Resolved, Shown).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/answers/answers.h"
#include "agent/base/thread_annotations.h"
#include "agent/config.h"
#include "agent/knowledge/descriptions.h"
#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "agent/memory/answer_cache.h"
#include "agent/memory/history.h"
#include "agent/memory/history_file.h"
#include "agent/providers/http.h"
#include "agent/providers/provider.h"
#include "agent/session/session.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/own_file.h"
#include "agent/sql/read_connection.h"

namespace querypilot {

// Counts an ask (or a prompt built as an ask builds it) in progress on the
// connection for as long as it lives, so that a nested one is refused.
class AskDepthGuard {
 public:
  explicit AskDepthGuard(std::atomic<int>& depth) : depth_(depth) { depth_.fetch_add(1); }
  ~AskDepthGuard() { depth_.fetch_sub(1); }
  AskDepthGuard(const AskDepthGuard&) = delete;
  AskDepthGuard& operator=(const AskDepthGuard&) = delete;

 private:
  std::atomic<int>& depth_;
};

inline const char* Getenv(const char* name) {
  return std::getenv(name);
}

// The provider `config` names, as ResolveProvider resolves it; once resolved,
// its secrets are known to `history` from then on, which takes them out of
// every text it keeps and of the errors and texts the session shows
// (Shown).
inline Result<ResolvedProvider> Resolved(const Config& config, History& history) {
  Result<ResolvedProvider> provider = ResolveProvider(config, Getenv);
  if (provider.ok()) history.KnowSecrets(ProviderSecrets(provider.value()));
  return provider;
}

// What leaves for SQL: `st`, or a text or its error, with every secret
// `history` knows taken out (Secrets::Scrub).
inline Status Shown(const History& history, const Status& st) {
  if (st.ok()) return st;
  return Status(st.kind(), history.Scrub(st.message()));
}
inline Result<std::string> Shown(const History& history, Result<std::string> r) {
  if (!r.ok()) return Shown(history, r.status());
  return history.Scrub(r.value());
}

// A run's answer as a statement keeps it: its id, SQL, confidence and its
// reason, and column names.
inline std::shared_ptr<StatementAnswer> AnswerOf(const RunResult& run) {
  auto answer = std::make_shared<StatementAnswer>();
  answer->run_id = run.run_id;
  answer->sql = run.sql;
  answer->confidence = run.confidence;
  answer->confidence_reason = run.confidence_reason;
  answer->column_names = run.query->column_names();
  return answer;
}
// The host's connection as generated SQL reaches it, with the functions the
// user allows besides SQLite's own as `cfg` sets them now (the setting was
// checked when it was set).
inline SqlTarget HostTarget(const std::shared_ptr<HostCheck>& check, const Config& cfg) {
  Result<std::set<std::string>> allowed = ParseFunctionNames(cfg.allow_functions);
  check->AllowFunctions(allowed.ok() ? std::move(allowed).value() : std::set<std::string>{});
  return SqlTarget::Host(check);
}

struct Session::State {
  explicit State(sqlite3* db)
      : registration(db),
        config(Config::FromEnvironment(Getenv, EnvironmentNames(), &environment_errors)),
        statement_answers(db) {}

  // Its files, known to the own-file checks of the process's other
  // connections while this session lives (agent/sql/own_file.h).
  HostConnectionRegistration registration;
  // Taken before the history's lock: the history is settled, attached and
  // read (Scrub) with the settings held.
  Mutex config_mu ACQUIRED_BEFORE(History::mu_);
  // QUERYPILOT_* variables read at load whose values could not be used
  // (declared before config, which fills it). One is forgotten once its
  // setting is set on the connection.
  std::vector<EnvironmentError> environment_errors GUARDED_BY(config_mu);
  Config config GUARDED_BY(config_mu);
  std::vector<Description> descriptions GUARDED_BY(config_mu);
  History history;
  // The history file this connection settled on (history_file, or the
  // default of its database): at the first call that reads or writes the
  // history, or when history_file is set. Null for none.
  bool history_settled GUARDED_BY(config_mu) = false;
  std::shared_ptr<HistoryFile> history_file GUARDED_BY(config_mu);
  std::string history_path GUARDED_BY(config_mu);  // its name; "" for none
  SchemaCache schema_cache;
  ValueIndexCache value_index;
  ReadConnection reader;
  AnswerCache answer_cache;
  CurlTransport transport;
  std::atomic<int> ask_depth{0};
  StatementAnswers statement_answers;
  AnswerTables answer_tables;
  // Work left for the connection's first call of QueryPilot's (Session's
  // constructor), run once by Reachable on the connection's thread.
  std::function<void()> first_call;
  std::once_flag first_call_once;
  // The connection's check connection, where generated SQL is judged
  // (agent/sql/check_connection.h). Declared last, so it goes first.
  std::shared_ptr<HostCheck> check;
};

template <typename F>
auto Session::WithAgent(F&& f, bool pause_for_model) {
  const Config cfg = config();
  AgentContext ctx;
  ctx.db = db_;
  ctx.pause_for_model = pause_for_model;
  ctx.sql = HostTarget(state_->check, cfg);
  // Held for the run: reads before a model call leave the host's files
  // unlocked (agent/sql/read_connection.h).
  const std::shared_ptr<sqlite3> reader = state_->reader.For(db_);
  if (reader.get() != db_) ctx.read_db = reader.get();
  // What the run reads there before its first model call is one read
  // transaction, which the agent ends once that reading is done; every model
  // call ends it before the call at the latest (ModelCalls::Call,
  // agent/model_calls.h), and this scope at the run's end.
  PreModelReads reads(ctx.read_db);
  if (ctx.read_db) ctx.pre_model_reads = &reads;
  ctx.config = &cfg;
  ctx.schema_cache = &state_->schema_cache;
  ctx.value_index = &state_->value_index;
  ctx.descriptions = Descriptions();
  ctx.answer_cache = &state_->answer_cache;
  ctx.history = &state_->history;
  Result<ResolvedProvider> provider = Resolved(cfg, state_->history);
  InterruptProbe probe(db_);
  std::unique_ptr<ProviderClient> client;
  if (provider.ok() && pause_for_model) {  // the model is called elsewhere
    ctx.provider_name = std::string(ProviderName(provider->kind));
    ctx.model = provider->model;
  } else if (provider.ok()) {
    ctx.provider_name = std::string(ProviderName(provider->kind));
    ctx.model = provider->model;
    // Ctrl-C in the shell (sqlite3_interrupt) stops a model call within
    // about 50 ms, on every SQLite version (agent/sql/interrupt.h).
    client = std::make_unique<ProviderClient>(provider.value(), ProviderOptionsFrom(cfg),
                                              &state_->transport,
                                              [&probe] { return probe.Interrupted(); });
    ctx.llm = client.get();
  } else {
    ctx.llm_status = provider.status();
    ctx.provider_name = cfg.provider;
    ctx.model = cfg.model;
  }
  return f(static_cast<const AgentContext&>(ctx));
}

}  // namespace querypilot
