// A dataset's own descriptions of its tables and columns: BIRD ships them as
// <db_id>_description/<table>.csv next to <db_id>.sqlite (columns
// original_column_name, column_name, column_description, data_format,
// value_description). They are what a user would give agent_describe().
#pragma once

#include <string>
#include <vector>

#include "agent/base/schema_model.h"

namespace querypilot::eval {

// The column descriptions in the folder beside `db_path`, or none when there
// is no such folder. A column's text is its column_description, followed by
// its value_description when that is short (at most 200 bytes); white space
// runs become one space.
std::vector<Description> LoadDescriptions(const std::string& db_path);

// The rows of a CSV text (RFC 4180: quoted fields may hold commas, quotes
// and line breaks).
std::vector<std::vector<std::string>> ParseCsv(const std::string& text);

}  // namespace querypilot::eval
