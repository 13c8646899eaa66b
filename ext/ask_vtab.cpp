/*
** ask(QUESTION): a table-valued function that answers a question about the
** database with rows.
**
** Usage:
**
**   SELECT * FROM ask('Which five customers spent the most?');
**   SELECT row ->> '$.name' AS name FROM ask('Which five customers spent the most?');
**   SELECT run_id, sql FROM ask('How many orders are there?') LIMIT 1;
**   SELECT row, confidence, confidence_reason FROM ask('How many orders are there?');
**
** Each result row is one row of the answer, as a JSON object keyed by the
** answer's column names in order (column "row"). Hidden columns: run_id (the
** agent_runs id), sql (the SQL that produced the rows), confidence and
** confidence_reason (the run's: how sure the answer is, and why; a reason
** starts "low: " when the confidence is below 50) and question (the argument). The agent runs
** once per distinct question within one SQL statement, however often SQLite
** rescans the table.
**
** ask is an eponymous, DIRECTONLY virtual table: it cannot be used from a
** view or trigger, so a database's own schema can never make it run. The same
** module makes answer tables with real columns, CREATE VIRTUAL TABLE
** temp.name USING ask('question') (ext/answer_table.h): its xCreate is its
** xConnect, which keeps ask('q') eponymous, and each callback hands a table
** of such a kind (a row of kAskTableKinds) to that kind's module.
*/
#include "ext/ask_vtab.h"

#include <memory>
#include <string>

#include "agent/session/session.h"
#include "ext/answer_table.h"
#include "ext/ask_cursor.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// The kinds of table the ask module makes besides the eponymous ask('q'),
// each served by its own module: a new kind is one row.
constexpr AskTableKind kAskTableKinds[] = {
    {IsAnswerTableCreate, &kAnswerTableModule},
};

const sqlite3_module* KindOf(sqlite3_vtab* vtab) noexcept {
  return reinterpret_cast<const AskVtabHead*>(vtab)->kind;
}
sqlite3_vtab* VtabOf(sqlite3_vtab* vtab) noexcept {
  return vtab;
}
sqlite3_vtab* VtabOf(sqlite3_vtab_cursor* cursor) noexcept {
  return cursor->pVtab;
}

// One callback of the ask module (its `Slot`): a table of a kind of
// kAskTableKinds is served by that kind's module, the eponymous ask('q') by
// `Own`.
template <auto Slot, auto Own>
struct Served;
template <auto Slot, typename First, typename... Args, int (*Own)(First, Args...) noexcept>
struct Served<Slot, Own> {
  static int Call(First first, Args... args) noexcept {
    if (const sqlite3_module* kind = KindOf(VtabOf(first))) return (kind->*Slot)(first, args...);
    return Own(first, args...);
  }
};

int AskConnect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
               char** err) noexcept {
  for (const AskTableKind& kind : kAskTableKinds) {
    if (kind.creates(argc, argv)) return kind.module->xConnect(db, aux, argc, argv, out, err);
  }
  return ConnectDirectOnlyVtab<AskVtab, std::shared_ptr<Session>>(
      db, aux,
      "CREATE TABLE x(row TEXT, question TEXT HIDDEN, run_id INTEGER HIDDEN, sql TEXT HIDDEN, "
      "confidence INTEGER HIDDEN, confidence_reason TEXT HIDDEN)",
      out, err, "ask");
}

int AskDisconnect(sqlite3_vtab* vtab) noexcept {
  delete reinterpret_cast<AskVtab*>(vtab);
  return SQLITE_OK;
}

int AskDestroy(sqlite3_vtab* vtab) noexcept {
  return AskDisconnect(vtab);
}

int AskRename(sqlite3_vtab* vtab, const char*) noexcept {
  return GuardVtab(vtab, "ask", [&] {
    SetVtabError(vtab,
                 "ask(): an answer table cannot be renamed; create it again under the new name");
    return SQLITE_ERROR;
  });
}

// The message for ask() given more than its question.
constexpr const char* kOneArgument =
    "ask() takes one argument, the question: SELECT * FROM ask('How many orders are there?'). "
    "Its run_id, sql, confidence and confidence_reason columns are known only once the run has "
    "ended, so they take no value (to compare them with another table's column, write +run_id "
    "or +sql)";

// The question must be given as ask('...'): an equality constraint on the
// hidden question column. Without one there is no usable plan.
//
// ask() takes nothing else. SQLite hands a second and a third argument to the
// next HIDDEN columns, run_id and sql, as equality constraints, exactly as it
// hands `WHERE run_id = ...` or a join's `ON a.run_id = r.id`: nothing here
// tells them apart (series.c's hidden columns are all inputs; these two are
// outputs). Left to SQLite, ask('q', 'oops') compared every row's run_id with
// 'oops' and returned none, the run recorded as ok. So any usable equality on
// them is refused, with an error that says so. A plan refused with
// SQLITE_CONSTRAINT instead would leave a join with no plan at all ("no query
// solution", SQLite 3.40), not a better one. `+run_id` is not a constraint on
// the column: SQLite compares it itself.
int AskBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) noexcept {
  return GuardVtab(vtab, "ask", [&] {
    int question = -1;
    for (int i = 0; i < info->nConstraint; ++i) {
      const auto& c = info->aConstraint[i];
      if (c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
      if (c.iColumn == ASK_COLUMN_RUN_ID || c.iColumn == ASK_COLUMN_SQL ||
          c.iColumn == ASK_COLUMN_CONFIDENCE || c.iColumn == ASK_COLUMN_CONFIDENCE_REASON) {
        if (!c.usable) continue;  // another table's column: refused when it is usable
        SetVtabError(vtab, kOneArgument);
        return SQLITE_ERROR;
      }
      if (c.iColumn != ASK_COLUMN_QUESTION) continue;
      if (!c.usable) return SQLITE_CONSTRAINT;
      question = i;
    }
    if (question < 0) {
      SetVtabError(vtab, "ask() needs a question: SELECT * FROM ask('How many orders are there?')");
      return SQLITE_ERROR;
    }
    info->aConstraintUsage[question].argvIndex = 1;
    info->aConstraintUsage[question].omit = 1;
    // A model call is expensive: make the planner run it as few times as it can.
    info->estimatedCost = 1e6;
    info->estimatedRows = 25;
    return SQLITE_OK;
  });
}

int AskOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) noexcept {
  return GuardVtab(vtab, "ask", [&] {
    auto* cur = new AskCursor();
    cur->session = reinterpret_cast<AskVtab*>(vtab)->session;
    *out = &cur->base;
    return SQLITE_OK;
  });
}

int AskClose(sqlite3_vtab_cursor* base) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  GuardVtab(base->pVtab, "ask", [&] {
    cur->Leave();
    return SQLITE_OK;
  });
  delete cur;
  return SQLITE_OK;
}

int AskFilter(sqlite3_vtab_cursor* base, int, const char*, int argc,
              sqlite3_value** argv) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  sqlite3_vtab* vtab = base->pVtab;
  return GuardVtab(vtab, "ask", [&] {
    cur->Rewind();
    // A rescan keeps holding its answer until the lookup below, so that the
    // kept answer still counts as in use by this statement.
    std::shared_ptr<const StatementAnswer> previous = std::move(cur->answer);
    if (Status st = cur->session->Reachable("ask()"); !st.ok()) {
      SetVtabError(vtab, "ask(): " + st.message());
      return SQLITE_ERROR;
    }
    if (argc < 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
      SetVtabError(vtab, "ask(): the question is NULL");
      return SQLITE_ERROR;
    }
    const char* q = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
    if (!q) return SQLITE_NOMEM;
    cur->question.assign(q, static_cast<size_t>(sqlite3_value_bytes(argv[0])));
    Result<AskedRows> asked = cur->session->Ask(cur->question);
    if (!asked.ok()) {
      SetVtabError(vtab, "ask(): " + asked.status().message());
      return SQLITE_ERROR;
    }
    cur->answer = std::move(asked->answer);
    cur->live = std::move(asked->stream);
    return AdvanceRow(cur);
  });
}

int AskNext(sqlite3_vtab_cursor* base) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  return GuardVtab(base->pVtab, "ask", [&] { return AdvanceRow(cur); });
}

int AskEof(sqlite3_vtab_cursor* base) noexcept {
  return reinterpret_cast<AskCursor*>(base)->eof ? 1 : 0;
}

int AskColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) noexcept {
  return AskCursorColumn(base, ctx, column);
}

int AskRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
  *rowid = reinterpret_cast<AskCursor*>(base)->rowid;
  return SQLITE_OK;
}

}  // namespace

constinit sqlite3_module kAskModule = {
    /* iVersion    */ 0,
    /* xCreate     */ AskConnect,  // the same: eponymous, and answer tables
    /* xConnect    */ AskConnect,
    /* xBestIndex  */ Served<&sqlite3_module::xBestIndex, AskBestIndex>::Call,
    /* xDisconnect */ Served<&sqlite3_module::xDisconnect, AskDisconnect>::Call,
    /* xDestroy    */ Served<&sqlite3_module::xDestroy, AskDestroy>::Call,
    /* xOpen       */ Served<&sqlite3_module::xOpen, AskOpen>::Call,
    /* xClose      */ Served<&sqlite3_module::xClose, AskClose>::Call,
    /* xFilter     */ Served<&sqlite3_module::xFilter, AskFilter>::Call,
    /* xNext       */ Served<&sqlite3_module::xNext, AskNext>::Call,
    /* xEof        */ Served<&sqlite3_module::xEof, AskEof>::Call,
    /* xColumn     */ Served<&sqlite3_module::xColumn, AskColumn>::Call,
    /* xRowid      */ Served<&sqlite3_module::xRowid, AskRowid>::Call,
    /* xUpdate     */ nullptr,
    /* xBegin      */ nullptr,
    /* xSync       */ nullptr,
    /* xCommit     */ nullptr,
    /* xRollback   */ nullptr,
    /* xFindMethod */ nullptr,
    /* xRename     */ AskRename,
    /* xSavepoint  */ nullptr,
    /* xRelease    */ nullptr,
    /* xRollbackTo */ nullptr,
    /* xShadowName */ nullptr,
};

}  // namespace querypilot::ext
