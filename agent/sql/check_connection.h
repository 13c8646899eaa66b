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
#include "agent/sql/query_only.h"
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
  // with `force` (then what the SQLite library itself brings is read again
  // too).
  Status Refresh(bool force);
  Status Rebuild(bool read_library);
  // Reads from the host its tables, views and virtual tables of the names in
  // `lower_names` not looked up since the mirror was built (and with
  // `answer_tables`, every virtual table: QueryPilot's own answer tables are
  // among them), into the rules and the tables EnsureTables can make.
  void LookUp(const std::set<std::string>& lower_names, bool answer_tables);
  // Makes on the mirror every table of the host's named `lower_name` (looked
  // up) not made yet; true if one was.
  bool EnsureTables(const std::string& lower_name);
  // The same for the table a "no such table: ..." message names.
  bool EnsureNamedTable(std::string_view message);
  struct HostTable {
    std::string database;  // as the host spells them
    std::string name;
    bool is_virtual = false;
    // A view's CREATE VIEW statement as SQLite keeps it ("" for a table).
    std::string view_sql;
    bool made = false;
  };

  sqlite3* host_;
  sqlite3* mirror_;
  OwnSurface own_;
  AuthRules rules_;
  std::string fingerprint_;
  bool built_ = false;
  // The host's virtual tables (its answer tables among them) are still to be
  // looked up: done with the first statement's names after a build.
  bool answer_tables_pending_ = false;
  struct Stubs;
  std::unique_ptr<Stubs> stubs_;
};

// A host connection's check connection, owned by the connection's session
// (made with it, gone with it: the connection is closing). CheckSql() judges
// SQL for `host` on its CheckConnection (opened at the first check) when it
// is handed this HostCheck (in a SqlTarget), and never sets an authorizer on
// `host`.
class HostCheck {
 public:
  // Made shared so that a check running on another thread keeps it alive
  // until that check ends.
  static std::shared_ptr<HostCheck> Adopt(sqlite3* host, OwnSurface own);
  ~HostCheck();
  HostCheck(const HostCheck&) = delete;
  HostCheck& operator=(const HostCheck&) = delete;

  sqlite3* host() const { return host_; }
  // Whether PRAGMA query_only is owed a clearing on `host`
  // (agent/sql/query_only.h).
  QueryOnlyDebt& query_only_debt() { return query_only_debt_; }

  // The mirror's verdict on `sql`; one check at a time.
  CheckConnection::Verdict Check(std::string_view sql) EXCLUDES(mu_);

  // The functions the user allows generated SQL to call besides SQLite's
  // own (the allow_functions setting, as agent/config.h's
  // ParseFunctionNames reads it; agent/sql/program.h judges them). The
  // session sets them before each use.
  void AllowFunctions(std::set<std::string> names) EXCLUDES(mu_);
  std::set<std::string> allowed_functions() const EXCLUDES(mu_);

 private:
  HostCheck(sqlite3* host, OwnSurface own);
  sqlite3* const host_;
  const OwnSurface own_;
  QueryOnlyDebt query_only_debt_;
  mutable Mutex mu_;
  std::unique_ptr<CheckConnection> check_ GUARDED_BY(mu_);
  std::set<std::string> allowed_functions_ GUARDED_BY(mu_);
};

// The connection generated SQL is judged for and runs on, and how
// QueryPilot's rules reach it. Every function that checks or runs SQL
// (CheckSql, RunVerified, BoundedLookup, ...) takes one, and there is no
// conversion from a bare sqlite3*: each call site says which kind of
// connection it holds, so none can fall back to setting QueryPilot's
// authorizer on a host's connection (clearing the host's for good).
//   - Host(check): a connection QueryPilot is loaded into, with its
//     session's HostCheck; the rules run on the check connection.
//   - Own(db): a connection of QueryPilot's own (a read connection beside,
//     a test's), where the authorizer is QueryPilot's to set while it
//     prepares.
// A default-made SqlTarget names no connection: CheckSql refuses every SQL
// for it, so a context whose target was never set fails closed.
class SqlTarget {
 public:
  SqlTarget() = default;
  // `check` must not be null (else every SQL is refused).
  static SqlTarget Host(std::shared_ptr<HostCheck> check) {
    SqlTarget t;
    t.db_ = check ? check->host() : nullptr;
    t.check_ = std::move(check);
    return t;
  }
  static SqlTarget Own(sqlite3* db) {
    SqlTarget t;
    t.db_ = db;
    t.own_ = true;
    return t;
  }

  // The connection (null for a default-made target).
  sqlite3* db() const { return db_; }
  // The host's check; null for a connection of QueryPilot's own.
  HostCheck* check() const { return check_.get(); }
  const std::shared_ptr<HostCheck>& shared_check() const { return check_; }
  // True for Own(db).
  bool own() const { return own_; }
  // Where a PRAGMA query_only left set on a host's connection is owed; null
  // for a connection of QueryPilot's own.
  QueryOnlyDebt* query_only_debt() const { return check_ ? &check_->query_only_debt() : nullptr; }

 private:
  sqlite3* db_ = nullptr;
  std::shared_ptr<HostCheck> check_;
  bool own_ = false;
};

}  // namespace querypilot
