// Linking: which tables of a big schema a question needs, in which order, so
// that its prompt fits a token budget and spends it on what matters first.
//
// Pure functions of the Schema, the question and the value hints. What ties
// a table to a question (Relevance):
//  - the question's words against the table's name, its columns' names and
//    the descriptions of both, compared by word form (a light stemmer:
//    "manufacturers" meets manufacturer, "courses" meets course) and by
//    spelling (a long shared beginning, "nation"/"nationality"; one edit,
//    "colour"/"color"); each word weighs by how few tables carry it, so a
//    column name that most tables share (status, amount, name) says little;
//  - the values the question names, where the value index found them (a
//    value found in one column says more than one found in forty);
//  - the foreign keys to tables the question names (a lookup or link table
//    is wanted with what it joins).
// The schema's databases are its groups: a question about one attached
// database needs that database's tables far more than another's, whether or
// not its keys are declared.
//
// A schema whose full rendering fits the budget is kept whole: pruning can
// only lose. A bigger one keeps, most relevant first while the budget allows,
// the database(s) the question points at whole, the tables it names with
// the foreign-key paths between them, and their direct neighbours; a table
// that nothing ties to the question is left out even when it would fit.
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
// schema order). A table that nothing ties to the question scores 0.
std::vector<TableScore> RankTables(const Schema& schema, std::string_view question,
                                   const std::vector<ValueHint>& hints);

// How a value hint's column ranks for `question` (ValueLookup::Lookup's
// `relevance`): its table's ties to the question, then its column's own
// words. A value stored in many columns is thus listed first for the tables
// the question names, and the cap on hints cuts the least related. The
// function keeps what it needs; `schema` may go away.
HintRelevance RankHintsFor(const Schema& schema, std::string_view question);

struct LinkedSchema {
  bool pruned = false;
  // Every table when not pruned (in schema order); otherwise the tables
  // shown, most relevant first, as `rendered` shows them.
  std::vector<const TableInfo*> kept;
  std::string rendered;  // what the prompt shows
  // Of the whole schema; a lower bound of it where tables' samples are
  // pending (TableInfo::samples_pending).
  size_t full_tokens = 0;
  size_t tokens = 0;  // of `rendered`
};

// The schema to show for `question` within `budget_tokens` (0 = no budget).
// `full_rendered` is RenderSchema(schema). A pruned rendering shows its
// tables most relevant first and ends with a comment saying how many tables
// are not shown. It is never empty of tables (unless the schema is): when
// nothing ties a table to the question, tables are shown in schema order
// while they fit. The best-ranked table is shown even when it alone exceeds
// the budget, cut to the columns that fit (its keys first, then the columns
// the question names), with a comment saying how many are not shown; `kept`
// still points to the whole table.
LinkedSchema LinkSchema(const Schema& schema, std::string_view full_rendered,
                        std::string_view question, const std::vector<ValueHint>& hints,
                        size_t budget_tokens);

// Whether `question` may tie a table to the notes that sample rows add to
// its columns (NoteNumbersAsText): one of its terms is alike to a word of
// those notes, or may be alike to a number a note shows (digits, and an
// exponent's e: "1e5" may, "t0000" and "3rd" may not). When it cannot, a
// table's relevance
// (RankTables, RankHintsFor, LinkSchema) is the same whether or not its
// samples are read.
bool QuestionMayTieToSampleNotes(std::string_view question);

// Linking with sample rows read for the tables the prompt shows only.
// Which tables of `schema` whose samples are pending (TableInfo::
// samples_pending) must have them read before LinkSchema(schema, ...) is
// what it would be with every sample read; empty when none must, and
// `*linked` is then that LinkSchema. The caller reads the samples of the
// tables returned, makes the schema again with them and calls it again,
// until it returns none (each call returns only tables still pending, so
// this ends). Every pending table is returned when the schema may not be
// pruned (no budget, or its rendering without the pending samples fits),
// or when the question may tie to what samples add (QuestionMayTieToSampleNotes);
// else the pending tables LinkSchema keeps. The proof that the last call's
// LinkSchema is the one with every sample read is in linking_samples.cpp.
std::vector<size_t> SamplesToRead(const Schema& schema, std::string_view full_rendered,
                                  std::string_view question, const std::vector<ValueHint>& hints,
                                  size_t budget_tokens, LinkedSchema* linked);

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
