// No C++ exception crosses into SQLite.
//
// Every callback SQLite calls is noexcept and runs its body through one of
// these guards: std::bad_alloc becomes SQLITE_NOMEM, any other exception an
// error message that names the callback it escaped from.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "agent/base/sqlite.h"
#include "agent/base/value.h"

namespace querypilot::ext {

// Replaces a virtual table's error message (sqlite3_free()s the old one).
inline void SetVtabError(sqlite3_vtab* vtab, const std::string& message) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
}

// Sets a function's or column's result to a copy of `s`.
inline void ResultText(sqlite3_context* ctx, const std::string& s) {
  sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

// Sets a function's or column's result to `v`, in its storage class.
inline void ResultValue(sqlite3_context* ctx, const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return sqlite3_result_int64(ctx, *i);
  if (const auto* d = std::get_if<double>(&v)) return sqlite3_result_double(ctx, *d);
  if (const auto* t = std::get_if<std::string>(&v)) return ResultText(ctx, *t);
  if (const auto* b = std::get_if<Blob>(&v)) {
    return sqlite3_result_blob(ctx, b->bytes.data(), static_cast<int>(b->bytes.size()),
                               SQLITE_TRANSIENT);
  }
  sqlite3_result_null(ctx);
}

// For xBestIndex, xFilter, xNext, ...: `body` returns an SQLite result code.
template <typename Body>
int GuardVtab(sqlite3_vtab* vtab, const char* where, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    try {
      SetVtabError(vtab, std::string(where) + ": internal error: " + e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      SetVtabError(vtab, std::string(where) + ": internal error");
    } catch (...) {
    }
  }
  return SQLITE_ERROR;
}

// For SQL functions: `body` sets the result itself.
template <typename Body>
void GuardFunction(sqlite3_context* ctx, const char* where, Body&& body) noexcept {
  try {
    body();
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    try {
      std::string msg = std::string(where) + ": internal error: " + e.what();
      sqlite3_result_error(ctx, msg.c_str(), -1);
    } catch (...) {
      sqlite3_result_error_nomem(ctx);
    }
  } catch (...) {
    sqlite3_result_error(ctx, where, -1);
  }
}

// xConnect for QueryPilot's eponymous virtual tables: declares the table,
// marks it DIRECTONLY, and gives the new Vtab (which has `base` and
// `session`) the connection's Session passed as the module's client data.
template <typename Vtab, typename SessionRef>
int ConnectDirectOnlyVtab(sqlite3* db, void* aux, const char* declaration, sqlite3_vtab** out,
                          char** err, const char* what) noexcept {
  try {
    int rc = sqlite3_declare_vtab(db, declaration);
    if (rc != SQLITE_OK) return rc;
    sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
    auto* vtab = new Vtab();
    vtab->session = *static_cast<SessionRef*>(aux);
    *out = &vtab->base;
    return SQLITE_OK;
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (...) {
    *err = sqlite3_mprintf("%s: could not connect the virtual table", what);
    return SQLITE_ERROR;
  }
}

}  // namespace querypilot::ext
