// The rows of ask() and ask_result(): see ask_cursor.h.
#include "ext/ask_cursor.h"

#include <string>
#include <string_view>
#include <vector>

#include "agent/sql/executor.h"
#include "ext/callback.h"

namespace querypilot::ext {
namespace {

// The statement's current row as AppendRowJson writes a Row, read in place:
// one sqlite3_column_value a column (the connection's mutex taken once), the
// rest from the value itself.
void AppendStatementRowJson(std::string& out, const std::vector<std::string>& keys,
                            sqlite3_stmt* stmt) {
  for (size_t i = 0; i < keys.size(); ++i) {
    out += keys[i];
    sqlite3_value* v = sqlite3_column_value(stmt, static_cast<int>(i));
    switch (sqlite3_value_type(v)) {
      case SQLITE_INTEGER:
        AppendJsonInteger(out, sqlite3_value_int64(v));
        break;
      case SQLITE_FLOAT:
        AppendJsonReal(out, sqlite3_value_double(v));
        break;
      case SQLITE_TEXT: {
        const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
        AppendJsonString(out, p ? std::string_view(p, static_cast<size_t>(sqlite3_value_bytes(v)))
                                : std::string_view());
        break;
      }
      case SQLITE_BLOB: {
        const auto* p = static_cast<const char*>(sqlite3_value_blob(v));
        AppendJsonHex(out, p ? std::string_view(p, static_cast<size_t>(sqlite3_value_bytes(v)))
                             : std::string_view());
        break;
      }
      default:
        out += "null";
    }
  }
  if (keys.empty()) out.push_back('{');  // the first key carries the opening brace
  out.push_back('}');
}

// Reads the next batch of the live query into the cursor's JSON rows: how
// many rows it holds (0 at the end), or the query's error.
Result<size_t> ReadBatch(AskCursor* cur) {
  cur->batch_json.clear();  // keeps its capacity from batch to batch
  cur->batch_ends.clear();
  cur->batch_index = 0;
  if (cur->json_keys.empty()) cur->json_keys = JsonMemberKeys(cur->answer->column_names);
  return cur->live->ReadAhead([cur](sqlite3_stmt* stmt) {
    const size_t before = cur->batch_json.size();
    AppendStatementRowJson(cur->batch_json, cur->json_keys, stmt);
    cur->batch_ends.push_back(cur->batch_json.size());
    return cur->batch_json.size() - before;
  });
}

}  // namespace

int AdvanceRow(AskCursor* cur) {
  cur->row_json_ready = false;
  if (cur->live) {
    Result<bool> got = true;
    cur->from_batch = cur->live->query().buffered_rows().empty();
    if (!cur->from_batch) {
      got = cur->live->Next(&cur->row);
    } else if (cur->batch_index >= cur->batch_ends.size()) {
      Result<size_t> read = ReadBatch(cur);
      got = read.ok() ? Result<bool>(read.value() > 0) : Result<bool>(read.status());
    }
    if (!got.ok()) {
      SetVtabError(cur->base.pVtab, "ask(): the answer's query failed while streaming (" +
                                        std::string(ErrorKindName(got.status().kind())) +
                                        "): " + got.status().message());
      cur->eof = true;
      cur->live.reset();
      return SQLITE_ERROR;
    }
    if (!got.value()) {
      cur->eof = true;
      cur->live.reset();
      return SQLITE_OK;
    }
    if (cur->from_batch) {
      const size_t start = cur->batch_index == 0 ? 0 : cur->batch_ends[cur->batch_index - 1];
      cur->batch_row = std::string_view(cur->batch_json)
                           .substr(start, cur->batch_ends[cur->batch_index] - start);
      ++cur->batch_index;
    }
  } else {
    if (cur->replay_index >= cur->answer->rows.size()) {
      cur->eof = true;
      return SQLITE_OK;
    }
    cur->row = cur->answer->rows[cur->replay_index++];
  }
  cur->eof = false;
  ++cur->rowid;
  return SQLITE_OK;
}

int AskCursorColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) noexcept {
  auto* cur = reinterpret_cast<AskCursor*>(base);
  return GuardVtab(base->pVtab, "ask", [&] {
    switch (column) {
      case ASK_COLUMN_ROW:
        if (cur->from_batch) {
          sqlite3_result_text(ctx, cur->batch_row.data(), static_cast<int>(cur->batch_row.size()),
                              SQLITE_TRANSIENT);
          sqlite3_result_subtype(ctx, 'J');
          break;
        }
        if (!cur->row_json_ready) {
          cur->row_json.clear();  // keeps its capacity from row to row
          AppendRowJson(cur->row_json, cur->answer->column_names, cur->row);
          cur->row_json_ready = true;
        }
        sqlite3_result_text(ctx, cur->row_json.data(), static_cast<int>(cur->row_json.size()),
                            SQLITE_TRANSIENT);
        sqlite3_result_subtype(ctx, 'J');  // JSON, for json_* functions
        break;
      case ASK_COLUMN_RUN_ID:
        sqlite3_result_int64(ctx, cur->answer->run_id);
        break;
      case ASK_COLUMN_SQL:
        sqlite3_result_text(ctx, cur->answer->sql.c_str(), -1, SQLITE_TRANSIENT);
        break;
      case ASK_COLUMN_QUESTION:
        sqlite3_result_text(ctx, cur->question.data(), static_cast<int>(cur->question.size()),
                            SQLITE_TRANSIENT);
        break;
      case ASK_COLUMN_CONFIDENCE:
        if (cur->answer->confidence) {
          sqlite3_result_int64(ctx, *cur->answer->confidence);
        } else {
          sqlite3_result_null(ctx);
        }
        break;
      case ASK_COLUMN_CONFIDENCE_REASON:
        if (cur->answer->confidence_reason.empty()) {
          sqlite3_result_null(ctx);
        } else {
          sqlite3_result_text(ctx, cur->answer->confidence_reason.c_str(),
                              static_cast<int>(cur->answer->confidence_reason.size()),
                              SQLITE_TRANSIENT);
        }
        break;
    }
    return SQLITE_OK;
  });
}

}  // namespace querypilot::ext
