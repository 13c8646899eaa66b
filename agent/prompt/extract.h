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
#include <vector>

#include "agent/base/status.h"

namespace querypilot {

// The SQL of `reply`, trimmed, without a trailing semicolon.
// kNoSql when the reply holds nothing that looks like SQL.
Result<std::string> ExtractSql(std::string_view reply);

// The candidate queries of a reply that may hold several (the `candidates`
// setting): each ```sql block in order, the most likely reading first, at
// most `max` of them; a reply with none is ExtractSql()'s one query.
Result<std::vector<std::string>> ExtractCandidates(std::string_view reply, size_t max);

// The clarifying questions of a reply that asks instead of answering: a
// ```clarify fenced block (one question per line, list marks removed) or a
// JSON object {"clarify": [...]}. Empty when the reply asks nothing. At most
// five questions of at most 300 bytes each are kept.
std::vector<std::string> ExtractClarification(std::string_view reply);

}  // namespace querypilot
