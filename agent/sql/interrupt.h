// InterruptProbe: tells whether sqlite3_interrupt() was called on a connection
// while QueryPilot waits for a model.
//
// SQLite 3.41 added sqlite3_is_interrupted(); older libraries have no call
// that reads the flag. Both check it when a statement jumps (OP_Goto), and the
// flag stays set while any statement on the connection is running, which is
// always true inside ask() (the host's own statement is). So stepping a
// prepared "SELECT 1" is a question SQLite answers the same way on every
// version: SQLITE_INTERRUPT means the user asked to stop. The step reads no
// table and changes nothing; it costs about a microsecond.
//
// Use from the thread that runs the ask (the one holding the connection).
#pragma once

#include "agent/sql/statement.h"

struct sqlite3;

namespace querypilot {

class InterruptProbe {
 public:
  explicit InterruptProbe(sqlite3* db) : db_(db) {}
  InterruptProbe(const InterruptProbe&) = delete;
  InterruptProbe& operator=(const InterruptProbe&) = delete;

  // True once the connection has been interrupted. Never throws; a probe that
  // cannot be prepared answers false (nothing is known to have stopped).
  bool Interrupted() noexcept;

 private:
  sqlite3* db_;
  Statement probe_;
  bool prepared_ = false;
  bool interrupted_ = false;
};

// True when the connection is interrupted now (the same question, asked once,
// without keeping a statement). After the watchdog stopped a query this stays
// true until the statement that asked ends.
bool ConnectionInterrupted(sqlite3* db) noexcept;

}  // namespace querypilot
