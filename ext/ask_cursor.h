// The cursor ask() and ask_result() share: an answer's rows, streamed from
// its running query or replayed from the rows the statement kept, each as a
// JSON object, with the run's columns beside them. See ask_cursor.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/sqlite.h"
#include "agent/session/session.h"

namespace querypilot::ext {

// ask()'s column numbers, matching the CREATE TABLE in AskConnect
// (ask_vtab.cpp); ask_result() answers its own through these.
// The argument comes first among the HIDDEN columns: SQLite binds ask('q')
// to the first hidden column.
#define ASK_COLUMN_ROW 0
#define ASK_COLUMN_QUESTION 1
#define ASK_COLUMN_RUN_ID 2
#define ASK_COLUMN_SQL 3
#define ASK_COLUMN_CONFIDENCE 4
#define ASK_COLUMN_CONFIDENCE_REASON 5

struct AskVtab {
  sqlite3_vtab base{};                   // must be first
  const sqlite3_module* kind = nullptr;  // as AskVtabHead: the eponymous ask('q')
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

// Reads the next row into the cursor, from the live query or the replay:
// SQLITE_OK (eof set at the end), or SQLITE_ERROR with the vtab's message.
int AdvanceRow(AskCursor* cur);

// xColumn of ask(): `column` is an ASK_COLUMN_* of the cursor's current row.
int AskCursorColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) noexcept;

}  // namespace querypilot::ext
