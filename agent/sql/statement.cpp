#include "agent/sql/statement.h"

#include "agent/base/sqlite.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

Result<Statement> Statement::Prepare(sqlite3* db, std::string_view sql, std::string* tail,
                                     int* sqlite_code) {
  sqlite3_stmt* stmt = nullptr;
  const char* rest = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, &rest);
  if (sqlite_code) *sqlite_code = rc == SQLITE_OK ? SQLITE_OK : sqlite3_extended_errcode(db);
  if (rc != SQLITE_OK) {
    if (stmt) sqlite3_finalize(stmt);
    const std::string message = sqlite3_errmsg(db);
    return Status(ClassifySqliteFailure(rc, message), message);
  }
  if (tail) *tail = rest ? std::string(rest, sql.data() + sql.size() - rest) : std::string();
  return Statement(stmt);
}

int Statement::Step() {
  return sqlite3_step(stmt_);
}
int Statement::ColumnCount() const {
  return sqlite3_column_count(stmt_);
}

std::string Statement::ColumnName(int i) const {
  const char* n = sqlite3_column_name(stmt_, i);
  return n ? n : "";
}

std::string Statement::ColumnText(int i) const {
  const unsigned char* t = sqlite3_column_text(stmt_, i);
  return t ? std::string(reinterpret_cast<const char*>(t),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, i)))
           : std::string();
}

int64_t Statement::ColumnInt(int i) const {
  return sqlite3_column_int64(stmt_, i);
}
bool Statement::ColumnIsNull(int i) const {
  return sqlite3_column_type(stmt_, i) == SQLITE_NULL;
}

bool Statement::Bind(int index, std::string_view value) {
  return sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                           SQLITE_TRANSIENT) == SQLITE_OK;
}

bool Statement::BindInt(int index, int64_t value) {
  return sqlite3_bind_int64(stmt_, index, value) == SQLITE_OK;
}

std::string_view Statement::ColumnView(int i) const {
  const unsigned char* t = sqlite3_column_text(stmt_, i);
  return t ? std::string_view(reinterpret_cast<const char*>(t),
                              static_cast<size_t>(sqlite3_column_bytes(stmt_, i)))
           : std::string_view();
}

int Statement::ColumnType(int i) const {
  return sqlite3_column_type(stmt_, i);
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

}  // namespace querypilot
