#include "agent/sql/read_connection.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/database_list.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

// Each of these reads the host connection's own state, never a database
// file: the statements PRAGMA database_list (agent/sql/database_list.h),
// journal_mode, locking_mode and busy_timeout, and the temp schema, take no
// lock on main or an attached database.

using Databases = std::vector<std::pair<std::string, std::string>>;

// The host's databases but temp, or nullopt when one is not a file.
std::optional<Databases> FileDatabases(sqlite3* host) {
  std::optional<std::vector<DatabaseInfo>> list = ListDatabases(host);
  if (!list) return std::nullopt;
  Databases out;
  for (DatabaseInfo& d : *list) {
    if (d.name == "temp") continue;
    if (d.file.empty()) return std::nullopt;  // a memory database: only the host can read it
    out.emplace_back(std::move(d.name), std::move(d.file));
  }
  if (out.empty() || out[0].first != "main") return std::nullopt;
  return out;
}

std::string PragmaText(sqlite3* host, const std::string& database, const char* pragma) {
  auto st = Statement::Prepare(host, fmt::format("PRAGMA {}.{}", QuoteIdentifier(database), pragma));
  return st.ok() && st->Step() == SQLITE_ROW ? text::Lower(st->ColumnText(0)) : "";
}

// True when the database is opened with the default VFS: another VFS may
// not read the same file twice (memdb, an encrypting VFS).
bool DefaultVfs(sqlite3* host, const std::string& database) {
  const sqlite3_vfs* standard = sqlite3_vfs_find(nullptr);
  char* name = nullptr;
  if (!standard || sqlite3_file_control(host, database.c_str(), SQLITE_FCNTL_VFSNAME, &name) != SQLITE_OK ||
      !name) {
    return false;
  }
  const bool same = std::strcmp(name, standard->zName) == 0;
  sqlite3_free(name);
  return same;
}

}  // namespace

ReadConnection::~ReadConnection() { Close(); }

void ReadConnection::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  db_.reset();
  opened_.clear();
  useful_ = false;
}

std::shared_ptr<sqlite3> ReadConnection::For(sqlite3* host) {
  // The host itself, not owned.
  const std::shared_ptr<sqlite3> itself(host, [](sqlite3*) {});
  if (!sqlite3_get_autocommit(host)) return itself;  // its own writes are seen only by it
  std::optional<Databases> dbs = FileDatabases(host);
  if (!dbs) return itself;
  // Every file in WAL mode: the host's reads block no writer (the host's own
  // view of the mode, which it learnt when it first read each file).
  if (std::all_of(dbs->begin(), dbs->end(),
                  [&](const auto& d) { return PragmaText(host, d.first, "journal_mode") == "wal"; })) {
    return itself;
  }
  if (HasUserTables(host, "temp")) return itself;
  for (const auto& [name, file] : *dbs) {
    if (PragmaText(host, name, "locking_mode") == "exclusive" || !DefaultVfs(host, name)) return itself;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!db_ || opened_ != *dbs) {
    db_.reset();
    opened_.clear();
    useful_ = false;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((*dbs)[0].second.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
      sqlite3_close(db);
      return itself;
    }
    std::shared_ptr<sqlite3> opened(db, [](sqlite3* d) { sqlite3_close(d); });
    for (size_t i = 1; i < dbs->size(); ++i) {
      auto attach = Statement::Prepare(db, fmt::format("ATTACH ?1 AS {}", QuoteIdentifier((*dbs)[i].first)));
      if (!attach.ok()) return itself;
      attach->Bind(1, (*dbs)[i].second);
      if (attach->Step() != SQLITE_DONE) return itself;
    }
    // Read each schema once: a file this connection cannot read (locked
    // exclusively, encrypted, not a database) is read on the host. WAL mode
    // is known once a file has been read.
    for (const auto& [name, file] : *dbs) {
      auto st = Statement::Prepare(db, fmt::format("SELECT count(*) FROM {}.sqlite_master", QuoteIdentifier(name)));
      if (!st.ok() || st->Step() != SQLITE_ROW) return itself;
      st = Statement();
      if (PragmaText(db, name, "journal_mode") != "wal") useful_ = true;
    }
    db_ = std::move(opened);
    opened_ = *dbs;
  }
  if (!useful_) return itself;  // every file in WAL mode: the host's reads block no writer
  // Waits for a lock as the host would.
  auto timeout = Statement::Prepare(host, "PRAGMA busy_timeout");
  if (timeout.ok() && timeout->Step() == SQLITE_ROW) sqlite3_busy_timeout(db_.get(), static_cast<int>(timeout->ColumnInt(0)));
  return db_;
}

PreModelReads::PreModelReads(sqlite3* reader) {
  if (reader == nullptr || !sqlite3_get_autocommit(reader)) return;
  auto begin = Statement::Prepare(reader, "BEGIN");
  if (begin.ok() && begin->Step() == SQLITE_DONE) reader_ = reader;
}

void PreModelReads::End() noexcept {
  if (reader_ == nullptr) return;
  sqlite3* reader = std::exchange(reader_, nullptr);
  if (sqlite3_get_autocommit(reader)) return;
  // A read-only transaction: COMMIT only ends it. Should it fail (it cannot
  // on a reader), ROLLBACK still drops the lock.
  if (sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_exec(reader, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

}  // namespace querypilot
