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

#include <memory>
#include <string>
#include <vector>

#include "agent/session.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// One module per record table (Session::RecordTable), whose columns and rows
// the session gives; the table's rows are a snapshot taken by xFilter.
template <RecordTable kTable>
struct RecordTableModule {
  struct Vtab {
    sqlite3_vtab base{};
    std::shared_ptr<Session> session;
  };
  struct Cursor {
    sqlite3_vtab_cursor base{};
    std::vector<RecordRow> rows;
    size_t index = 0;
  };

  static int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
                     char** err) noexcept {
    std::string decl;
    try {
      decl = "CREATE TABLE x(";
      const auto& cols = Session::RecordColumns(kTable);
      for (size_t i = 0; i < cols.size(); ++i) {
        decl += (i ? ", " : "") + cols[i];
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
      if (Status st = session.Reachable(Session::RecordTableName(kTable)); !st.ok()) {
        SetVtabError(base->pVtab, st.message());
        return SQLITE_ERROR;
      }
      cur->rows = session.RecordRows(kTable);
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
      const RecordRow& row = cur->rows[cur->index];
      if (i >= 0 && static_cast<size_t>(i) < row.size()) {
        ResultValue(ctx, row[i].value);
        if (row[i].json) sqlite3_result_subtype(ctx, 'J');
      }
      return SQLITE_OK;
    });
  }
  static int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
    *rowid = static_cast<sqlite3_int64>(reinterpret_cast<Cursor*>(base)->index + 1);
    return SQLITE_OK;
  }

  static constexpr sqlite3_module Module() {
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

}  // namespace

constinit sqlite3_module kDescriptionsModule =
    RecordTableModule<RecordTable::kDescriptions>::Module();
constinit sqlite3_module kPromptsModule = RecordTableModule<RecordTable::kPrompts>::Module();
constinit sqlite3_module kMetricsModule = RecordTableModule<RecordTable::kMetrics>::Module();
constinit sqlite3_module kRunsModule = RecordTableModule<RecordTable::kRuns>::Module();
constinit sqlite3_module kAttemptsModule = RecordTableModule<RecordTable::kAttempts>::Module();

}  // namespace querypilot::ext
