/*
** The record tables: agent_runs, agent_attempts, agent_metrics,
** agent_prompts and agent_descriptions, read-only.
**
** Usage:
**
**   SELECT id, question, status, attempts, sql FROM agent_runs;
**   SELECT attempt, error_type, error, hint, diff FROM agent_attempts WHERE run_id = 3;
**   SELECT metric, value FROM agent_metrics;
**   SELECT name, is_default FROM agent_prompts;
**   SELECT target, description FROM agent_descriptions;
**
** One row per ask() run, and one per attempt within a run. The history lives
** in this connection's memory (never in the user's database), so it works on
** read-only databases and ends when the connection closes, unless
** history_file keeps it. Every table is eponymous-only and DIRECTONLY; each
** scan reads a snapshot the Session takes.
*/
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "ext/callback.h"
#include "ext/record_tables.h"

namespace querypilot::ext {
namespace {

// A column of a history table: its declaration and how to read it from a record.
template <typename Record>
struct HistoryColumn {
  const char* declaration;  // "name TYPE"
  std::function<void(sqlite3_context*, const Record&)> read;
};

void ResultTextOrNull(sqlite3_context* ctx, const std::string& s) {
  if (s.empty()) {
    sqlite3_result_null(ctx);
  } else {
    ResultText(ctx, s);
  }
}
void ResultCount(sqlite3_context* ctx, int64_t n) {
  if (n < 0) {
    sqlite3_result_null(ctx);  // the provider did not report it
  } else {
    sqlite3_result_int64(ctx, n);
  }
}
void ResultMs(sqlite3_context* ctx, double ms) { sqlite3_result_double(ctx, ms); }

// An attempt number, NULL for none (0).
void ResultAttempt(sqlite3_context* ctx, int attempt) {
  if (attempt > 0) {
    sqlite3_result_int(ctx, attempt);
  } else {
    sqlite3_result_null(ctx);
  }
}
// A list as a JSON array (subtype 'J', for json_each), NULL when empty.
template <typename T>
void ResultJsonArrayOrNull(sqlite3_context* ctx, const std::vector<T>& items) {
  if (items.empty()) {
    sqlite3_result_null(ctx);
    return;
  }
  ResultText(ctx, nlohmann::json(items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  sqlite3_result_subtype(ctx, 'J');
}

// Milliseconds per node as a JSON object in the order the nodes ran (subtype
// 'J'), to the microsecond; NULL for a run recorded without them.
void ResultNodeTimes(sqlite3_context* ctx, const std::vector<std::pair<std::string, double>>& times) {
  if (times.empty()) {
    sqlite3_result_null(ctx);
    return;
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [node, ms] : times) j[node] = std::round(ms * 1000.0) / 1000.0;
  ResultText(ctx, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  sqlite3_result_subtype(ctx, 'J');
}

const std::vector<HistoryColumn<RunRecord>>& RunColumns() {
  static const std::vector<HistoryColumn<RunRecord>> cols = {
      {"id INTEGER", [](auto* c, const RunRecord& r) { sqlite3_result_int64(c, r.id); }},
      {"question TEXT", [](auto* c, const RunRecord& r) { ResultText(c, r.question); }},
      {"status TEXT", [](auto* c, const RunRecord& r) { ResultText(c, std::string(RunStatusName(r.status))); }},
      {"sql TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.sql); }},
      {"attempts INTEGER", [](auto* c, const RunRecord& r) { sqlite3_result_int(c, r.attempts); }},
      {"error TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.error); }},
      {"error_type TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.error_type); }},
      {"reflection TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.reflection); }},
      {"answer_attempt INTEGER",
       [](auto* c, const RunRecord& r) {
         if (r.answer_attempt > 0) {
           sqlite3_result_int(c, r.answer_attempt);
         } else {
           sqlite3_result_null(c);
         }
       }},
      {"rows INTEGER",
       [](auto* c, const RunRecord& r) {
         if (r.rows) {
           sqlite3_result_int64(c, *r.rows);
         } else {
           sqlite3_result_null(c);
         }
       }},
      {"truncated INTEGER", [](auto* c, const RunRecord& r) { sqlite3_result_int(c, r.truncated); }},
      {"provider TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.provider); }},
      {"model TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.model); }},
      {"llm_calls INTEGER", [](auto* c, const RunRecord& r) { sqlite3_result_int(c, r.llm_calls); }},
      {"duration_ms REAL", [](auto* c, const RunRecord& r) { ResultMs(c, r.duration_ms); }},
      {"llm_ms REAL", [](auto* c, const RunRecord& r) { ResultMs(c, r.llm_ms); }},
      {"prompt_tokens INTEGER", [](auto* c, const RunRecord& r) { ResultCount(c, r.prompt_tokens); }},
      {"completion_tokens INTEGER",
       [](auto* c, const RunRecord& r) { ResultCount(c, r.completion_tokens); }},
      {"created_at TEXT", [](auto* c, const RunRecord& r) { ResultText(c, r.created_at); }},
      {"clarifications TEXT", [](auto* c, const RunRecord& r) { ResultJsonArrayOrNull(c, r.clarifications); }},
      {"examples TEXT", [](auto* c, const RunRecord& r) { ResultJsonArrayOrNull(c, r.examples); }},
      {"feedback TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.feedback); }},
      {"explanation TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.explanation); }},
      {"session TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.session); }},
      {"standalone_question TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.standalone); }},
      {"cached_from INTEGER",
       [](auto* c, const RunRecord& r) {
         if (r.cached_from > 0) {
           sqlite3_result_int64(c, r.cached_from);
         } else {
           sqlite3_result_null(c);
         }
       }},
      {"node_times TEXT", [](auto* c, const RunRecord& r) { ResultNodeTimes(c, r.node_times); }},
      {"advice TEXT",
       [](auto* c, const RunRecord& r) {
         std::string text;
         for (const std::string& a : r.advice) text += (text.empty() ? "" : "\n") + a;
         ResultTextOrNull(c, text);
       }},
      {"stood_by INTEGER", [](auto* c, const RunRecord& r) { ResultAttempt(c, r.stood_by); }},
      {"not_kept TEXT", [](auto* c, const RunRecord& r) { ResultTextOrNull(c, r.not_kept); }},
  };
  return cols;
}

const std::vector<HistoryColumn<AttemptRecord>>& AttemptColumns() {
  static const std::vector<HistoryColumn<AttemptRecord>> cols = {
      {"run_id INTEGER", [](auto* c, const AttemptRecord& a) { sqlite3_result_int64(c, a.run_id); }},
      {"attempt INTEGER", [](auto* c, const AttemptRecord& a) { sqlite3_result_int(c, a.attempt); }},
      {"sql TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.sql); }},
      {"error_type TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.error_type); }},
      {"error TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.error); }},
      {"hint TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.hint); }},
      {"strategy TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.strategy); }},
      {"diff TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.diff); }},
      {"reply TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.reply); }},
      {"reflection TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.reflection); }},
      {"prompt_tokens INTEGER",
       [](auto* c, const AttemptRecord& a) { ResultCount(c, a.prompt_tokens); }},
      {"completion_tokens INTEGER",
       [](auto* c, const AttemptRecord& a) { ResultCount(c, a.completion_tokens); }},
      {"llm_ms REAL", [](auto* c, const AttemptRecord& a) { ResultMs(c, a.llm_ms); }},
      {"exec_ms REAL", [](auto* c, const AttemptRecord& a) { ResultMs(c, a.exec_ms); }},
      {"model TEXT", [](auto* c, const AttemptRecord& a) { ResultTextOrNull(c, a.model); }},
      {"stood_by INTEGER", [](auto* c, const AttemptRecord& a) { ResultAttempt(c, a.stood_by); }},
  };
  return cols;
}

const std::vector<HistoryColumn<MetricRecord>>& MetricColumns() {
  static const std::vector<HistoryColumn<MetricRecord>> cols = {
      {"metric TEXT", [](auto* c, const MetricRecord& m) { ResultText(c, m.metric); }},
      {"value REAL",
       [](auto* c, const MetricRecord& m) {
         if (m.value) {
           sqlite3_result_double(c, *m.value);
         } else {
           sqlite3_result_null(c);
         }
       }},
      {"description TEXT", [](auto* c, const MetricRecord& m) { ResultText(c, m.description); }},
  };
  return cols;
}

const std::vector<HistoryColumn<PromptRecord>>& PromptColumns() {
  static const std::vector<HistoryColumn<PromptRecord>> cols = {
      {"name TEXT", [](auto* c, const PromptRecord& p) { ResultText(c, p.name); }},
      {"text TEXT", [](auto* c, const PromptRecord& p) { ResultText(c, p.text); }},
      {"is_default INTEGER", [](auto* c, const PromptRecord& p) { sqlite3_result_int(c, p.is_default); }},
      {"description TEXT", [](auto* c, const PromptRecord& p) { ResultText(c, p.description); }},
  };
  return cols;
}

// One module per record type; the table's rows are a snapshot taken by xFilter.
template <typename Record>
struct HistoryTable {
  using Columns = const std::vector<HistoryColumn<Record>>& (*)();

  struct Vtab {
    sqlite3_vtab base{};
    std::shared_ptr<Session> session;
  };
  struct Cursor {
    sqlite3_vtab_cursor base{};
    std::vector<Record> rows;
    size_t index = 0;
  };

  static const std::vector<HistoryColumn<Record>>& Cols();
  static std::vector<Record> Snapshot(const Session& session);

  static int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
                     char** err) noexcept {
    std::string decl;
    try {
      decl = "CREATE TABLE x(";
      const auto& cols = Cols();
      for (size_t i = 0; i < cols.size(); ++i) {
        decl += (i ? ", " : "") + std::string(cols[i].declaration);
      }
      decl += ")";
    } catch (...) {
      return SQLITE_NOMEM;
    }
    return ConnectDirectOnlyVtab<Vtab, std::shared_ptr<Session>>(db, aux, decl.c_str(), out, err,
                                                                   "querypilot history");
  }
  static int Disconnect(sqlite3_vtab* vtab) noexcept {
    delete reinterpret_cast<Vtab*>(vtab);
    return SQLITE_OK;
  }
  static int BestIndex(sqlite3_vtab*, sqlite3_index_info* info) noexcept {
    info->estimatedCost = 1000;
    info->estimatedRows = 100;
    return SQLITE_OK;
  }
  static int Open(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) noexcept {
    return GuardVtab(vtab, "querypilot history", [&] {
      *out = &(new Cursor())->base;
      return SQLITE_OK;
    });
  }
  static int Close(sqlite3_vtab_cursor* cur) noexcept {
    delete reinterpret_cast<Cursor*>(cur);
    return SQLITE_OK;
  }
  static int Filter(sqlite3_vtab_cursor* base, int, const char*, int, sqlite3_value**) noexcept {
    auto* cur = reinterpret_cast<Cursor*>(base);
    return GuardVtab(base->pVtab, "querypilot history", [&] {
      cur->rows = Snapshot(*reinterpret_cast<Vtab*>(base->pVtab)->session);
      cur->index = 0;
      return SQLITE_OK;
    });
  }
  static int Next(sqlite3_vtab_cursor* base) noexcept {
    ++reinterpret_cast<Cursor*>(base)->index;
    return SQLITE_OK;
  }
  static int Eof(sqlite3_vtab_cursor* base) noexcept {
    auto* cur = reinterpret_cast<Cursor*>(base);
    return cur->index >= cur->rows.size() ? 1 : 0;
  }
  static int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int i) noexcept {
    auto* cur = reinterpret_cast<Cursor*>(base);
    return GuardVtab(base->pVtab, "querypilot history", [&] {
      const auto& cols = Cols();
      if (i >= 0 && static_cast<size_t>(i) < cols.size()) cols[i].read(ctx, cur->rows[cur->index]);
      return SQLITE_OK;
    });
  }
  static int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
    *rowid = static_cast<sqlite3_int64>(reinterpret_cast<Cursor*>(base)->index + 1);
    return SQLITE_OK;
  }

  static sqlite3_module Module() {
    sqlite3_module m{};
    m.iVersion = 0;
    m.xConnect = Connect;  // xCreate stays null: eponymous-only
    m.xBestIndex = BestIndex;
    m.xDisconnect = Disconnect;
    m.xOpen = Open;
    m.xClose = Close;
    m.xFilter = Filter;
    m.xNext = Next;
    m.xEof = Eof;
    m.xColumn = Column;
    m.xRowid = Rowid;
    return m;
  }
};

template <>
const std::vector<HistoryColumn<RunRecord>>& HistoryTable<RunRecord>::Cols() { return RunColumns(); }
template <>
std::vector<RunRecord> HistoryTable<RunRecord>::Snapshot(const Session& s) { return s.Runs(); }
template <>
const std::vector<HistoryColumn<AttemptRecord>>& HistoryTable<AttemptRecord>::Cols() {
  return AttemptColumns();
}
template <>
std::vector<AttemptRecord> HistoryTable<AttemptRecord>::Snapshot(const Session& s) {
  return s.Attempts();
}

template <>
const std::vector<HistoryColumn<MetricRecord>>& HistoryTable<MetricRecord>::Cols() {
  return MetricColumns();
}
template <>
std::vector<MetricRecord> HistoryTable<MetricRecord>::Snapshot(const Session& s) {
  return s.Metrics();
}

template <>
const std::vector<HistoryColumn<PromptRecord>>& HistoryTable<PromptRecord>::Cols() {
  return PromptColumns();
}
template <>
std::vector<PromptRecord> HistoryTable<PromptRecord>::Snapshot(const Session& s) {
  return s.Prompts();
}

const std::vector<HistoryColumn<Description>>& DescriptionColumns() {
  static const std::vector<HistoryColumn<Description>> cols = {
      {"target TEXT", [](auto* c, const Description& d) { ResultText(c, d.Target()); }},
      {"database TEXT", [](auto* c, const Description& d) { ResultText(c, d.database); }},
      {"table_name TEXT", [](auto* c, const Description& d) { ResultText(c, d.table); }},
      {"column_name TEXT", [](auto* c, const Description& d) { ResultTextOrNull(c, d.column); }},
      {"description TEXT", [](auto* c, const Description& d) { ResultText(c, d.text); }},
  };
  return cols;
}

template <>
const std::vector<HistoryColumn<Description>>& HistoryTable<Description>::Cols() {
  return DescriptionColumns();
}
template <>
std::vector<Description> HistoryTable<Description>::Snapshot(const Session& s) {
  return s.Descriptions();
}

}  // namespace

sqlite3_module kDescriptionsModule = HistoryTable<Description>::Module();
sqlite3_module kPromptsModule = HistoryTable<PromptRecord>::Module();
sqlite3_module kMetricsModule = HistoryTable<MetricRecord>::Module();
sqlite3_module kRunsModule = HistoryTable<RunRecord>::Module();
sqlite3_module kAttemptsModule = HistoryTable<AttemptRecord>::Module();

}  // namespace querypilot::ext
