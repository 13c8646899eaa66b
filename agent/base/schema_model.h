// The schema model: tables, views, columns and keys as the model is told about
// them, and their rendering as CREATE TABLE text. Pure values: reading them
// from a live connection is agent/knowledge/schema.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace querypilot {

struct ColumnInfo {
  std::string name;
  std::string type;
  bool primary_key = false;
  bool not_null = false;
  // Shown after the column as a comment: the codes it holds, a user's
  // description ("" = none).
  std::string note;

  // True when the declared type gives TEXT affinity or none (CHAR, TEXT,
  // CLOB, or no type): the columns that hold names and labels.
  bool HoldsText() const;
};

struct ForeignKeyInfo {
  std::string from_column;
  std::string to_table;
  std::string to_column;  // empty: the parent's primary key
};

struct TableInfo {
  std::string name;
  bool is_view = false;
  std::vector<ColumnInfo> columns;
  std::vector<ForeignKeyInfo> foreign_keys;
  std::vector<std::vector<std::string>> sample_rows;  // rendered as SQL literals
  // Its sample rows are not read yet (SchemaCache reads them for the tables
  // a prompt shows): `sample_rows` is empty, and what they would add to its
  // columns' notes (NoteNumbersAsText) is not there either, so its rendering
  // is no longer than it will be once they are read. False once they are
  // read, whatever the read gave, and in a Schema built any other way.
  bool samples_pending = false;
  // The database that holds it: "main", "temp" or an attached database's
  // name. Tables of "main" are shown by name alone; the others are shown
  // qualified ("world.city") where the prompt needs it (`qualified`).
  std::string database = "main";
  bool qualified = false;  // RenderTable() shows database.name
  bool without_rowid = false;
  bool is_virtual = false;
  // A virtual table's module, as its CREATE VIRTUAL TABLE names it ("fts5",
  // "rtree"): the table is shown as CREATE VIRTUAL TABLE ... USING fts5(...),
  // so that the model knows what the module gives (MATCH, its ranges). ""
  // when not virtual or not known.
  std::string module;
  // Shown above its CREATE TABLE as a comment: a user's description ("" =
  // none).
  std::string note;

  const ColumnInfo* FindColumn(std::string_view column) const;  // case-insensitive
  // "database"."name", for QueryPilot's own lookups: always the right table,
  // whatever else of that name the connection holds.
  std::string SqlName() const;
  // As the prompt shows it: name, or database.name when `qualified`.
  std::string DisplayName() const;
};

// A Schema handed out by a shared_ptr is not changed after: what linking
// derives from its tables is kept by its identity (weak_from_this; a copy
// starts without one), so that a warm ask does not read a big schema again.
struct Schema : std::enable_shared_from_this<Schema> {
  int64_t schema_version = -1;
  std::vector<TableInfo> tables;
  // RenderSchema(*this), filled by SchemaCache so that a warm ask() does not
  // render a large schema again; "" in a Schema built any other way.
  std::string rendered;
  // EstimateTokens(RenderTable(t)) for each table, in order; filled with
  // `rendered` (empty otherwise).
  std::vector<size_t> table_tokens;
  // Reads for the prompt that were stopped before their end, and by what
  // ("sample rows of main.v: not read within 250 ms"); what they would have
  // read is left out. Kept with the schema until it changes.
  std::vector<std::string> stopped_reads;

  // The table `name` means in SQL (case-insensitive): of tables of that name
  // in several databases, the one SQLite resolves an unqualified name to
  // (temp, then main, then attached databases in order), unless
  // `database` names one. Null when there is none.
  const TableInfo* FindTable(std::string_view name, std::string_view database = {}) const;
  // True when some table is in a database other than main.
  bool HasDatabase(std::string_view database) const;
};

// A user's description of a table or column (agent_describe).
struct Description {
  std::string database;  // "main", "temp" or an attached database
  std::string table;     // as the schema spells it
  std::string column;    // "" for the table itself
  std::string text;

  // "table", "table.column", or "database.table.column" for a database
  // other than main.
  std::string Target() const;
};

// `name` as a double-quoted SQL identifier ("a""b" for a"b).
std::string QuoteIdentifier(std::string_view name);

// True when SQLite reads `word` (any case) as a keyword: its documented
// keywords, and any word the host's SQLite says is one (SetHostKeywordCheck).
bool IsSqliteKeyword(std::string_view word);

// A check of the host's own (sqlite3_keyword_check), for keywords of SQLite
// versions newer than the list above. Set once by whoever has the host's
// SQLite; null: the list alone.
using KeywordCheck = bool (*)(std::string_view word);
void SetHostKeywordCheck(KeywordCheck check);

// `name` as the prompt shows it, so that SQL copied from the prompt runs: bare
// when it is a plain identifier (letters, digits, _, not starting with a
// digit) and not a keyword; double-quoted otherwise ("order", "first name").
std::string PromptIdentifier(std::string_view name);

// Adds to the note of each column of `table` that holds text by its
// declared type (TEXT, or no type) while every one of its sample values is
// text that reads as a number (text::ReadsAsNumber: a CSV imported without
// a typed table) that it holds numbers as text, and how to compare them:
// "numbers stored as text ('370'): CAST(pages AS INTEGER) to compare or
// sort". A column with no sample value other than NULL gets none.
// Schema linking reads these notes, and reads tables whose samples are not
// read yet (TableInfo::samples_pending): what the note's words are is
// assumed by QuestionMayTieToSampleNotes (agent/knowledge/linking.h), which
// takes them from this function's own output and whose proof assumes that
// the only other words a note has are its column's name and the number
// shown.
void NoteNumbersAsText(TableInfo* table);

// The schema as compact CREATE TABLE text for a prompt, with sample rows as
// comments. Deterministic: the same Schema always renders the same text.
std::string RenderSchema(const Schema& schema);

// One table as RenderSchema() shows it.
std::string RenderTable(const TableInfo& table);

// True for `CREATE VIRTUAL TABLE ... USING ask...`: QueryPilot's own table
// (an answer table, or temp.ask), not data.
bool IsAnswerTable(std::string_view create_sql);

// The module of `CREATE VIRTUAL TABLE ... USING module(...)` as SQLite reads
// its name ("fts5"; `USING "my mod"(...)` gives my mod, quotes undone); ""
// for any other statement. RenderTable() shows it quoted where it must be.
std::string VirtualTableModule(std::string_view create_sql);

}  // namespace querypilot
