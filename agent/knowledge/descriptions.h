// Descriptions: what the user says a table or column means.
//
// Real schemas are full of names whose meaning lives in people's heads
// (`stat_cd`, `amt2`). agent_describe('orders.stat_cd', 'order status: R =
// refunded, S = shipped') keeps a plain-language description for the
// connection (and, with history_file, across restarts). The prompt shows
// each description of the tables it shows, as a comment (a table's above its
// CREATE TABLE, a column's after the column), and schema linking reads their
// words.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"

namespace querypilot {

// The table or column `target` names in `schema`: "table", "table.column",
// "database.table" or "database.table.column" (case-insensitive, names as
// the schema spells them in the result). Each name may be quoted as SQL
// quotes it ('invoices."order"', '"invoice lines".qty', [order], `order`).
// InvalidArgument, naming what is missing, when there is no such table or
// column, or when a quote is left open.
Result<Description> ResolveTarget(const Schema& schema, std::string_view target);

// `schema` with the descriptions of its tables and columns as their notes
// (several of one column joined with "; " in the order given), copied and
// rendered once; `schema` itself when none applies.
std::shared_ptr<const Schema> WithDescriptions(std::shared_ptr<const Schema> schema,
                                               const std::vector<Description>& descriptions);

}  // namespace querypilot
