#include "agent/base/schema_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <iterator>

#include "agent/base/text.h"

namespace querypilot {
namespace {

// SQLite's keywords (sqlite.org/lang_keywords.html), upper case, sorted.
constexpr std::string_view kSqliteKeywords[] = {"ABORT",
                                                "ACTION",
                                                "ADD",
                                                "AFTER",
                                                "ALL",
                                                "ALTER",
                                                "ALWAYS",
                                                "ANALYZE",
                                                "AND",
                                                "AS",
                                                "ASC",
                                                "ATTACH",
                                                "AUTOINCREMENT",
                                                "BEFORE",
                                                "BEGIN",
                                                "BETWEEN",
                                                "BY",
                                                "CASCADE",
                                                "CASE",
                                                "CAST",
                                                "CHECK",
                                                "COLLATE",
                                                "COLUMN",
                                                "COMMIT",
                                                "CONFLICT",
                                                "CONSTRAINT",
                                                "CREATE",
                                                "CROSS",
                                                "CURRENT",
                                                "CURRENT_DATE",
                                                "CURRENT_TIME",
                                                "CURRENT_TIMESTAMP",
                                                "DATABASE",
                                                "DEFAULT",
                                                "DEFERRABLE",
                                                "DEFERRED",
                                                "DELETE",
                                                "DESC",
                                                "DETACH",
                                                "DISTINCT",
                                                "DO",
                                                "DROP",
                                                "EACH",
                                                "ELSE",
                                                "END",
                                                "ESCAPE",
                                                "EXCEPT",
                                                "EXCLUDE",
                                                "EXCLUSIVE",
                                                "EXISTS",
                                                "EXPLAIN",
                                                "FAIL",
                                                "FILTER",
                                                "FIRST",
                                                "FOLLOWING",
                                                "FOR",
                                                "FOREIGN",
                                                "FROM",
                                                "FULL",
                                                "GENERATED",
                                                "GLOB",
                                                "GROUP",
                                                "GROUPS",
                                                "HAVING",
                                                "IF",
                                                "IGNORE",
                                                "IMMEDIATE",
                                                "IN",
                                                "INDEX",
                                                "INDEXED",
                                                "INITIALLY",
                                                "INNER",
                                                "INSERT",
                                                "INSTEAD",
                                                "INTERSECT",
                                                "INTO",
                                                "IS",
                                                "ISNULL",
                                                "JOIN",
                                                "KEY",
                                                "LAST",
                                                "LEFT",
                                                "LIKE",
                                                "LIMIT",
                                                "MATCH",
                                                "MATERIALIZED",
                                                "NATURAL",
                                                "NO",
                                                "NOT",
                                                "NOTHING",
                                                "NOTNULL",
                                                "NULL",
                                                "NULLS",
                                                "OF",
                                                "OFFSET",
                                                "ON",
                                                "OR",
                                                "ORDER",
                                                "OTHERS",
                                                "OUTER",
                                                "OVER",
                                                "PARTITION",
                                                "PLAN",
                                                "PRAGMA",
                                                "PRECEDING",
                                                "PRIMARY",
                                                "QUERY",
                                                "RAISE",
                                                "RANGE",
                                                "RECURSIVE",
                                                "REFERENCES",
                                                "REGEXP",
                                                "REINDEX",
                                                "RELEASE",
                                                "RENAME",
                                                "REPLACE",
                                                "RESTRICT",
                                                "RETURNING",
                                                "RIGHT",
                                                "ROLLBACK",
                                                "ROW",
                                                "ROWS",
                                                "SAVEPOINT",
                                                "SELECT",
                                                "SET",
                                                "TABLE",
                                                "TEMP",
                                                "TEMPORARY",
                                                "THEN",
                                                "TIES",
                                                "TO",
                                                "TRANSACTION",
                                                "TRIGGER",
                                                "UNBOUNDED",
                                                "UNION",
                                                "UNIQUE",
                                                "UPDATE",
                                                "USING",
                                                "VACUUM",
                                                "VALUES",
                                                "VIEW",
                                                "VIRTUAL",
                                                "WHEN",
                                                "WHERE",
                                                "WINDOW",
                                                "WITH",
                                                "WITHOUT"};

// Process-wide because the host's SQLite (and with it the keywords it
// knows) is one per process: ext/ sets it once, as QueryPilot loads.
std::atomic<KeywordCheck> host_keyword_check{nullptr};

// A note as one comment line: line breaks become spaces.
std::string OneLine(std::string_view note) {
  std::string out(note);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

void SetHostKeywordCheck(KeywordCheck check) {
  host_keyword_check.store(check);
}

bool IsSqliteKeyword(std::string_view word) {
  std::string upper(word);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (std::binary_search(std::begin(kSqliteKeywords), std::end(kSqliteKeywords),
                         std::string_view(upper))) {
    return true;
  }
  KeywordCheck host = host_keyword_check.load();
  return host && host(word);
}

std::string PromptIdentifier(std::string_view name) {
  bool plain = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (unsigned char c : name) plain = plain && (std::isalnum(c) || c == '_');
  return plain && !IsSqliteKeyword(name) ? std::string(name) : QuoteIdentifier(name);
}

std::string QuoteIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

bool ColumnInfo::HoldsText() const {
  std::string t = text::Lower(type);
  return t.empty() || t.find("char") != std::string::npos || t.find("text") != std::string::npos ||
         t.find("clob") != std::string::npos;
}

void NoteNumbersAsText(TableInfo* table) {
  for (size_t i = 0; i < table->columns.size(); ++i) {
    ColumnInfo& c = table->columns[i];
    if (!c.HoldsText()) continue;
    // The sample values are SQL literals: text is quoted ('370'), a number
    // bare, NULL as NULL.
    std::string example;
    bool all = true, whole = true;
    for (const std::vector<std::string>& row : table->sample_rows) {
      if (i >= row.size() || row[i] == "NULL") continue;
      const std::string& literal = row[i];
      const text::TextNumber n =
          literal.size() >= 2 && literal.front() == '\'' && literal.back() == '\''
              ? text::ReadsAsNumber(text::UnquoteSqlString(literal))
              : text::TextNumber::kNone;
      if (n == text::TextNumber::kNone) {
        all = false;
        break;
      }
      whole = whole && n == text::TextNumber::kWhole;
      if (example.empty()) example = literal;
    }
    if (!all || example.empty()) continue;
    const std::string note =
        fmt::format("numbers stored as text ({}): CAST({} AS {}) to compare or sort", example,
                    PromptIdentifier(c.name), whole ? "INTEGER" : "REAL");
    c.note = c.note.empty() ? note : c.note + "; " + note;
  }
}

const ColumnInfo* TableInfo::FindColumn(std::string_view column) const {
  for (const auto& c : columns) {
    if (text::EqualsIgnoreCase(c.name, column)) return &c;
  }
  return nullptr;
}

std::string Description::Target() const {
  std::string out = database.empty() || database == "main" ? table : database + "." + table;
  return column.empty() ? out : out + "." + column;
}

std::string TableInfo::SqlName() const {
  return QuoteIdentifier(database.empty() ? "main" : database) + "." + QuoteIdentifier(name);
}

std::string TableInfo::DisplayName() const {
  return qualified ? PromptIdentifier(database) + "." + PromptIdentifier(name)
                   : PromptIdentifier(name);
}

const TableInfo* Schema::FindTable(std::string_view name, std::string_view database) const {
  // SQLite's order for an unqualified name: temp, main, then the attached
  // databases in the order they appear here (the order of database_list).
  auto rank = [](const TableInfo& t) {
    return t.database == "temp" ? 0 : t.database == "main" || t.database.empty() ? 1 : 2;
  };
  const TableInfo* best = nullptr;
  for (const auto& t : tables) {
    if (!text::EqualsIgnoreCase(t.name, name)) continue;
    if (!database.empty()) {
      if (text::EqualsIgnoreCase(t.database, database)) return &t;
      continue;
    }
    if (!best || rank(t) < rank(*best)) best = &t;
  }
  return best;
}

bool Schema::HasDatabase(std::string_view database) const {
  for (const auto& t : tables) {
    if (text::EqualsIgnoreCase(t.database, database)) return true;
  }
  return false;
}

namespace {

void AppendSampleRows(const TableInfo& t, std::string* out) {
  if (t.sample_rows.empty()) return;
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(PromptIdentifier(c.name));
  *out += fmt::format("/* {} sample rows: {}\n", t.sample_rows.size(), fmt::join(names, " | "));
  for (const auto& row : t.sample_rows) *out += fmt::format("   {}\n", fmt::join(row, " | "));
  *out += "*/\n";
}

}  // namespace

std::string RenderTable(const TableInfo& t) {
  std::string out;
  if (!t.note.empty()) out += "-- " + OneLine(t.note) + "\n";
  if (t.is_virtual && !t.module.empty()) {
    // Its columns as the module declares them (no types or keys): what the
    // model may read, and the module that says how (fts5: MATCH).
    out += fmt::format("CREATE VIRTUAL TABLE {} USING {}(\n", t.DisplayName(),
                       PromptIdentifier(t.module));
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const ColumnInfo& c = t.columns[i];
      out += "  " + PromptIdentifier(c.name) + (i + 1 == t.columns.size() ? "" : ",");
      if (!c.note.empty()) out += " -- " + OneLine(c.note);
      out += "\n";
    }
    out += ");\n";
    AppendSampleRows(t, &out);
    return out;
  }
  out += fmt::format("CREATE {} {} (\n", t.is_view ? "VIEW" : "TABLE", t.DisplayName());
  // A key of several columns is one table constraint: two column-level
  // PRIMARY KEYs would be invalid, and would claim each column unique.
  std::vector<std::string> key;
  for (const ColumnInfo& c : t.columns) {
    if (c.primary_key) key.push_back(PromptIdentifier(c.name));
  }
  const bool composite_key = key.size() > 1;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const ColumnInfo& c = t.columns[i];
    out += "  " + PromptIdentifier(c.name);
    if (!c.type.empty()) out += " " + c.type;
    if (c.primary_key && !composite_key) out += " PRIMARY KEY";
    if (c.not_null && !c.primary_key) out += " NOT NULL";
    bool last = i + 1 == t.columns.size() && t.foreign_keys.empty() && !composite_key;
    if (!last) out += ",";
    if (!c.note.empty()) out += " -- " + OneLine(c.note);
    out += "\n";
  }
  if (composite_key) {
    out += fmt::format("  PRIMARY KEY ({}){}", fmt::join(key, ", "),
                       t.foreign_keys.empty() ? "\n" : ",\n");
  }
  for (size_t i = 0; i < t.foreign_keys.size(); ++i) {
    const ForeignKeyInfo& fk = t.foreign_keys[i];
    out += fmt::format("  FOREIGN KEY ({}) REFERENCES {}", PromptIdentifier(fk.from_column),
                       PromptIdentifier(fk.to_table));
    if (!fk.to_column.empty()) out += "(" + PromptIdentifier(fk.to_column) + ")";
    out += i + 1 == t.foreign_keys.size() ? "\n" : ",\n";
  }
  out += ");\n";
  AppendSampleRows(t, &out);
  return out;
}

std::string RenderSchema(const Schema& schema) {
  std::string out;
  for (const TableInfo& t : schema.tables) out += RenderTable(t);
  return out;
}

namespace {

// SQLite's identifier characters (sqlite3IsIdChar): letters, digits, `_`, `$`
// and every byte of a UTF-8 sequence.
bool IsIdChar(unsigned char c) {
  return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

// The first position from `i` that is neither a blank nor in a comment.
size_t SkipBlanks(std::string_view sql, size_t i) {
  while (i < sql.size()) {
    if (std::isspace(static_cast<unsigned char>(sql[i]))) {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      i = sql.find('\n', i);
      if (i == std::string_view::npos) return sql.size();
    } else if (sql.substr(i, 2) == "/*") {
      i = sql.find("*/", i + 2);
      if (i == std::string_view::npos) return sql.size();
      i += 2;
    } else {
      break;
    }
  }
  return i;
}

// One name at `i` as SQLite's parser reads it (its `nm`): a bare word, or
// one quoted with "", ``, [] or '' with a doubled quote read as one. The
// position after it, and the name in *name; npos when there is none.
size_t ReadName(std::string_view sql, size_t i, std::string* name) {
  name->clear();
  if (i >= sql.size()) return std::string_view::npos;
  const char open = sql[i];
  if (open == '"' || open == '`' || open == '\'' || open == '[') {
    const char close = open == '[' ? ']' : open;
    for (size_t j = i + 1; j < sql.size(); ++j) {
      if (sql[j] != close) {
        name->push_back(sql[j]);
      } else if (close != ']' && j + 1 < sql.size() && sql[j + 1] == close) {
        name->push_back(close);
        ++j;
      } else {
        return j + 1;
      }
    }
    return std::string_view::npos;  // never closed
  }
  size_t end = i;
  while (end < sql.size() && IsIdChar(static_cast<unsigned char>(sql[end]))) ++end;
  if (end == i) return std::string_view::npos;
  *name = std::string(sql.substr(i, end - i));
  return end;
}

}  // namespace

std::string VirtualTableModule(std::string_view create_sql) {
  // As sqlite_schema keeps it: CREATE VIRTUAL TABLE, the name as written
  // (qualified in a statement not yet run), USING, the module's name.
  constexpr std::string_view kCreate = "create virtual table";
  if (create_sql.size() < kCreate.size() ||
      text::Lower(create_sql.substr(0, kCreate.size())) != kCreate) {
    return "";
  }
  std::string name;
  size_t i = ReadName(create_sql, SkipBlanks(create_sql, kCreate.size()), &name);
  if (i == std::string_view::npos) return "";
  i = SkipBlanks(create_sql, i);
  if (i < create_sql.size() && create_sql[i] == '.') {
    i = ReadName(create_sql, SkipBlanks(create_sql, i + 1), &name);
    if (i == std::string_view::npos) return "";
    i = SkipBlanks(create_sql, i);
  }
  if (ReadName(create_sql, i, &name) == std::string_view::npos || text::Lower(name) != "using" ||
      create_sql[i] != name[0]) {
    return "";  // USING is a bare keyword, never quoted
  }
  i = SkipBlanks(create_sql, i + name.size());
  return ReadName(create_sql, i, &name) == std::string_view::npos ? "" : name;
}

bool IsAnswerTable(std::string_view create_sql) {
  // CREATE VIRTUAL TABLE x USING ask(...): QueryPilot's own answer, not data.
  return text::EqualsIgnoreCase(VirtualTableModule(create_sql), "ask");
}

}  // namespace querypilot
