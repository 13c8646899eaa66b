// PRAGMA query_only around the SQL QueryPilot runs on a host's connection.
//
// Whatever SQL QueryPilot runs for a model (an attempt, an alternative, a
// cached answer, an answer table, a re-run, an explanation's reading, its own
// lookups) may run code of the schema's and the host's: a view's body, a
// generated column, a collation, a function the host registered (under any
// name, a built-in's included), another extension's virtual table. SQLite
// itself keeps that code from writing: every step, and the prepare on the
// host's connection, runs with the connection's query_only flag held, which
// SQLite checks at every OP_Transaction that would write, on every database
// of the connection (temp included), nested statements too. The flag is
// released before control goes back to the host, so the host's own
// statements between QueryPilot's calls write as before; the executor reads
// rows ahead in batches under one hold (agent/sql/executor.h), so the cost
// is a few prepares per batch, not per row.
//
// How the flag is set and cleared without stepping a statement (whose
// OP_Expire would expire every statement of the connection, the host's
// among them): SQLite applies a flag pragma while it parses it. A connection
// that sqlite3_interrupt stopped (the watchdog, or the host's Ctrl-C) refuses
// to prepare anything until its last statement ends, but its parser looks at
// the interrupt only at white space, a comment or the end of the input; a
// pragma written with none of them and ending in ';' (kQueryOnlyOff) is parsed,
// and so applied, before any look. That holds on SQLite 3.37 to 3.53
// (tests/e2e/test_schema_code.py checks Debian's 3.40 and better-sqlite3's).
//
// What SQLite cannot reach: code that writes through a connection of its own
// (a host function that opens the file again) is outside query_only.
#pragma once

#include <atomic>

#include "agent/base/status.h"

struct sqlite3;

namespace querypilot {

// Whether a hold set PRAGMA query_only on a host's connection and could not
// tell that it cleared it (its parse was refused for another reason than the
// interrupt), so that the flag is cleared as QueryPilot next uses the
// connection (SettleQueryOnly). Kept by the owner of what QueryPilot holds
// for that connection (its HostCheck, the session's), not in a process-wide
// set keyed by sqlite3*.
class QueryOnlyDebt {
 public:
  void Owe() { owed_.store(true); }
  bool owed() const { return owed_.load(); }
  void Clear() { owed_.store(false); }

 private:
  std::atomic<bool> owed_{false};
};

// Holds PRAGMA query_only on a connection for its lifetime, and marks the
// connection as running SQL QueryPilot runs for a model, on this thread
// (RunningGeneratedSql). Where the connection held the flag already (the
// host's own), it is kept as it is and left so.
class QueryOnlyHold {
 public:
  QueryOnlyHold() = default;
  QueryOnlyHold(const QueryOnlyHold&) = delete;
  QueryOnlyHold& operator=(const QueryOnlyHold&) = delete;
  // Clears the flag if this hold set it (interrupted or not), and the mark.
  ~QueryOnlyHold();

  // Sets the flag on `db` (or finds it set), and the mark. kRefused, with
  // nothing held and the flag as it was, when the connection does not allow
  // it (an authorizer that denies PRAGMA, a connection already interrupted).
  // `debt`: where a flag this hold could not clear is owed (a host's
  // connection's); null on a connection of QueryPilot's own, where a flag
  // left set harms no host.
  Status Take(sqlite3* db, QueryOnlyDebt* debt);

 private:
  sqlite3* db_ = nullptr;     // marked while set
  bool set_by_hold_ = false;  // the flag is QueryPilot's to clear
  QueryOnlyDebt* debt_ = nullptr;
};

// True while this thread prepares or steps, on `db`, SQL QueryPilot runs
// for a model (a QueryOnlyHold is taken). QueryPilot's own functions and
// virtual tables refuse to run then: only the host's schema (a TEMP view,
// a trigger's program) could have reached them.
bool RunningGeneratedSql(sqlite3* db) noexcept;

// Clears PRAGMA query_only on `db` where `debt` says a hold set it and could
// not tell that it cleared it. Called as QueryPilot next uses the
// connection; a no-op otherwise (and with no `debt`).
void SettleQueryOnly(sqlite3* db, QueryOnlyDebt* debt);

}  // namespace querypilot
