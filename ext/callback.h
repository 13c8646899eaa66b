// No C++ exception crosses into SQLite.
//
// Every callback SQLite calls is noexcept and runs its body through one of
// these guards: std::bad_alloc becomes SQLITE_NOMEM, any other exception an
// error message that names the callback it escaped from.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "agent/sqlite.h"

namespace querypilot::ext {

// Replaces a virtual table's error message (sqlite3_free()s the old one).
inline void SetVtabError(sqlite3_vtab* vtab, const std::string& message) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
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

}  // namespace querypilot::ext
