// Schema: what the model is told about the host database.
//
// The data model and its rendering are pure (agent/base/schema_model.h);
// IntrospectSchema() reads a live connection (tables, views, columns, types,
// keys, a few sample rows) of every database of the connection, and
// SchemaCache keeps the result until a schema changes or a database is
// attached or detached.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/database_list.h"

struct sqlite3;

namespace querypilot {

// Bounds on the sample rows read for a prompt. On QueryPilot's own read
// connection each table's or view's read ends after kSampleReadMs (its
// progress handler, and the watchdog where SQLite has no progress
// callbacks), all of them together after kSampleBudgetMs, and no value may
// be longer than kSampleValueBytes (SQLITE_LIMIT_LENGTH, lowered on that
// connection only while it samples); a read stopped so leaves that table's
// samples out (Schema::stopped_reads says which and why). The host's
// interrupt (sqlite3_interrupt, Ctrl-C) stops them too. On the host's own
// connection neither its progress handler nor sqlite3_interrupt may be used:
// only ordinary tables (no view, no virtual table, no generated column: no
// code that could run unbounded) are sampled there, under the same length
// cap, lowered and restored around the read.
inline constexpr int kSampleReadMs = 250;
inline constexpr int kSampleBudgetMs = 1000;
inline constexpr int kSampleValueBytes = 1 << 20;

// Reads every database of `db` (main, temp, attached): user tables and views
// (not sqlite_* nor virtual-table shadow tables, nor QueryPilot's own answer
// tables), their columns and foreign keys, and up to `sample_rows` rows of
// each table, within the bounds above. Runs only read-only statements.
// What the host's rules deny is left out: a column that the authorizer of
// `host` (the host's connection; `db` itself when null) denies or blanks
// (SQLITE_DENY, or SQLITE_IGNORE, on a table's column or deep in a view) is
// not shown, sampled or hinted, and a table none of whose columns may be read
// is not shown at all (HostRules).
// `db` may be QueryPilot's own read connection, which has no authorizer: the
// host's decides through statements compiled (never run) on `host`.
// kInterrupted when the host's interrupt stopped a read.
Result<Schema> IntrospectSchema(sqlite3* db, int sample_rows, sqlite3* host = nullptr);

// `shown`, a schema an earlier prompt showed (its samples, notes and keys),
// under the host's rules as they are now, as IntrospectSchema applies them: a
// column that the authorizer of `host` now denies or blanks is left out with
// its samples and foreign keys, and a table none of whose columns may be read
// is left out. `reader`, QueryPilot's own connection to the same files (or
// null), is where each table's statement compiles without the host's rules,
// so that a column blanked deep in a view is found too; without it, a view's
// columns stay unless denied, and its sample rows, which nothing then checks,
// are left out. Statements are compiled, never run, and no
// file is read but the schemas. kInterrupted when the host's interrupt
// stopped the check. The result is not rendered.
Result<Schema> UnderHostRulesNow(const Schema& shown, sqlite3* host, sqlite3* reader);

// One number for the schemas of all the connection's databases and which
// databases are attached (each PRAGMA schema_version, names and files), or
// -1. Moves on any schema change, ATTACH or DETACH.
int64_t ReadSchemaVersion(sqlite3* db);

// A connection's cached Schema. What is read from the files (tables,
// columns, samples) is kept until the schema fingerprint (ReadSchemaVersion)
// or `sample_rows` changes. Sample rows are read only for the tables a
// prompt shows (WithSamples, SamplesToRead in linking.h): on a schema of a
// thousand tables, reading every table's was most of a first ask's time. The host's rules are
// applied to it again, since an authorizer may be set, changed or removed at any time and SQLite
// has no call that reads it back; that check only compiles statements on the host (one per table or
// view, EXPLAIN listed, never run; one per column where the host's program differs), so it takes no
// lock. It costs a few microseconds a table: on a schema of a thousand tables, most of an ask's own
// time. So a prompt's ask checks every table only where it must, and the tables its prompt shows
// always:
//   - Get(..., &all_checked) checks again every table the host's rules
//     left anything out of at the last whole check (so that a rule removed
//     shows it again), and every table when a check found a table changed;
//     the other tables are taken as that last whole check found them. At
//     the first ask, and when the files were read again, it checks none:
//     every table is taken as showing all its columns (on QueryPilot's own
//     read connection; on the host's, what its rules leave out is not even
//     read, and every table is checked);
//   - Confirm() then checks the tables the prompt shows (those the schema
//     linking picked and those its value hints name) under the rules as they
//     are now. When one of them changed, the prompt is made again from a
//     schema whose every table was checked (Get without `all_checked`).
// A table the host refuses now never reaches a prompt: either every table
// was checked at this ask, or every table shown was.
class SchemaCache {
 public:
  SchemaCache() = default;
  SchemaCache(const SchemaCache&) = delete;
  SchemaCache& operator=(const SchemaCache&) = delete;

  // `host` as for IntrospectSchema(). Without `all_checked`, every table is
  // checked under the host's rules now. With it, only those the last whole
  // check found anything of refused (none at the first ask), unless a whole
  // check is due (see above); `*all_checked` says whether every table was
  // checked. With it the caller must Confirm() the tables it shows.
  Result<std::shared_ptr<const Schema>> Get(sqlite3* db, int sample_rows, sqlite3* host = nullptr,
                                            bool* all_checked = nullptr);

  // A table by its database and name.
  using TableName = std::pair<std::string, std::string>;

  // Whether `tables` of `ruled`, a schema Get() returned, are still as it
  // shows them under the host's rules now (`db` and `host` as given to
  // Get()). False also when `ruled` is no longer the cache's latest schema
  // or names a table it does not hold: the caller then asks Get() for a
  // schema whose every table is checked, and the next Get() checks every
  // table too. kInterrupted when the host's interrupt stopped the check.
  Result<bool> Confirm(const Schema& ruled, const std::vector<TableName>& tables, sqlite3* db,
                       sqlite3* host = nullptr);

  // Get() reads no sample rows: the tables whose samples would be read
  // (IntrospectSchema) are marked TableInfo::samples_pending, unless an
  // earlier WithSamples() read them. This reads those of `tables`, as
  // IntrospectSchema reads them (on `db`, in its bounds, the host's
  // interrupt stopping them, a read stopped so recorded in stopped_reads),
  // all of an ask's reads by `*budget_end_ns` (0: kSampleBudgetMs from
  // now, then set), and keeps them for the next Get(). Returns a copy of
  // `ruled` (a schema Get() or this returned, with `db`, `sample_rows` and
  // `host` as given to Get(); or another cache's, for the same files, which
  // this one then reads first) with the samples of `tables` (and the notes
  // they add), rendered; `ruled` is not changed. A table whose schema
  // changed since is left without samples, recorded in stopped_reads.
  // kInterrupted when the host's interrupt stopped a read.
  Result<std::shared_ptr<const Schema>> WithSamples(const Schema& ruled,
                                                    const std::vector<TableName>& tables,
                                                    sqlite3* db, int sample_rows, sqlite3* host,
                                                    int64_t* budget_end_ns);

  // How many times Get() had to read the schema (for tests and benchmarks).
  int64_t introspections() const;
  // How many tables' sample rows were read since the files were last read
  // (for tests and benchmarks).
  int64_t tables_sampled() const;
  // How many tables were checked under the host's rules, by Get() and
  // Confirm() together, since the cache was made (for tests and benchmarks).
  int64_t tables_checked() const;

  struct Read;  // what was read from the files, before the host's rules (schema.cpp)

 private:
  mutable Mutex mu_;
  std::shared_ptr<const Read> read_ GUARDED_BY(mu_);
  bool read_on_host_ GUARDED_BY(mu_) = false;  // read_ was read on the host's connection
  int sample_rows_ GUARDED_BY(mu_) = -1;
  // The last schema Get() returned and the columns the host's rules let it
  // show (for each table of read_, and summed up in `shown_`), so that rules
  // unchanged reuse its rendering.
  std::shared_ptr<const Schema> schema_ GUARDED_BY(mu_);
  size_t schema_samples_ GUARDED_BY(mu_) = 0;  // tables' samples read that schema_ holds
  std::shared_ptr<const std::vector<std::vector<bool>>> keeps_ GUARDED_BY(mu_);
  std::string shown_ GUARDED_BY(mu_);
  // The next Get() checks every table (a check found one changed).
  bool check_all_ GUARDED_BY(mu_) = false;
  int64_t introspections_ GUARDED_BY(mu_) = 0;
  int64_t tables_checked_ GUARDED_BY(mu_) = 0;
};

}  // namespace querypilot
