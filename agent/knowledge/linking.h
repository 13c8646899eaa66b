// Linking: which tables of a big schema a question needs, so that its prompt
// fits a token budget.
//
// Pure functions of the Schema, the question and the value hints. Tables are
// ranked by the words they share with the question (table names weigh more
// than column names; both split into words, with crude singulars) and by the
// values the question names (a hinted value's table is surely wanted). The
// kept tables are joined up along foreign-key paths, and their direct
// foreign-key neighbours (lookup tables) follow while the budget allows.
// A schema whose full rendering fits the budget is kept whole: pruning can
// only lose.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"

namespace querypilot {

// Rough tokens of a prompt text (4 characters each).
size_t EstimateTokens(std::string_view text);

// Fills schema->rendered and schema->table_tokens from its tables.
void RenderInto(Schema* schema);

struct TableScore {
  const TableInfo* table = nullptr;
  double score = 0;
};

// Every table with its relevance to the question, best first (ties keep
// schema order).
std::vector<TableScore> RankTables(const Schema& schema, std::string_view question,
                                   const std::vector<ValueHint>& hints);

struct LinkedSchema {
  bool pruned = false;
  std::vector<const TableInfo*> kept;  // in schema order; every table when not pruned
  std::string rendered;                // what the prompt shows
  size_t full_tokens = 0;              // of the whole schema
  size_t tokens = 0;                   // of `rendered`
};

// The schema to show for `question` within `budget_tokens` (0 = no budget).
// `full_rendered` is RenderSchema(schema). A pruned rendering ends with a
// comment saying how many tables are not shown. It is never empty of tables
// (unless the schema is): when no table shares a word with the question,
// tables are shown in schema order while they fit. The best-ranked table is
// shown even when it alone exceeds the budget, cut to the columns that fit
// (its keys first, then the columns the question names), with a comment
// saying how many are not shown; `kept` still points to the whole table.
LinkedSchema LinkSchema(const Schema& schema, std::string_view full_rendered,
                        std::string_view question, const std::vector<ValueHint>& hints,
                        size_t budget_tokens);

// The schema with each user's table named ask shown qualified (main.ask):
// an unqualified ask is temp.ask, QueryPilot's own table-valued function,
// which generated SQL may not read (agent/sql/check_connection.h), while the
// user's table is read by its database's name like any other. Returns
// `schema` itself when it has none; otherwise a copy (rendered again), and
// sets `note` to a prompt comment saying to keep the database name.
// QueryPilot's other names (agent_runs, ...) are eponymous tables, which a
// user's table of that name hides: that table is the user's data, read by its
// name, and needs nothing.
std::shared_ptr<const Schema> WithAskTablesQualified(std::shared_ptr<const Schema> schema,
                                                     std::string* note);

// Tables not in `kept` that a failed query may have needed: those named like
// `missing` (a table or column from a "no such ..." error) or owning a column
// of that name. At most `limit`, best first.
std::vector<const TableInfo*> TablesToWiden(const Schema& schema,
                                            const std::vector<const TableInfo*>& kept,
                                            std::string_view missing, size_t limit = 3);

}  // namespace querypilot
