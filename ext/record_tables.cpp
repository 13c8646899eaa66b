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
#include <new>
#include <string>
#include <vector>

#include "agent/session/session.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// What each registration of the module holds: the connection's session and
// the row of RecordTables() it shows.
struct RecordTableRef {
  std::shared_ptr<Session> session;
  const RecordTableSpec* table = nullptr;
};

// One module for every record table; the table's columns and rows come from
// its row (RecordTableSpec), its rows a snapshot taken by xFilter.
struct RecordTableModule {
  struct Vtab {
    sqlite3_vtab base{};
    std::shared_ptr<Session> session;
    const RecordTableSpec* table = nullptr;
    int key = -1;  // the place of the table's key column (RecordTableSpec::key); -1: none
  };
  struct Cursor {
    sqlite3_vtab_cursor base{};
    std::unique_ptr<RecordRows> rows;
    size_t index = 0;
  };
  // What BestIndex chose, as idxNum: the key's value is argv[0], and the
  // rows come in the key's order, ascending or descending.
  static constexpr int kKeyEquals = 1, kAscending = 2, kDescending = 4;

  static int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
                     char** err) noexcept {
    try {
      const auto& ref = *static_cast<RecordTableRef*>(aux);
      std::string decl = "CREATE TABLE x(";
      const auto& cols = ref.table->columns();
      int key = -1;
      for (size_t i = 0; i < cols.size(); ++i) {
        decl += (i ? ", " : "") + cols[i];
        if (ref.table->key && cols[i].starts_with(std::string(ref.table->key) + " "))
          key = static_cast<int>(i);
      }
      decl += ")";
      int rc = sqlite3_declare_vtab(db, decl.c_str());
      if (rc != SQLITE_OK) return rc;
      sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
      auto* vtab = new Vtab();
      vtab->session = ref.session;
      vtab->table = ref.table;
      vtab->key = key;
      *out = &vtab->base;
      return SQLITE_OK;
    } catch (const std::bad_alloc&) {
      return SQLITE_NOMEM;
    } catch (...) {
      *err = sqlite3_mprintf("querypilot history: could not connect the virtual table");
      return SQLITE_ERROR;
    }
  }
  static int Disconnect(sqlite3_vtab* vtab) noexcept {
    delete reinterpret_cast<Vtab*>(vtab);
    return SQLITE_OK;
  }
  // A table's key column (agent_runs.id, agent_attempts.run_id) serves
  // `key = value` (the rows of one run, not every run shown) and ORDER BY
  // key (with LIMIT, SQLite reads the first rows only). SQLite still checks
  // the equality: a value that is not an integer is left to it.
  static int BestIndex(sqlite3_vtab* base, sqlite3_index_info* info) noexcept {
    const int key = reinterpret_cast<Vtab*>(base)->key;
    int chosen = 0;
    for (int i = 0; key >= 0 && i < info->nConstraint; ++i) {
      const auto& c = info->aConstraint[i];
      if (!c.usable || c.iColumn != key || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
      info->aConstraintUsage[i].argvIndex = 1;
      chosen |= kKeyEquals;
      break;
    }
    // Rows of one key come in any order; the order of several (an IN list,
    // read one value at a time) is left to SQLite.
    if (key >= 0 && !(chosen & kKeyEquals) && info->nOrderBy == 1 &&
        info->aOrderBy[0].iColumn == key) {
      info->orderByConsumed = 1;
      chosen |= info->aOrderBy[0].desc ? kDescending : kAscending;
    }
    info->idxNum = chosen;
    info->estimatedCost = (chosen & kKeyEquals) ? 10 : 1000;
    info->estimatedRows = (chosen & kKeyEquals) ? 2 : 100;
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
  static int Filter(sqlite3_vtab_cursor* base, int chosen, const char*, int argc,
                    sqlite3_value** argv) noexcept {
    auto* cur = reinterpret_cast<Cursor*>(base);
    return GuardVtab(base->pVtab, "querypilot history", [&] {
      const Vtab& vtab = *reinterpret_cast<Vtab*>(base->pVtab);
      cur->rows.reset();
      cur->index = 0;
      if (Status st = vtab.session->Reachable(vtab.table->name); !st.ok()) {
        SetVtabError(base->pVtab, st.message());
        return SQLITE_ERROR;
      }
      RecordQuery query;
      if ((chosen & kKeyEquals) && argc >= 1 && sqlite3_value_type(argv[0]) == SQLITE_INTEGER)
        query.key = sqlite3_value_int64(argv[0]);
      if (chosen & kAscending) query.order = RecordQuery::Order::kAscending;
      if (chosen & kDescending) query.order = RecordQuery::Order::kDescending;
      cur->rows = vtab.table->rows(*vtab.session, query);
      return SQLITE_OK;
    });
  }
  static int Next(sqlite3_vtab_cursor* base) noexcept {
    ++reinterpret_cast<Cursor*>(base)->index;
    return SQLITE_OK;
  }
  static int Eof(sqlite3_vtab_cursor* base) noexcept {
    auto* cur = reinterpret_cast<Cursor*>(base);
    return !cur->rows || cur->index >= cur->rows->size() ? 1 : 0;
  }
  static int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int i) noexcept {
    auto* cur = reinterpret_cast<Cursor*>(base);
    return GuardVtab(base->pVtab, "querypilot history", [&] {
      if (i < 0 || !cur->rows) return SQLITE_OK;
      const RecordCell cell = cur->rows->Cell(cur->index, static_cast<size_t>(i));
      ResultValue(ctx, cell.value);
      if (cell.json) sqlite3_result_subtype(ctx, 'J');
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

constexpr sqlite3_module kRecordTableModule = RecordTableModule::Module();

void ReleaseRecordTableRef(void* p) {
  delete static_cast<RecordTableRef*>(p);
}

}  // namespace

int RegisterRecordTables(sqlite3* db, const std::shared_ptr<Session>& session, char** err) {
  for (const RecordTableSpec& table : RecordTables()) {
    auto* ref = new RecordTableRef{session, &table};
    // On failure SQLite has already called the destructor for `ref`.
    int rc =
        sqlite3_create_module_v2(db, table.name, &kRecordTableModule, ref, ReleaseRecordTableRef);
    if (rc != SQLITE_OK) {
      *err = sqlite3_mprintf("querypilot: could not register module %s: %s", table.name,
                             sqlite3_errstr(rc));
      return rc;
    }
  }
  return SQLITE_OK;
}

}  // namespace querypilot::ext
