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
// ask('q') eponymous), and kAnswerTableModule's callbacks take over when the
// table was created with a question (its row of kAskTableKinds, ask_vtab.cpp).
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// How every vtab of the ask module begins, so that its callbacks can tell
// the kinds apart: `kind` is the module of the kind that made it (an answer
// table's), null for the eponymous ask('q').
struct AskVtabHead {
  sqlite3_vtab base{};  // must be first
  const sqlite3_module* kind = nullptr;
};

// A kind of table the ask module makes besides the eponymous ask('q'): one
// row of kAskTableKinds (ask_vtab.cpp).
struct AskTableKind {
  // True for the arguments of a CREATE VIRTUAL TABLE ... USING ask(...) this
  // kind makes a table of.
  bool (*creates)(int argc, const char* const* argv);
  // Its callbacks: xConnect makes the table (its head's kind this module),
  // the others serve it. xRename is ask's own for every kind.
  const sqlite3_module* module;
};

// True for the arguments of a CREATE VIRTUAL TABLE ... USING ask(...), false
// for the eponymous ask('q').
bool IsAnswerTableCreate(int argc, const char* const* argv);

// The answer tables' callbacks.
extern const sqlite3_module kAnswerTableModule;

}  // namespace querypilot::ext
