#include "agent/sql/read_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/database_list.h"
#include "agent/sql/statement.h"

namespace querypilot {

std::string PragmaText(sqlite3* host, const std::string& database, const char* pragma) {
  auto st =
      Statement::Prepare(host, fmt::format("PRAGMA {}.{}", QuoteIdentifier(database), pragma));
  return st.ok() && st->Step() == SQLITE_ROW ? text::Lower(st->ColumnText(0)) : "";
}

// True when the database is opened with the default VFS: another VFS may
// not read the same file twice (memdb, an encrypting VFS).
bool DefaultVfs(sqlite3* host, const std::string& database) {
  const sqlite3_vfs* standard = sqlite3_vfs_find(nullptr);
  char* name = nullptr;
  if (!standard ||
      sqlite3_file_control(host, database.c_str(), SQLITE_FCNTL_VFSNAME, &name) != SQLITE_OK ||
      !name) {
    return false;
  }
  const bool same = std::strcmp(name, standard->zName) == 0;
  sqlite3_free(name);
  return same;
}

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

// The databases of `want` opened beside the host on one connection: main,
// then each other one attached under its name, each read once (a file this
// connection cannot read, locked exclusively, encrypted or not a database,
// is read on the host). Null when one fails; else `*wal` says which are in
// WAL mode, as this connection found them.
std::shared_ptr<sqlite3> OpenAll(
    const std::vector<std::tuple<std::string, std::string, bool>>& want, std::vector<bool>* wal) {
  Result<sqlite3*> db =
      OpenBeside(std::get<1>(want[0]), std::get<2>(want[0]), SQLITE_OPEN_FULLMUTEX);
  if (!db.ok()) return nullptr;
  // close_v2: a statement still open on it (never expected) delays the close
  // instead of leaking the connection and its files.
  std::shared_ptr<sqlite3> opened(db.value(), [](sqlite3* d) { sqlite3_close_v2(d); });
  for (size_t i = 1; i < want.size(); ++i) {
    const auto& [name, file, writable] = want[i];
    auto attach =
        Statement::Prepare(opened.get(), fmt::format("ATTACH ?1 AS {}", QuoteIdentifier(name)));
    if (!attach.ok()) return nullptr;
    attach->Bind(1, BesideUri(file, writable));
    if (attach->Step() != SQLITE_DONE) return nullptr;
  }
  wal->clear();
  for (const auto& [name, file, writable] : want) {
    auto st = Statement::Prepare(
        opened.get(), fmt::format("SELECT count(*) FROM {}.sqlite_master", QuoteIdentifier(name)));
    if (!st.ok() || st->Step() != SQLITE_ROW) return nullptr;
    st = Statement();
    // WAL mode is known once a file has been read.
    wal->push_back(PragmaText(opened.get(), name, "journal_mode") == "wal");
  }
  return opened;
}

}  // namespace

bool HostCheckpointsOnClose(sqlite3* host, const std::string& database) {
  if (sqlite3_db_readonly(host, database.c_str()) != 0) return false;
  int no_checkpoint = 0;
  // A SQLite older than the option (3.16) always checkpoints on close.
  if (sqlite3_db_config(host, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, -1, &no_checkpoint) == SQLITE_OK &&
      no_checkpoint != 0) {
    return false;
  }
  int persist = -1;  // -1: read the setting
  if (sqlite3_file_control(host, database.c_str(), SQLITE_FCNTL_PERSIST_WAL, &persist) ==
          SQLITE_OK &&
      persist > 0) {
    return false;
  }
  return true;
}

std::string BesideUri(const std::string& file, bool writable) {
  // "file://" and an empty authority: the path may begin with "//" too.
  std::string uri = file.starts_with("/") ? "file://" : "file:";
  for (char c : file) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri.push_back(c);
    }
  }
  return uri + (writable ? "?mode=rw" : "?mode=ro");
}

Result<sqlite3*> OpenBeside(const std::string& file, bool writable, int flags) {
  sqlite3* db = nullptr;
  // SQLITE_OPEN_READWRITE lets an ATTACH say mode=rw; each file's own mode
  // is its URI's.
  const int rc = OpenOwnConnection(BesideUri(file, writable).c_str(), &db,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | flags);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status(ErrorKind::kDatabaseIo,
                  fmt::format("could not open the database \"{}\": {}", file, message));
  }
  // Nothing QueryPilot runs here may write; only SQLite's own checkpoint at
  // the last close of a file in WAL mode does.
  if (sqlite3_exec(db, "PRAGMA query_only = 1", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return Status(ErrorKind::kDatabaseIo,
                  fmt::format("could not open the database \"{}\" read-only", file));
  }
  return db;
}

ReadConnection::~ReadConnection() {
  Close();
}

void ReadConnection::Close() {
  MutexLock lock(&mu_);
  db_.reset();
  opened_.clear();
}

std::shared_ptr<sqlite3> ReadConnection::For(sqlite3* host) {
  // The host itself, not owned.
  const std::shared_ptr<sqlite3> itself(host, [](sqlite3*) {});
  if (!sqlite3_get_autocommit(host)) return itself;  // its own writes are seen only by it
  auto not_used = [&] {
    Close();  // a connection not used is not kept open beside the host's
    return itself;
  };
  std::optional<Databases> dbs = FileDatabases(host);
  if (!dbs) return not_used();
  // Every file in WAL mode: the host's reads block no writer (the host's own
  // view of the mode, which it learnt when it first read each file).
  std::vector<bool> host_wal;
  for (const auto& d : *dbs) host_wal.push_back(PragmaText(host, d.first, "journal_mode") == "wal");
  if (std::all_of(host_wal.begin(), host_wal.end(), [](bool w) { return w; })) return not_used();
  if (HasUserTables(host, "temp")) return not_used();
  for (const auto& [name, file] : *dbs) {
    if (PragmaText(host, name, "locking_mode") == "exclusive" || !DefaultVfs(host, name))
      return not_used();
  }
  // A file in WAL mode is opened so that it closes as the host's would.
  Opened want;
  for (size_t i = 0; i < dbs->size(); ++i) {
    const auto& [name, file] = (*dbs)[i];
    want.emplace_back(name, file, host_wal[i] && HostCheckpointsOnClose(host, name));
  }
  MutexLock lock(&mu_);
  if (!db_ || opened_ != want) {
    db_.reset();
    opened_.clear();
    std::vector<bool> wal;
    std::shared_ptr<sqlite3> opened = OpenAll(want, &wal);
    if (!opened) return itself;
    // A file the host has not read yet is in WAL mode after all: opened
    // again as one.
    bool again = false;
    for (size_t i = 0; i < want.size(); ++i) {
      auto& [name, file, writable] = want[i];
      if (wal[i] && !writable && HostCheckpointsOnClose(host, name)) writable = again = true;
    }
    if (again) {
      opened.reset();
      opened = OpenAll(want, &wal);
      if (!opened) return itself;
    }
    // Every file in WAL mode: the host's reads block no writer.
    if (std::all_of(wal.begin(), wal.end(), [](bool w) { return w; })) return itself;
    db_ = std::move(opened);
    opened_ = std::move(want);
  }
  // Waits for a lock as the host would.
  auto timeout = Statement::Prepare(host, "PRAGMA busy_timeout");
  if (timeout.ok() && timeout->Step() == SQLITE_ROW)
    sqlite3_busy_timeout(db_.get(), static_cast<int>(timeout->ColumnInt(0)));
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
