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
** confidence_reason (the run's: how sure the answer is, and why; the reason
** starts "low: " below 50) and question (the argument). The agent runs
** once per distinct question within one SQL statement, however often SQLite
** rescans the table.
**
** ask is an eponymous, DIRECTONLY virtual table: it cannot be used from a
** view or trigger, so a database's own schema can never make it run. The same
** module makes answer tables with real columns, CREATE VIRTUAL TABLE
** temp.name USING ask('question') (ext/answer_table.h): its xCreate is its
** xConnect, which keeps ask('q') eponymous, and each callback below hands an
** answer table's calls to answer_table.cpp.
**
** ask_result(RUN_ID [, WAIT_MS]) is the asynchronous ask's answer
** (ask_start): the same columns as ask(), from the same cursor, and
** wait_ms, hidden. Its rows once the run's reply is in and checked here; an
** error that says "pending" (and how to wait) while the model has not
** answered.
**
**   SELECT ask_start('How many orders are there?');   -- 7
**   SELECT * FROM ask_result(7, 5000);
*/
#include "ext/ask_vtab.h"

#include <memory>
#include <string>

#include "agent/session.h"
#include "agent/sql/executor.h"
#include "ext/answer_table.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// Column numbers, matching the CREATE TABLE in AskConnect.
// The argument comes first among the HIDDEN columns: SQLite binds ask('q')
// to the first hidden column.
#define ASK_COLUMN_ROW 0
#define ASK_COLUMN_QUESTION 1
#define ASK_COLUMN_RUN_ID 2
#define ASK_COLUMN_SQL 3
#define ASK_COLUMN_CONFIDENCE 4
#define ASK_COLUMN_CONFIDENCE_REASON 5

struct AskVtab {
  sqlite3_vtab base{};        // must be first
  bool answer_table = false;  // as AskVtabHead
  std::shared_ptr<Session> session;
};

struct AskCursor {
  sqlite3_vtab_cursor base{};  // must be first
  std::shared_ptr<Session> session;
  std::string question;
  std::shared_ptr<const StatementAnswer> answer;  // run id, sql, names (and rows when complete)
  // Where rows come from: a running query, or the answer's stored rows.
  std::unique_ptr<AnswerStream> live;
  size_t replay_index = 0;
  Row row;
  // Past the rows the probe buffered, rows are read ahead in batches, each
  // row's JSON written from the statement as it is read (each member's key
  // written once), one after the other in batch_json.
  bool from_batch = false;
  std::vector<std::string> json_keys;
  std::string batch_json;
  std::vector<size_t> batch_ends;  // where each row's JSON ends in batch_json
  size_t batch_index = 0;          // the next row of the batch
  std::string_view batch_row;      // the current row's JSON, in batch_json
  std::string row_json;            // a buffered row as JSON, built on first xColumn
  bool row_json_ready = false;
  sqlite3_int64 rowid = 0;
  bool eof = true;
  int64_t wait_ms = 0;  // ask_result's wait

  // The running query's rows are left before their end (the cursor closes
  // or scans again): the rows made current were returned, the current one
  // included, since SQLite checks its interrupt before it asks for the next.
  void Leave() {
    if (live) live->Close(rowid);
    live.reset();
  }

  // Before a scan: no rows, nothing read ahead (the answer is the caller's).
  void Rewind() {
    Leave();
    replay_index = 0;
    rowid = 0;
    eof = true;
    from_batch = false;
    batch_ends.clear();
    batch_index = 0;
    json_keys.clear();
  }
};

int AskConnect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
               char** err) noexcept {
  if (IsAnswerTableCreate(argc, argv)) return AnswerTableConnect(db, aux, argc, argv, out, err);
  return ConnectDirectOnlyVtab<AskVtab, std::shared_ptr<Session>>(
      db, aux,
      "CREATE TABLE x(row TEXT, question TEXT HIDDEN, run_id INTEGER HIDDEN, sql TEXT HIDDEN, "
      "confidence INTEGER HIDDEN, confidence_reason TEXT HIDDEN)",
      out, err, "ask");
}

int AskDisconnect(sqlite3_vtab* vtab) noexcept {
  if (IsAnswerTable(vtab)) return AnswerTableDisconnect(vtab);
  delete reinterpret_cast<AskVtab*>(vtab);
  return SQLITE_OK;
}

int AskDestroy(sqlite3_vtab* vtab) noexcept {
  if (IsAnswerTable(vtab)) return AnswerTableDestroy(vtab);
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
  if (IsAnswerTable(vtab)) return AnswerTableBestIndex(vtab, info);
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
  if (IsAnswerTable(vtab)) return AnswerTableOpen(vtab, out);
  return GuardVtab(vtab, "ask", [&] {
    auto* cur = new AskCursor();
    cur->session = reinterpret_cast<AskVtab*>(vtab)->session;
    *out = &cur->base;
    return SQLITE_OK;
  });
}

int AskClose(sqlite3_vtab_cursor* base) noexcept {
  if (IsAnswerTable(base->pVtab)) return AnswerTableClose(base);
  auto* cur = reinterpret_cast<AskCursor*>(base);
  GuardVtab(base->pVtab, "ask", [&] {
    cur->Leave();
    return SQLITE_OK;
  });
  delete cur;
  return SQLITE_OK;
}

// The statement's current row as AppendRowJson writes a Row, read in place:
// one sqlite3_column_value a column (the connection's mutex taken once), the
// rest from the value itself.
void AppendStatementRowJson(std::string& out, const std::vector<std::string>& keys,
                            sqlite3_stmt* stmt) {
  for (size_t i = 0; i < keys.size(); ++i) {
    out += keys[i];
    sqlite3_value* v = sqlite3_column_value(stmt, static_cast<int>(i));
    switch (sqlite3_value_type(v)) {
      case SQLITE_INTEGER:
        AppendJsonInteger(out, sqlite3_value_int64(v));
        break;
      case SQLITE_FLOAT:
        AppendJsonReal(out, sqlite3_value_double(v));
        break;
      case SQLITE_TEXT: {
        const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
        AppendJsonString(out, p ? std::string_view(p, static_cast<size_t>(sqlite3_value_bytes(v)))
                                : std::string_view());
        break;
      }
      case SQLITE_BLOB: {
        const auto* p = static_cast<const char*>(sqlite3_value_blob(v));
        AppendJsonHex(out, p ? std::string_view(p, static_cast<size_t>(sqlite3_value_bytes(v)))
                             : std::string_view());
        break;
      }
      default:
        out += "null";
    }
  }
  if (keys.empty()) out.push_back('{');  // the first key carries the opening brace
  out.push_back('}');
}

// Reads the next batch of the live query into the cursor's JSON rows: how
// many rows it holds (0 at the end), or the query's error.
Result<size_t> ReadBatch(AskCursor* cur) {
  cur->batch_json.clear();  // keeps its capacity from batch to batch
  cur->batch_ends.clear();
  cur->batch_index = 0;
  if (cur->json_keys.empty()) cur->json_keys = JsonMemberKeys(cur->answer->column_names);
  return cur->live->ReadAhead([cur](sqlite3_stmt* stmt) {
    const size_t before = cur->batch_json.size();
    AppendStatementRowJson(cur->batch_json, cur->json_keys, stmt);
    cur->batch_ends.push_back(cur->batch_json.size());
    return cur->batch_json.size() - before;
  });
}

// Reads the next row into the cursor, from the live query or the replay.
int AdvanceRow(AskCursor* cur) {
  cur->row_json_ready = false;
  if (cur->live) {
    Result<bool> got = true;
    cur->from_batch = cur->live->query().buffered_rows().empty();
    if (!cur->from_batch) {
      got = cur->live->Next(&cur->row);
    } else if (cur->batch_index >= cur->batch_ends.size()) {
      Result<size_t> read = ReadBatch(cur);
      got = read.ok() ? Result<bool>(read.value() > 0) : Result<bool>(read.status());
    }
    if (!got.ok()) {
      SetVtabError(cur->base.pVtab, "ask(): the answer's query failed while streaming (" +
                                        std::string(ErrorKindName(got.status().kind())) +
                                        "): " + got.status().message());
      cur->eof = true;
      cur->live.reset();
      return SQLITE_ERROR;
    }
    if (!got.value()) {
      cur->eof = true;
      cur->live.reset();
      return SQLITE_OK;
    }
    if (cur->from_batch) {
      const size_t start = cur->batch_index == 0 ? 0 : cur->batch_ends[cur->batch_index - 1];
      cur->batch_row = std::string_view(cur->batch_json)
                           .substr(start, cur->batch_ends[cur->batch_index] - start);
      ++cur->batch_index;
    }
  } else {
    if (cur->replay_index >= cur->answer->rows.size()) {
      cur->eof = true;
      return SQLITE_OK;
    }
    cur->row = cur->answer->rows[cur->replay_index++];
  }
  cur->eof = false;
  ++cur->rowid;
  return SQLITE_OK;
}

int AskFilter(sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc,
              sqlite3_value** argv) noexcept {
  if (IsAnswerTable(base->pVtab)) return AnswerTableFilter(base, idx_num, idx_str, argc, argv);
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
  if (IsAnswerTable(base->pVtab)) return AnswerTableNext(base);
  auto* cur = reinterpret_cast<AskCursor*>(base);
  return GuardVtab(base->pVtab, "ask", [&] { return AdvanceRow(cur); });
}

int AskEof(sqlite3_vtab_cursor* base) noexcept {
  if (IsAnswerTable(base->pVtab)) return AnswerTableEof(base);
  return reinterpret_cast<AskCursor*>(base)->eof ? 1 : 0;
}

int AskColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) noexcept {
  if (IsAnswerTable(base->pVtab)) return AnswerTableColumn(base, ctx, column);
  auto* cur = reinterpret_cast<AskCursor*>(base);
  return GuardVtab(base->pVtab, "ask", [&] {
    switch (column) {
      case ASK_COLUMN_ROW:
        if (cur->from_batch) {
          sqlite3_result_text(ctx, cur->batch_row.data(), static_cast<int>(cur->batch_row.size()),
                              SQLITE_TRANSIENT);
          sqlite3_result_subtype(ctx, 'J');
          break;
        }
        if (!cur->row_json_ready) {
          cur->row_json.clear();  // keeps its capacity from row to row
          AppendRowJson(cur->row_json, cur->answer->column_names, cur->row);
          cur->row_json_ready = true;
        }
        sqlite3_result_text(ctx, cur->row_json.data(), static_cast<int>(cur->row_json.size()),
                            SQLITE_TRANSIENT);
        sqlite3_result_subtype(ctx, 'J');  // JSON, for json_* functions
        break;
      case ASK_COLUMN_RUN_ID:
        sqlite3_result_int64(ctx, cur->answer->run_id);
        break;
      case ASK_COLUMN_SQL:
        sqlite3_result_text(ctx, cur->answer->sql.c_str(), -1, SQLITE_TRANSIENT);
        break;
      case ASK_COLUMN_QUESTION:
        sqlite3_result_text(ctx, cur->question.data(), static_cast<int>(cur->question.size()),
                            SQLITE_TRANSIENT);
        break;
      case ASK_COLUMN_CONFIDENCE:
        if (cur->answer->confidence) {
          sqlite3_result_int64(ctx, *cur->answer->confidence);
        } else {
          sqlite3_result_null(ctx);
        }
        break;
      case ASK_COLUMN_CONFIDENCE_REASON:
        if (cur->answer->confidence_reason.empty()) {
          sqlite3_result_null(ctx);
        } else {
          sqlite3_result_text(ctx, cur->answer->confidence_reason.c_str(),
                              static_cast<int>(cur->answer->confidence_reason.size()),
                              SQLITE_TRANSIENT);
        }
        break;
    }
    return SQLITE_OK;
  });
}

int AskRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
  if (IsAnswerTable(base->pVtab)) return AnswerTableRowid(base, rowid);
  *rowid = reinterpret_cast<AskCursor*>(base)->rowid;
  return SQLITE_OK;
}

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
      return AskColumn(base, ctx, ASK_COLUMN_ROW);
    case RESULT_COLUMN_RUN_ID:
      return AskColumn(base, ctx, ASK_COLUMN_RUN_ID);
    case RESULT_COLUMN_QUESTION:
      return AskColumn(base, ctx, ASK_COLUMN_QUESTION);
    case RESULT_COLUMN_SQL:
      return AskColumn(base, ctx, ASK_COLUMN_SQL);
    case RESULT_COLUMN_CONFIDENCE:
      return AskColumn(base, ctx, ASK_COLUMN_CONFIDENCE);
    case RESULT_COLUMN_CONFIDENCE_REASON:
      return AskColumn(base, ctx, ASK_COLUMN_CONFIDENCE_REASON);
  }
  return SQLITE_OK;
}

int ResultRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
  *rowid = reinterpret_cast<AskCursor*>(base)->rowid;
  return SQLITE_OK;
}

}  // namespace

constinit sqlite3_module kAskModule = {
    /* iVersion    */ 0,
    /* xCreate     */ AskConnect,  // the same: eponymous, and answer tables
    /* xConnect    */ AskConnect,
    /* xBestIndex  */ AskBestIndex,
    /* xDisconnect */ AskDisconnect,
    /* xDestroy    */ AskDestroy,
    /* xOpen       */ AskOpen,
    /* xClose      */ AskClose,
    /* xFilter     */ AskFilter,
    /* xNext       */ AskNext,
    /* xEof        */ AskEof,
    /* xColumn     */ AskColumn,
    /* xRowid      */ AskRowid,
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
    /* xEof        */ AskEof,
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
