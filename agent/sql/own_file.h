// QueryPilot's own files (history_file, value_index_file) are never a file of
// the host connection, whatever name they are given.
//
// A name is resolved as SQLite resolves it when QueryPilot opens the file
// (always with SQLITE_OPEN_URI, so "file:" means a URI on every host), and
// compared by identity, not spelling: the canonical path (symlinks and "..",
// followed) and the device and inode of every file that exists. The host's
// side is every database of the connection (main, temp, attached), each with
// its -journal, -wal and -shm files; QueryPilot's side is the file and its
// own three. A hard link, a symlink, "./", "../", a "file:" or "file://" URI
// with parameters: each resolves to the same identity and is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/base/status.h"

struct sqlite3;

namespace querypilot {

// What SQLite opens for a filename given with SQLITE_OPEN_URI.
struct SqliteFilename {
  std::string path;     // the file's name, URI escapes decoded; "" for a temporary database
  std::string vfs;      // the URI's vfs parameter, "" when none
  std::string mode;     // the URI's mode parameter (ro, rw, rwc, memory), "" when none
  bool memory = false;  // ":memory:" or mode=memory: no file at all
};

// Parses `name` as sqlite3_open_v2 does with SQLITE_OPEN_URI (sqlite.org/uri.html):
// a "file:" prefix makes it a URI (authority empty or "localhost", %HH escapes,
// parameters after '?', a fragment after '#'); anything else is a plain name.
// An invalid URI is an error, as it is for SQLite.
Result<SqliteFilename> ParseSqliteFilename(std::string_view name);

// The flags QueryPilot opens its own files with: read-write, created when
// missing, serialized, and URIs always understood.
int OwnFileOpenFlags();

// Ok when `name` may be QueryPilot's own file next to the connection `host`:
// it resolves to a file on disk (not memory, not a VFS whose files cannot be
// compared) that is none of the connection's database, journal or WAL files,
// and none of its own journal or WAL files is one of them either. An error
// names `setting` and the database it would be; a name whose identity cannot
// be established (a missing folder, an unknown VFS) is refused too. Nothing is
// created or opened: only stat() and realpath().
Status CheckOwnFile(sqlite3* host, std::string_view name, std::string_view setting);

// The host connections QueryPilot serves in this process. SQLite has no list
// of a process's connections, and another connection may be busy on another
// thread (or opened without a mutex), so none is ever queried from here:
// each session registers its connection while it lives, with the file of its
// main database, and each own-file check on a connection records the
// databases it listed there. CheckOwnFile and CheckOwnConnection also refuse
// a file that another registered connection had as a database when it last
// listed them (at its load, its last ask or its last write to an own file). A
// connection that never loaded QueryPilot is not known.
class HostConnectionRegistration {
 public:
  explicit HostConnectionRegistration(sqlite3* db);
  ~HostConnectionRegistration();
  HostConnectionRegistration(const HostConnectionRegistration&) = delete;
  HostConnectionRegistration& operator=(const HostConnectionRegistration&) = delete;

 private:
  sqlite3* db_;
  uint64_t token_;  // a later registration of the same address is not this one's to remove
};

// Records the databases `host` lists now, for the checks of the process's
// other connections (as an own-file check on it does). Nothing when `host`
// is not registered or its list cannot be read.
void RecordConnectionDatabases(sqlite3* host);

// The same check for a connection QueryPilot has just opened on its own file,
// with the name SQLite itself resolved (sqlite3_db_filename): a second line of
// defence, run before anything is written.
Status CheckOwnConnection(sqlite3* host, sqlite3* own, std::string_view setting);

// A folder of QueryPilot's own, where it keeps files it names itself (the
// kept value indexes): with `create`, made when missing (mode 0700, with any
// missing parent). Refused when it is a symbolic link, not a folder, not the
// effective user's, or open to group or others (a mode QueryPilot never
// sets): a folder QueryPilot did not make may hold, under names it gives,
// files it must never write or remove. Returns the folder's canonical name,
// so that a file named in it passes through no symbolic link; an error
// saying what is wrong and what to do.
Result<std::string> OwnFolder(const std::string& dir, bool create);

// A folder of the user's cache for QueryPilot's files of one kind (`part`:
// "values", "history"): $XDG_CACHE_HOME/querypilot/<part>, else
// $HOME/.cache/querypilot/<part>; "" when neither variable is an absolute
// path. Nothing is created or checked (OwnFolder does that).
std::string CacheFolder(std::string_view part);

// A name for a file QueryPilot keeps for the database file `file`, made from
// the file's identity (its canonical path, device and inode):
// "<its name>-<16 hex digits>", its name cut to 64 characters and each
// character but letters, digits, '.' and '_' made '_'. A file renamed, or
// replaced by another, gets another name. An error when the file cannot be
// resolved or read.
Result<std::string> DatabaseFileKey(const std::string& file);

// Makes the name `path` (in a folder OwnFolder accepted) and its -journal,
// -wal and -shm names safe for SQLite to open: each that is there but is not
// a plain file of the effective user's with no other name (a symbolic link,
// a hard link, another user's file, a folder, a device) is removed: the
// name, never what a link points at. Returns what was removed, said for the
// user ("" when nothing was); an error when such a name cannot be removed.
Result<std::string> ClearOwnFileName(const std::string& path);

// A plain file as the system knows it: device and inode.
struct PlainFile {
  uint64_t dev = 0;
  uint64_t ino = 0;
  bool operator==(const PlainFile&) const = default;
};
// `path` when it names, now, a plain file of the effective user's with no
// other name and is no symbolic link; nullopt otherwise (or when missing).
std::optional<PlainFile> OwnPlainFile(const std::string& path);

// Removes `path` and its -journal, -wal and -shm files (names only, never
// through a link). False when the file itself was there and could not be.
bool RemoveOwnFile(const std::string& path);

}  // namespace querypilot
