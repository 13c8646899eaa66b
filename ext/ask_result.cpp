/*
** ask_result(RUN_ID [, WAIT_MS]): the asynchronous ask's answer
** (ask_start): the same columns as ask(), from the same cursor, and
** wait_ms, hidden. Its rows once the run's reply is in and checked here; an
** error that says "pending" (and how to wait) while the model has not
** answered.
**
** Usage:
**
**   SELECT ask_start('How many orders are there?');   -- 7
**   SELECT * FROM ask_result(7, 5000);
**
** Its cursor is ask()'s (ext/ask_cursor.h), and it is eponymous and
** DIRECTONLY as ask() is.
*/
#include "ext/ask_result.h"

#include <memory>
#include <string>
#include <utility>

#include "agent/session/session.h"
#include "ext/ask_cursor.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// ask_result's columns, matching the CREATE TABLE in ResultConnect; the run
// id and the wait are its arguments, in that order.
#define RESULT_COLUMN_ROW 0
#define RESULT_COLUMN_RUN_ID 1
#define RESULT_COLUMN_WAIT_MS 2
#define RESULT_COLUMN_QUESTION 3
#define RESULT_COLUMN_SQL 4
#define RESULT_COLUMN_CONFIDENCE 5
#define RESULT_COLUMN_CONFIDENCE_REASON 6

// idxNum bit: a wait was given.
constexpr int kWaitGiven = 1;

int ResultConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
                  char** err) noexcept {
  return ConnectDirectOnlyVtab<AskVtab, std::shared_ptr<Session>>(
      db, aux,
      "CREATE TABLE x(row TEXT, run_id INTEGER HIDDEN, wait_ms INTEGER HIDDEN, "
      "question TEXT HIDDEN, sql TEXT HIDDEN, confidence INTEGER HIDDEN, "
      "confidence_reason TEXT HIDDEN)",
      out, err, "ask_result");
}

int ResultDisconnect(sqlite3_vtab* vtab) noexcept {
  delete reinterpret_cast<AskVtab*>(vtab);
  return SQLITE_OK;
}

// The run id is required (ask_result(7)); the wait is optional. Equalities
// on the other hidden columns are refused as ask() refuses them.
int ResultBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) noexcept {
  return GuardVtab(vtab, "ask_result", [&] {
    int run_id = -1;
    int wait = -1;
    for (int i = 0; i < info->nConstraint; ++i) {
      const auto& c = info->aConstraint[i];
      if (c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
      if (c.iColumn >= RESULT_COLUMN_QUESTION) {
        if (!c.usable) continue;
        SetVtabError(vtab,
                     "ask_result() takes a run id and an optional wait in milliseconds: "
                     "SELECT * FROM ask_result(7, 5000)");
        return SQLITE_ERROR;
      }
      if (c.iColumn != RESULT_COLUMN_RUN_ID && c.iColumn != RESULT_COLUMN_WAIT_MS) continue;
      if (!c.usable) return SQLITE_CONSTRAINT;
      (c.iColumn == RESULT_COLUMN_RUN_ID ? run_id : wait) = i;
    }
    if (run_id < 0) {
      SetVtabError(vtab, "ask_result() needs a run id from ask_start: SELECT * FROM ask_result(7)");
      return SQLITE_ERROR;
    }
    info->aConstraintUsage[run_id].argvIndex = 1;
    info->aConstraintUsage[run_id].omit = 1;
    if (wait >= 0) {
      info->aConstraintUsage[wait].argvIndex = 2;
      info->aConstraintUsage[wait].omit = 1;
      info->idxNum = kWaitGiven;
    }
    info->estimatedCost = 1e6;
    info->estimatedRows = 25;
    return SQLITE_OK;
  });
}

int ResultOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) noexcept {
  return GuardVtab(vtab, "ask_result", [&] {
    auto* cur = new AskCursor();
    cur->session = reinterpret_cast<AskVtab*>(vtab)->session;
    *out = &cur->base;
    return SQLITE_OK;
  });
}

int ResultClose(sqlite3_vtab_cursor* base) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  GuardVtab(base->pVtab, "ask_result", [&] {
    cur->Leave();
    return SQLITE_OK;
  });
  delete cur;
  return SQLITE_OK;
}

int ResultFilter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc,
                 sqlite3_value** argv) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  sqlite3_vtab* vtab = base->pVtab;
  return GuardVtab(vtab, "ask_result", [&] {
    cur->Rewind();
    cur->answer.reset();
    if (Status st = cur->session->Reachable("ask_result()"); !st.ok()) {
      SetVtabError(vtab, "ask_result(): " + st.message());
      return SQLITE_ERROR;
    }
    if (argc < 1 || sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
      SetVtabError(vtab, "ask_result(): the first argument is a run id from ask_start");
      return SQLITE_ERROR;
    }
    int64_t wait_ms = 0;
    if ((idx_num & kWaitGiven) && argc >= 2) {
      if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER) {
        SetVtabError(vtab, "ask_result(): the wait is a whole number of milliseconds");
        return SQLITE_ERROR;
      }
      wait_ms = sqlite3_value_int64(argv[1]);
    }
    cur->wait_ms = wait_ms;
    Result<AskedRows> asked = cur->session->AskResult(sqlite3_value_int64(argv[0]), wait_ms);
    if (!asked.ok()) {
      SetVtabError(vtab, "ask_result(): " + asked.status().message());
      return SQLITE_ERROR;
    }
    cur->question = std::move(asked->question);
    cur->answer = std::move(asked->answer);
    cur->live = std::move(asked->stream);
    return AdvanceRow(cur);
  });
}

int ResultNext(sqlite3_vtab_cursor* base) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  return GuardVtab(base->pVtab, "ask_result", [&] { return AdvanceRow(cur); });
}

int ResultColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) noexcept {
  switch (column) {
    case RESULT_COLUMN_WAIT_MS:
      sqlite3_result_int64(ctx, reinterpret_cast<AskCursor*>(base)->wait_ms);
      return SQLITE_OK;
    case RESULT_COLUMN_ROW:
      return AskCursorColumn(base, ctx, ASK_COLUMN_ROW);
    case RESULT_COLUMN_RUN_ID:
      return AskCursorColumn(base, ctx, ASK_COLUMN_RUN_ID);
    case RESULT_COLUMN_QUESTION:
      return AskCursorColumn(base, ctx, ASK_COLUMN_QUESTION);
    case RESULT_COLUMN_SQL:
      return AskCursorColumn(base, ctx, ASK_COLUMN_SQL);
    case RESULT_COLUMN_CONFIDENCE:
      return AskCursorColumn(base, ctx, ASK_COLUMN_CONFIDENCE);
    case RESULT_COLUMN_CONFIDENCE_REASON:
      return AskCursorColumn(base, ctx, ASK_COLUMN_CONFIDENCE_REASON);
  }
  return SQLITE_OK;
}

int ResultRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
  *rowid = reinterpret_cast<AskCursor*>(base)->rowid;
  return SQLITE_OK;
}

int ResultEof(sqlite3_vtab_cursor* base) noexcept {
  return reinterpret_cast<AskCursor*>(base)->eof ? 1 : 0;
}

}  // namespace

constinit sqlite3_module kAskResultModule = {
    /* iVersion    */ 0,
    /* xCreate     */ nullptr,  // eponymous only
    /* xConnect    */ ResultConnect,
    /* xBestIndex  */ ResultBestIndex,
    /* xDisconnect */ ResultDisconnect,
    /* xDestroy    */ ResultDisconnect,
    /* xOpen       */ ResultOpen,
    /* xClose      */ ResultClose,
    /* xFilter     */ ResultFilter,
    /* xNext       */ ResultNext,
    /* xEof        */ ResultEof,
    /* xColumn     */ ResultColumn,
    /* xRowid      */ ResultRowid,
    /* xUpdate     */ nullptr,
    /* xBegin      */ nullptr,
    /* xSync       */ nullptr,
    /* xCommit     */ nullptr,
    /* xRollback   */ nullptr,
    /* xFindMethod */ nullptr,
    /* xRename     */ nullptr,
    /* xSavepoint  */ nullptr,
    /* xRelease    */ nullptr,
    /* xRollbackTo */ nullptr,
    /* xShadowName */ nullptr,
};

}  // namespace querypilot::ext
