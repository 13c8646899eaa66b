// SQLite's errors, classified: what the SQL layer reports when a statement
// fails to prepare or to run, and what the agent's analysis of a failure
// starts from.
#pragma once

#include <string_view>

#include "agent/base/status.h"

namespace querypilot {

// The kind of a SQLite error message from prepare or step ("no such column:
// x" -> kColumnNotFound). Unknown messages are kExecutionError.
ErrorKind ClassifySqliteError(std::string_view message);

// The kind of a failed prepare or step, from SQLite's result code (primary
// or extended) first: corruption, "not a database", I/O, a full disk, no
// memory and a lock are facts about the database or the machine
// (IsDatabaseFault), whatever the message says; a value too big is
// kValueTooBig. Other codes are classified by their message.
ErrorKind ClassifySqliteFailure(int code, std::string_view message);

// The Status for a failed prepare or step: its kind as above, and SQLite's
// own message first, followed by what it means where SQLite's words are
// terse ("parser stack overflow: the query nests too deeply ...").
Status SqliteFailure(int code, std::string_view message);

}  // namespace querypilot
