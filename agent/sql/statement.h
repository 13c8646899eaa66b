// Statement: the one owner of a sqlite3_stmt.
//
// Move-only; finalizes in its destructor. Every prepared statement in agent/
// and ext/ lives in one of these (SQLiteCpp's Statement is the model).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace querypilot {

class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Prepares the first statement of `sql`. `tail`, when given, receives the
  // unparsed rest. A failure carries SQLite's message (sqlite3_errmsg) and its
  // extended code in `*sqlite_code` when given.
  static Result<Statement> Prepare(sqlite3* db, std::string_view sql, std::string* tail = nullptr,
                                   int* sqlite_code = nullptr);

  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

  // sqlite3_step's result code (SQLITE_ROW, SQLITE_DONE or an error).
  int Step();
  int ColumnCount() const;
  std::string ColumnName(int i) const;
  std::string ColumnText(int i) const;  // "" for NULL
  // The column's text (a blob's bytes) without a copy: valid until the next
  // Step() or Reset() or another Column call on column `i`. "" for NULL.
  std::string_view ColumnView(int i) const;
  int64_t ColumnInt(int i) const;
  bool ColumnIsNull(int i) const;
  bool Bind(int index, std::string_view value);
  bool BindInt(int index, int64_t value);
  int ColumnType(int i) const;  // SQLITE_INTEGER, SQLITE_TEXT, ...
  // sqlite3_reset and sqlite3_clear_bindings: ready to run again.
  void Reset();

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace querypilot
