// What the value index reads of a source database file itself, not of its
// rows: whether it is small, its data version, and its stamp (kept by the
// store: ValueStore::Stamp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

struct sqlite3;

namespace querypilot {

// A database file of at most 1 MiB is read whole by the ask that needs it (a
// few milliseconds), so its hints never depend on the machine's load.
bool SmallFile(sqlite3* db, const std::string& database);

// PRAGMA data_version of `database`: moves when another connection commits.
// -1 when it cannot be read.
int64_t DataVersion(sqlite3* db, const std::string& database);

// A stamp of database file `database` of `db` as it is now, for
// ValueStore::Stamp(): the file's identity, size and times (stat), and
// SQLite's schema cookie and page count. In rollback-journal mode every
// commit writes the file, which moves its modification and change times,
// so the same stamp seen later means no table changed. nullopt where that
// does not hold or cannot be told: WAL mode (commits go to the -wal file),
// an open transaction of `host` when it is the connection read (its writes
// are not in the file), a database that is not a plain file, one changed
// within the last 3 s. Read before the tables are checked: a commit in
// between moves the file's times past the stamp, and within a read
// transaction of QueryPilot's own reading connection none can come.
std::optional<std::string> SourceStamp(sqlite3* db, sqlite3* host, const std::string& database);

}  // namespace querypilot
