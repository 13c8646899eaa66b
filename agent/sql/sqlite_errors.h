// SQLite's error messages, classified: what the SQL layer reports when a
// statement fails to prepare or to run, and what the agent's analysis of a
// failure starts from.
#pragma once

#include <string_view>

#include "agent/base/status.h"

namespace querypilot {

// The kind of a SQLite error message from prepare or step ("no such column:
// x" -> kColumnNotFound). Unknown messages are kExecutionError.
ErrorKind ClassifySqliteError(std::string_view message);

}  // namespace querypilot
