// Extraction: the SQL inside what a model replied.
//
// Real models answer in several shapes: bare SQL, a ```sql fenced block with
// prose around it, a JSON object with a "sql" field (possibly fenced as
// ```json), sometimes after a <think>...</think> block. ExtractSql() handles
// each and returns the SQL text only; it never judges whether the SQL is safe
// or is one statement (the critic does that with SQLite itself).
#pragma once

#include <string>
#include <string_view>

#include "agent/status.h"

namespace querypilot {

// The SQL of `reply`, trimmed, without a trailing semicolon.
// kNoSql when the reply holds nothing that looks like SQL.
Result<std::string> ExtractSql(std::string_view reply);

}  // namespace querypilot
