/*
** Answer tables: CREATE VIRTUAL TABLE temp.NAME USING ask('QUESTION').
**
** Usage:
**
**   CREATE VIRTUAL TABLE temp.top5 USING ask('Which five countries have the most people?');
**   .headers on
**   .mode csv
**   SELECT * FROM top5;
**   SELECT sql FROM top5 LIMIT 1;
**   DROP TABLE top5;
**
** See answer_table.h for what each step does.
*/
#include "ext/answer_table.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/text.h"
#include "agent/session/session.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

struct AnswerTable {
  sqlite3_vtab base{};                               // must be first
  const sqlite3_module* kind = &kAnswerTableModule;  // as AskVtabHead
  std::shared_ptr<Session> session;
  std::string schema;
  std::string name;
  std::shared_ptr<const AnswerTableSpec> spec;
};

// One value of a row read ahead: a number in place, text and blobs as bytes
// of the batch's arena. Text is followed there by a NUL, so that SQLite is
// handed text it knows to be terminated (a length of -1) and copies it once,
// without growing its copy to add the terminator.
struct BatchValue {
  int type = SQLITE_NULL;
  bool nul_inside = false;  // text holding a NUL: handed over by its length
  sqlite3_int64 integer = 0;
  double real = 0;
  size_t offset = 0;  // text, blob: where its bytes start in the arena
  size_t bytes = 0;
};

struct AnswerCursor {
  sqlite3_vtab_cursor base{};  // must be first
  std::shared_ptr<Session> session;
  std::unique_ptr<AnswerStream> live;
  // Rows read ahead in a batch (AnswerStream::ReadAhead): answer_columns
  // values a row, the bytes of each text or blob in one arena; both keep
  // their capacity from batch to batch. xColumn hands the values to SQLite,
  // which copies each once.
  std::vector<BatchValue> batch;
  std::string arena;
  size_t batch_rows = 0;   // rows of `batch` filled by the last read
  size_t batch_index = 0;  // the current row
  int answer_columns = 0;  // the answer's own columns; run_id, sql,
                           // confidence and its reason follow
  sqlite3_int64 rowid = 0;
  bool eof = true;

  // As the ask cursor's Leave (ask_vtab.cpp): the rows made current were
  // returned.
  void Leave() {
    if (live) live->Close(rowid);
    live.reset();
  }
};

AnswerTable* TableOf(sqlite3_vtab* vtab) {
  return reinterpret_cast<AnswerTable*>(vtab);
}
AnswerCursor* CursorOf(sqlite3_vtab_cursor* cur) {
  return reinterpret_cast<AnswerCursor*>(cur);
}

// The question of USING ask('...'), as SQLite hands over the argument's text:
// exactly one string literal in single quotes, a quote inside it doubled.
// Anything else ('a' || 'b', a number, a name, two literals) is refused, not
// asked in a mangled form: SQLite does not evaluate a module's arguments.
Result<std::string> QuestionArgument(std::string_view raw) {
  const std::string trimmed = text::Trim(raw);
  std::string_view s = trimmed;
  auto refuse = [] {
    return Status::InvalidArgument(
        "USING ask('question'): the question must be one string literal in single quotes (a quote "
        "inside "
        "it doubled: 'Who''s first?'); expressions, names and numbers are not evaluated here");
  };
  if (s.size() < 2 || s.front() != '\'' || s.back() != '\'') return refuse();
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    out.push_back(s[i]);
    if (s[i] != '\'') continue;
    // Inside the literal a quote is always doubled; a lone one ends it early.
    if (i + 2 >= s.size() || s[i + 1] != '\'') return refuse();
    ++i;
  }
  return out;
}

// A declared type fit to repeat in the table's declaration: letters, digits,
// spaces, parentheses and commas ("VARCHAR(20)", "NUMERIC(10, 2)"), and never
// a word SQLite reads as a column constraint. Anything else is left out (the
// column has no declared type).
std::string SafeDeclaredType(const std::string& type) {
  for (char c : type) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '(' || c == ')' ||
          c == ',' || c == '_')) {
      return "";
    }
  }
  static const std::set<std::string> kConstraintWords = {
      "hidden", "primary",    "not",    "null",      "default", "collate",
      "check",  "references", "unique", "generated", "as",      "constraint"};
  std::string word;
  for (char c : text::Lower(type) + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word.push_back(c);
    } else {
      if (kConstraintWords.count(word)) return "";
      word.clear();
    }
  }
  return type;
}

// The table's declaration for sqlite3_declare_vtab: each column quoted, with
// its declared type when fit to repeat, HIDDEN where the spec says.
std::string Declaration(const AnswerTableSpec& spec) {
  std::string decl = "CREATE TABLE x(";
  for (size_t i = 0; i < spec.columns.size(); ++i) {
    const AnswerColumn& c = spec.columns[i];
    const std::string type = SafeDeclaredType(c.declared_type);
    decl += fmt::format("{}{}{}{}{}", i ? ", " : "", QuoteIdentifier(c.name),
                        type.empty() ? "" : " ", type, c.hidden ? " HIDDEN" : "");
  }
  return decl + ")";
}

// Appends the statement's current row to `*batch` (`columns` values, NULL
// past the statement's own) and its text and blob bytes to `*arena`: how
// many bytes of text and blob it held.
size_t ReadBatchRow(sqlite3_stmt* stmt, int columns, std::vector<BatchValue>* batch,
                    std::string* arena) {
  const int have = sqlite3_column_count(stmt);
  size_t bytes = 0;
  for (int i = 0; i < columns; ++i) {
    BatchValue& out = batch->emplace_back();
    if (i >= have) continue;
    sqlite3_value* v = sqlite3_column_value(stmt, i);
    out.type = sqlite3_value_type(v);
    switch (out.type) {
      case SQLITE_INTEGER:
        out.integer = sqlite3_value_int64(v);
        break;
      case SQLITE_FLOAT:
        out.real = sqlite3_value_double(v);
        break;
      case SQLITE_TEXT: {
        const char* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
        out.bytes = static_cast<size_t>(sqlite3_value_bytes(v));
        out.offset = arena->size();
        if (p) arena->append(p, out.bytes);
        out.nul_inside = p && std::memchr(p, 0, out.bytes) != nullptr;
        arena->push_back('\0');
        bytes += out.bytes;
        break;
      }
      case SQLITE_BLOB: {
        const void* p = sqlite3_value_blob(v);
        out.bytes = p ? static_cast<size_t>(sqlite3_value_bytes(v)) : 0;
        out.offset = arena->size();
        if (p) arena->append(static_cast<const char*>(p), out.bytes);
        bytes += out.bytes;
        break;
      }
      default:
        out.type = SQLITE_NULL;
    }
  }
  return bytes;
}

// Sets a column's result to `v`, whose bytes are in `arena`: SQLite copies
// them (SQLITE_TRANSIENT), as the arena is refilled by the next batch.
void ResultBatchValue(sqlite3_context* ctx, const BatchValue& v, const std::string& arena) {
  switch (v.type) {
    case SQLITE_INTEGER:
      return sqlite3_result_int64(ctx, v.integer);
    case SQLITE_FLOAT:
      return sqlite3_result_double(ctx, v.real);
    case SQLITE_TEXT:
      // Terminated in the arena: with a length of -1 SQLite finds the end
      // and keeps its copy terminated too; text with a NUL inside keeps its
      // length.
      return sqlite3_result_text(ctx, arena.data() + v.offset,
                                 v.nul_inside ? static_cast<int>(v.bytes) : -1, SQLITE_TRANSIENT);
    case SQLITE_BLOB:
      return sqlite3_result_blob(ctx, arena.data() + v.offset, static_cast<int>(v.bytes),
                                 SQLITE_TRANSIENT);
    default:
      return sqlite3_result_null(ctx);
  }
}

}  // namespace

bool IsAnswerTableCreate(int argc, const char* const* argv) {
  // The eponymous ask('q') is connected with no module arguments, as
  // main.ask, and so is temp.ask, made by QueryPilot (ext/querypilot.cpp); any other
  // table of this module was created by a user.
  const std::string schema = text::Lower(argv[1]);
  return argc > 3 || (schema != "main" && schema != "temp") || text::Lower(argv[2]) != "ask";
}

namespace {

int AnswerTableConnect(sqlite3* db, void* aux, int argc, const char* const* argv,
                       sqlite3_vtab** out, char** err) noexcept {
  auto fail = [err](const std::string& message) {
    *err = sqlite3_mprintf("%s", ("ask(): " + message).c_str());
    return SQLITE_ERROR;
  };
  try {
    const std::string schema = argv[1];
    const std::string name = argv[2];
    if (text::Lower(schema) != "temp") {
      return fail(fmt::format(
          "an answer table must be a temp table, as in CREATE VIRTUAL TABLE temp.{0} USING "
          "ask('...'): one in {1} would write that database's schema",
          name, schema));
    }
    if (argc != 4) {
      return fail(
          fmt::format("CREATE VIRTUAL TABLE temp.{} USING ask('question') takes one "
                      "question, not {}",
                      name, argc - 3));
    }
    Result<std::string> question = QuestionArgument(argv[3]);
    if (!question.ok()) return fail(question.status().message());
    auto session = *static_cast<std::shared_ptr<Session>*>(aux);
    auto spec = session->AnswerTable(schema, name, question.value());
    if (!spec.ok()) return fail(spec.status().message());
    const std::string declaration = Declaration(*spec.value());
    int rc = sqlite3_declare_vtab(db, declaration.c_str());
    if (rc != SQLITE_OK) {
      session->DropAnswerTable(schema, name);
      return fail(
          fmt::format("could not declare the table ({}): {}", sqlite3_errmsg(db), declaration));
    }
    auto* table = new AnswerTable();
    table->session = std::move(session);
    table->schema = schema;
    table->name = name;
    table->spec = std::move(spec).value();
    *out = &table->base;
    return SQLITE_OK;
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return fail("internal error");
  }
}

int AnswerTableBestIndex(sqlite3_vtab*, sqlite3_index_info* info) noexcept {
  // Every scan runs the whole query: no constraint is used.
  info->estimatedCost = 1e6;
  info->estimatedRows = 1000;
  return SQLITE_OK;
}

int AnswerTableDisconnect(sqlite3_vtab* vtab) noexcept {
  delete TableOf(vtab);
  return SQLITE_OK;
}

int AnswerTableDestroy(sqlite3_vtab* vtab) noexcept {
  AnswerTable* table = TableOf(vtab);
  try {
    table->session->DropAnswerTable(table->schema, table->name);
  } catch (...) {
  }
  delete table;
  return SQLITE_OK;
}

int AnswerTableOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) noexcept {
  return GuardVtab(vtab, "ask", [&] {
    auto* cur = new AnswerCursor();
    cur->session = TableOf(vtab)->session;
    *out = &cur->base;
    return SQLITE_OK;
  });
}

int AnswerTableClose(sqlite3_vtab_cursor* base) noexcept {
  AnswerCursor* cur = CursorOf(base);
  GuardVtab(base->pVtab, "ask", [&] {
    cur->Leave();
    return SQLITE_OK;
  });
  delete cur;
  return SQLITE_OK;
}

int AnswerTableNext(sqlite3_vtab_cursor* base) noexcept {
  AnswerCursor* cur = CursorOf(base);
  return GuardVtab(base->pVtab, "ask", [&] {
    if (cur->batch_index + 1 < cur->batch_rows) {
      ++cur->batch_index;
      ++cur->rowid;
      return SQLITE_OK;
    }
    cur->batch_rows = 0;
    cur->batch_index = 0;
    cur->batch.clear();
    cur->arena.clear();
    Result<size_t> got = cur->live->ReadAhead([cur](sqlite3_stmt* stmt) {
      ++cur->batch_rows;
      return ReadBatchRow(stmt, cur->answer_columns, &cur->batch, &cur->arena);
    });
    if (!got.ok()) {
      SetVtabError(base->pVtab,
                   fmt::format("ask(): the answer's query failed ({}): {}",
                               ErrorKindName(got.status().kind()), got.status().message()));
      cur->eof = true;
      cur->live.reset();
      return SQLITE_ERROR;
    }
    cur->eof = got.value() == 0;
    if (cur->eof) {
      cur->live.reset();
    } else {
      ++cur->rowid;
    }
    return SQLITE_OK;
  });
}

int AnswerTableFilter(sqlite3_vtab_cursor* base, int, const char*, int, sqlite3_value**) noexcept {
  AnswerCursor* cur = CursorOf(base);
  AnswerTable* table = TableOf(base->pVtab);
  return GuardVtab(base->pVtab, "ask", [&] {
    cur->Leave();
    cur->batch_rows = 0;
    cur->batch_index = 0;
    cur->rowid = 0;
    cur->eof = true;
    if (Status st = cur->session->Reachable("the answer table " + table->name); !st.ok()) {
      SetVtabError(base->pVtab, "ask(): " + st.message());
      return SQLITE_ERROR;
    }
    auto live = cur->session->ScanAnswerTable(*table->spec);
    if (!live.ok()) {
      SetVtabError(base->pVtab, "ask(): " + live.status().message());
      return SQLITE_ERROR;
    }
    cur->live = std::move(live).value();
    cur->answer_columns = table->spec->answer_columns;
    return AnswerTableNext(base);
  });
}

int AnswerTableEof(sqlite3_vtab_cursor* base) noexcept {
  return CursorOf(base)->eof ? 1 : 0;
}

int AnswerTableColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) noexcept {
  AnswerCursor* cur = CursorOf(base);
  if (column < cur->answer_columns) {
    const size_t at =
        cur->batch_index * static_cast<size_t>(cur->answer_columns) + static_cast<size_t>(column);
    if (at < cur->batch.size()) ResultBatchValue(ctx, cur->batch[at], cur->arena);
    return SQLITE_OK;
  }
  const AnswerTableSpec& spec = *TableOf(base->pVtab)->spec;
  if (column == spec.answer_columns) {
    sqlite3_result_int64(ctx, spec.run_id);
  } else if (column == spec.answer_columns + 2) {
    if (spec.confidence) {
      sqlite3_result_int64(ctx, *spec.confidence);
    } else {
      sqlite3_result_null(ctx);
    }
  } else if (column == spec.answer_columns + 3) {
    if (spec.confidence_reason.empty()) {
      sqlite3_result_null(ctx);
    } else {
      sqlite3_result_text(ctx, spec.confidence_reason.c_str(),
                          static_cast<int>(spec.confidence_reason.size()), SQLITE_TRANSIENT);
    }
  } else {
    sqlite3_result_text(ctx, spec.sql.c_str(), static_cast<int>(spec.sql.size()), SQLITE_TRANSIENT);
  }
  return SQLITE_OK;
}

int AnswerTableRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) noexcept {
  *rowid = CursorOf(base)->rowid;
  return SQLITE_OK;
}

}  // namespace

constinit const sqlite3_module kAnswerTableModule = {
    /* iVersion    */ 0,
    /* xCreate     */ AnswerTableConnect,
    /* xConnect    */ AnswerTableConnect,
    /* xBestIndex  */ AnswerTableBestIndex,
    /* xDisconnect */ AnswerTableDisconnect,
    /* xDestroy    */ AnswerTableDestroy,
    /* xOpen       */ AnswerTableOpen,
    /* xClose      */ AnswerTableClose,
    /* xFilter     */ AnswerTableFilter,
    /* xNext       */ AnswerTableNext,
    /* xEof        */ AnswerTableEof,
    /* xColumn     */ AnswerTableColumn,
    /* xRowid      */ AnswerTableRowid,
    /* xUpdate     */ nullptr,
    /* xBegin      */ nullptr,
    /* xSync       */ nullptr,
    /* xCommit     */ nullptr,
    /* xRollback   */ nullptr,
    /* xFindMethod */ nullptr,
    /* xRename     */ nullptr,  // ask's own (ask_vtab.cpp) refuses for every kind
    /* xSavepoint  */ nullptr,
    /* xRelease    */ nullptr,
    /* xRollbackTo */ nullptr,
    /* xShadowName */ nullptr,
};

}  // namespace querypilot::ext
