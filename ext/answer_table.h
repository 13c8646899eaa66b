// Answer tables: an answer with real columns.
//
//   CREATE VIRTUAL TABLE temp.top5 USING ask('Which five countries have the most people?');
//   SELECT * FROM top5;                 -- the answer's own columns
//   SELECT run_id, sql FROM top5 LIMIT 1;  -- hidden: the run and its SQL
//   DROP TABLE top5;
//
// The CREATE runs the agent once, with every check and correction ask() has,
// and declares the table with the answer's column names and the declared types
// SQLite reports for them. Each scan runs the verified SQL again through the
// same guards (critic, time budget, row cap, value cap), so the rows are
// current; values pass from SQLite to SQLite without a copy. A CREATE outside
// temp is refused (it would write the database's schema), and a question that
// ends without an answer fails the CREATE with ask()'s message.
//
// The `ask` module serves both: its xConnect is also its xCreate (which keeps
// ask('q') eponymous), and these functions take over when the table was
// created with a question.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// How both kinds of ask vtab begin, so that the module's callbacks can tell
// them apart (IsAnswerTable).
struct AskVtabHead {
  sqlite3_vtab base{};  // must be first
  bool answer_table = false;
};

// True for the arguments of a CREATE VIRTUAL TABLE ... USING ask(...), false
// for the eponymous ask('q').
bool IsAnswerTableCreate(int argc, const char* const* argv);

int AnswerTableConnect(sqlite3* db, void* aux, int argc, const char* const* argv,
                       sqlite3_vtab** out, char** err) noexcept;

// True when `vtab` is an answer table (every other ask vtab is the eponymous one).
inline bool IsAnswerTable(sqlite3_vtab* vtab) noexcept {
  return reinterpret_cast<const AskVtabHead*>(vtab)->answer_table;
}

int AnswerTableBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) noexcept;
int AnswerTableDisconnect(sqlite3_vtab* vtab) noexcept;
int AnswerTableDestroy(sqlite3_vtab* vtab) noexcept;
int AnswerTableOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) noexcept;
int AnswerTableClose(sqlite3_vtab_cursor* cursor) noexcept;
int AnswerTableFilter(sqlite3_vtab_cursor* cursor, int, const char*, int, sqlite3_value**) noexcept;
int AnswerTableNext(sqlite3_vtab_cursor* cursor) noexcept;
int AnswerTableEof(sqlite3_vtab_cursor* cursor) noexcept;
int AnswerTableColumn(sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int column) noexcept;
int AnswerTableRowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) noexcept;

}  // namespace querypilot::ext
