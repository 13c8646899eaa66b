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
// when the extension is loaded), so the statement that asks holds nothing on
// the main database by itself either.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace querypilot {

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
  // Thread-safe; the connection returned stays open while it is held.
  std::shared_ptr<sqlite3> For(sqlite3* host);

 private:
  void Close();
  std::mutex mu_;
  std::shared_ptr<sqlite3> db_;
  std::vector<std::pair<std::string, std::string>> opened_;  // (name, file), as attached
  bool useful_ = false;  // some database of opened_ is not in WAL mode
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
