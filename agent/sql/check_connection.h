// The check connection: where QueryPilot applies its own rules to SQL it did
// not write, so that the host's connection keeps the host's authorizer.
//
// SQLite keeps one authorizer per connection and has no call that reads it
// back: setting QueryPilot's on the host's connection would clear the
// host's for good (an application that sandboxes its users with an
// authorizer, as Datasette does, would lose it). So QueryPilot never calls
// sqlite3_set_authorizer on a host's connection. Each host connection it is
// loaded into gets instead a private in-memory connection that mirrors what
// SQL there can name:
//   - every table and view of every database (main, temp, attached, by the
//     same names) as an empty table with the same columns, and every virtual
//     table as a stub virtual table with the same columns, hidden ones hidden;
//   - the host's functions, collations and eponymous virtual tables that a
//     fresh connection of the same SQLite library lacks, as stubs of the same
//     name and arity (the shell's readfile() and fsdir, an application's own);
//   - QueryPilot's own functions and modules.
// Generated SQL is prepared there under QueryPilot's authorizer (the rules:
// a query, one statement, no function or table that reaches outside the
// database, no side-effecting pragma, nothing of QueryPilot's own). Nothing
// on the mirror ever steps. Only SQL that passes is prepared on the host's
// connection, where the host's authorizer, if any, decides as always.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/sqlite.h"
#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/rules.h"
#include "agent/sql/statement.h"

struct sqlite3;

namespace querypilot {

// The mirror of one host connection.
class CheckConnection {
 public:
  // The check connection of `host`; its in-memory mirror is opened and read
  // from the host at the first Check(), and again whenever the host moved.
  static Result<std::unique_ptr<CheckConnection>> Open(sqlite3* host, OwnSurface own);
  ~CheckConnection();
  CheckConnection(const CheckConnection&) = delete;
  CheckConnection& operator=(const CheckConnection&) = delete;

  struct Verdict {
    Status status;               // Ok, or why the SQL may not run on the host
    size_t statement_bytes = 0;  // the first statement's length in `sql`
  };
  // Brings the mirror up to date with the host (its schema fingerprint, read
  // on the host: every database's schema_version) and judges `sql` there:
  // refused (kRefused), more than one statement, no SQL, or the prepare error
  // SQLite gives on the mirror. A name the mirror lacks (a function the host
  // registered since) rebuilds it once.
  Verdict Check(std::string_view sql);

 private:
  CheckConnection(sqlite3* host, sqlite3* mirror, OwnSurface own);
  // Rebuilds the mirror from the host when its fingerprint moved, or always
  // with `force`.
  Status Refresh(bool force);
  Status Rebuild();
  // Makes on the mirror every table of the host's named `lower_name` not
  // made yet; true if one was.
  bool EnsureTables(const std::string& lower_name);
  // The same for the table a "no such table: ..." message names.
  bool EnsureNamedTable(std::string_view message);
  struct HostTable {
    std::string database;  // as the host spells them
    std::string name;
    bool is_virtual = false;
    bool made = false;
  };

  sqlite3* host_;
  sqlite3* mirror_;
  OwnSurface own_;
  AuthRules rules_;
  std::string fingerprint_;
  bool built_ = false;
  struct Stubs;
  std::unique_ptr<Stubs> stubs_;
};

// A host connection's check connection, owned by the connection's session
// (made with it, gone with it: the connection is closing). From its making
// to its end, CheckSql() judges SQL for `host` on its CheckConnection (opened
// at the first check) and never sets an authorizer on `host`.
class HostCheck {
 public:
  // Made shared so that a check running on another thread keeps it alive
  // until that check ends.
  static std::shared_ptr<HostCheck> Adopt(sqlite3* host, OwnSurface own);
  ~HostCheck();
  HostCheck(const HostCheck&) = delete;
  HostCheck& operator=(const HostCheck&) = delete;

  // The mirror's verdict on `sql`; one check at a time.
  CheckConnection::Verdict Check(std::string_view sql) EXCLUDES(mu_);

 private:
  HostCheck(sqlite3* host, OwnSurface own);
  sqlite3* const host_;
  const OwnSurface own_;
  Mutex mu_;
  std::unique_ptr<CheckConnection> check_ GUARDED_BY(mu_);
};

// The verdict of `host`'s check connection on `sql`, or nullopt when no
// HostCheck lives for `host` (a connection of QueryPilot's own, or a
// test's), where the authorizer is QueryPilot's to set.
std::optional<CheckConnection::Verdict> CheckOnMirror(sqlite3* host, std::string_view sql);

}  // namespace querypilot
