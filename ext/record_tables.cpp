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
#include "ext/record_tables.h"

#include <functional>
#include <string>
#include <vector>

#include "agent/session.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// A column of a record table: its declaration and how to read it from a record.
template <typename Record>
struct HistoryColumn {
  std::string declaration;  // "name TYPE"
  std::function<void(sqlite3_context*, const Record&)> read;
};

void ResultTextOrNull(sqlite3_context* ctx, const std::string& s) {
  if (s.empty()) {
    sqlite3_result_null(ctx);
  } else {
    ResultText(ctx, s);
  }
}

// agent_runs' and agent_attempts' columns: one per row of their field table
// (agent/memory/history.h), which says each one's name, type and value.
template <typename Record, size_t N>
std::vector<HistoryColumn<Record>> FieldColumns(const RecordField<Record> (&fields)[N]) {
  std::vector<HistoryColumn<Record>> cols;
  for (const RecordField<Record>& f : fields) {
    cols.push_back({std::string(f.column) + " " + std::string(DeclaredType(f)),
                    [&f](sqlite3_context* c, const Record& r) {
                      ShownValue shown = ShowField(f, r);
                      ResultValue(c, shown.value);
                      if (shown.json) sqlite3_result_subtype(c, 'J');
                    }});
  }
  return cols;
}

const std::vector<HistoryColumn<RunRecord>>& RunColumns() {
  static const std::vector<HistoryColumn<RunRecord>> cols = FieldColumns(kRunFields);
  return cols;
}

const std::vector<HistoryColumn<AttemptRecord>>& AttemptColumns() {
  static const std::vector<HistoryColumn<AttemptRecord>> cols = FieldColumns(kAttemptFields);
  return cols;
}

const std::vector<HistoryColumn<MetricRecord>>& MetricColumns() {
  static const std::vector<HistoryColumn<MetricRecord>> cols = {
      {"metric TEXT", [](auto* c, const MetricRecord& m) { ResultText(c, m.metric); }},
      {"value NUMERIC",
       [](auto* c, const MetricRecord& m) {
         if (m.value && m.kind == MetricKind::kCount) {
           sqlite3_result_int64(c, static_cast<sqlite3_int64>(*m.value));
         } else if (m.value) {
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
      {"is_default INTEGER",
       [](auto* c, const PromptRecord& p) { sqlite3_result_int(c, p.is_default); }},
      {"description TEXT", [](auto* c, const PromptRecord& p) { ResultText(c, p.description); }},
  };
  return cols;
}

// One module per record type; the table's rows are a snapshot taken by xFilter.
template <typename Record>
struct HistoryTable {
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
  static const char* Name();

  static int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
                     char** err) noexcept {
    std::string decl;
    try {
      decl = "CREATE TABLE x(";
      const auto& cols = Cols();
      for (size_t i = 0; i < cols.size(); ++i) {
        decl += (i ? ", " : "") + cols[i].declaration;
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
      const Session& session = *reinterpret_cast<Vtab*>(base->pVtab)->session;
      cur->rows.clear();
      cur->index = 0;
      if (Status st = session.Reachable(Name()); !st.ok()) {
        SetVtabError(base->pVtab, st.message());
        return SQLITE_ERROR;
      }
      cur->rows = Snapshot(session);
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
const std::vector<HistoryColumn<RunRecord>>& HistoryTable<RunRecord>::Cols() {
  return RunColumns();
}
template <>
const char* HistoryTable<RunRecord>::Name() {
  return "agent_runs";
}
template <>
std::vector<RunRecord> HistoryTable<RunRecord>::Snapshot(const Session& s) {
  return s.Runs();
}
template <>
const std::vector<HistoryColumn<AttemptRecord>>& HistoryTable<AttemptRecord>::Cols() {
  return AttemptColumns();
}
template <>
const char* HistoryTable<AttemptRecord>::Name() {
  return "agent_attempts";
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
const char* HistoryTable<MetricRecord>::Name() {
  return "agent_metrics";
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
const char* HistoryTable<PromptRecord>::Name() {
  return "agent_prompts";
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
const char* HistoryTable<Description>::Name() {
  return "agent_descriptions";
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
