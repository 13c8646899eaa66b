// ReadConnection: a read-only connection of QueryPilot's own to the host
// connection's database files, for what an ask reads before its model
// answers.
//
// SQLite keeps a connection's read transaction on a database while any
// statement of that connection runs, and the statement that called ask() runs
// until its rows are read. So whatever the ask reads from a database on the
// host connection stays locked (a SHARED lock) for the rest of that
// statement: in rollback-journal mode, SQLite's default, no other process or
// connection can commit a write to that file meanwhile, and with a model that
// takes seconds to answer, writers fail with SQLITE_BUSY or wait all that
// time. (In WAL mode readers never block a writer.)
//
// The schema, its sample rows, the value index and the answer cache's schema
// check are read here instead, when that reads the same thing: the host is in
// autocommit mode (no uncommitted writes of its own to see), every database
// of the host is a file of the default VFS, at least one of them not in WAL
// mode, the host has no temp tables of its own, and it does not hold its
// files in exclusive locking mode. A run's reads here before its first model
// call are one short read transaction (PreModelReads, below); later reads are
// each a transaction of their own, ended when its statement is. The model's SQL then
// runs on the host connection, as always: from its first run the host's
// statement holds the lock its own query needs.
//
// The host's ask() table itself lives in its temp schema (temp.ask, made
// when the extension is loaded, or at the connection's first call of
// QueryPilot's when it is loaded as the connection opens), so the statement
// that asks holds nothing on the main database by itself either.
//
// Files in WAL mode. Every connection to a file in WAL mode holds it open
// (a SHARED lock, the -wal and -shm files mapped), and SQLite checkpoints
// the log into the database and removes the -wal and -shm files when the
// last connection to the file closes, if that one may write. QueryPilot's
// connections beside the host's (this one, the value index's background
// reader) close when the host's last connection that uses them closes, but
// SQLite closes a connection's files before it destroys what its functions
// hold: a read-only connection of QueryPilot's would then be the last, and
// leave the log on disk (rows committed since the last checkpoint only in
// the -wal file; a copy of the .db alone lacks them). So a file in WAL mode
// that the host's own close would checkpoint is opened read-write with
// PRAGMA query_only on: whichever closes last, the host or QueryPilot,
// checkpoints and removes the log, as plain SQLite does. No statement
// QueryPilot runs there can write; every other file is opened read-only.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"

struct sqlite3;

namespace querypilot {

// True when the host's last close of its database `database` would
// checkpoint a WAL log and remove it: the host may write the file, and has
// set neither SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE nor SQLITE_FCNTL_PERSIST_WAL.
// Reads only the connection's state, never the file.
bool HostCheckpointsOnClose(sqlite3* host, const std::string& database);

// A pragma's one value for `database` on `host` ("" when it has none),
// lower-cased: read from the connection's own state, no table is read.
std::string PragmaText(sqlite3* host, const std::string& database, const char* pragma);

// True when `database` of `host` is opened with the default VFS: another VFS
// may not read the same file twice (memdb, an encrypting VFS).
bool DefaultVfs(sqlite3* host, const std::string& database);

// The URI that opens the database file `file` beside the host: mode=rw
// (never created) when `writable`, else mode=ro. `file` is a full path, as
// PRAGMA database_list gives it.
std::string BesideUri(const std::string& file, bool writable);

// Opens the database file `file` beside the host, with SQLITE_OPEN_URI (so
// ATTACH takes BesideUri() names) and `flags` added: read-only, or, when
// `writable`, read-write with PRAGMA query_only on, so that its last close
// may checkpoint a WAL log (see above). The caller closes it.
Result<sqlite3*> OpenBeside(const std::string& file, bool writable, int flags = 0);

class ReadConnection {
 public:
  ReadConnection() = default;
  ~ReadConnection();
  ReadConnection(const ReadConnection&) = delete;
  ReadConnection& operator=(const ReadConnection&) = delete;

  // The connection to read the host's databases with now: this one, opened
  // (or reopened after an ATTACH or DETACH) on the host's files, when that
  // reads the same data and spares the host a lock (see above); else `host`
  // (not owned). Reads nothing of the host's database files on the host.
  // A connection not used is not kept. Thread-safe; the connection returned
  // stays open while it is held.
  std::shared_ptr<sqlite3> For(sqlite3* host);

 private:
  using Opened = std::vector<std::tuple<std::string, std::string, bool>>;  // (name, file, writable)
  void Close() EXCLUDES(mu_);
  Mutex mu_;
  std::shared_ptr<sqlite3> db_ GUARDED_BY(mu_);
  Opened opened_ GUARDED_BY(mu_);  // as attached
};

// The reads an ask makes on its read connection before its model answers, as
// one read transaction: the schema check, the value index's and the answer
// cache's each take and drop a SHARED lock on the file otherwise, and every
// such window is one in which another process cannot commit. Begun lazily
// (BEGIN takes no lock until the first read); End() ends it. The agent ends it
// once its last read of the user's files is done (the value index's, before
// the hints are looked up in QueryPilot's own store), and it must be ended
// before a model call at the latest, so that no lock is held while the model
// thinks.
class PreModelReads {
 public:
  // `reader`: QueryPilot's read connection, or nullptr (nothing to do).
  explicit PreModelReads(sqlite3* reader);
  ~PreModelReads() { End(); }
  PreModelReads(const PreModelReads&) = delete;
  PreModelReads& operator=(const PreModelReads&) = delete;

  // Ends the transaction if it is still open; idempotent.
  void End() noexcept;

 private:
  sqlite3* reader_ = nullptr;  // null once ended
};

}  // namespace querypilot
