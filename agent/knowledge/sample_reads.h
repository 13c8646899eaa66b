// Sample rows: a few rows of each table, read for the prompt within the
// bounds agent/knowledge/schema.h states (kSampleReadMs, kSampleBudgetMs,
// kSampleValueBytes), stopped by the host's interrupt. IntrospectSchema reads
// every table's; SchemaCache those a prompt shows (SchemaCache::WithSamples).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/sql/interrupt.h"

struct sqlite3;

namespace querypilot {

// SELECT q."a", q."b" FROM "main"."t" AS q: the columns `which` of `t`. Each
// column is qualified: a name the connection does not know (a schema another
// connection changed, not reloaded yet) then fails the prepare, and SQLite
// reloads the schema and prepares again, instead of reading a bare "a" as
// the string 'a' (its double-quoted string fallback), which would look like
// a blanked column.
std::string SelectColumns(const TableInfo& t, const std::vector<size_t>& which);

// 0, 1, ... for each column of `t`.
std::vector<size_t> AllColumns(const TableInfo& t);

// Whether the sample rows of `t` are read at all: on the host's connection
// (`on_host`) a read can be stopped between steps only, so what may run code
// of unknown length (a view's body, a module, a generated column's
// expression: `generated` says it has one) is not sampled there.
bool Sampled(const TableInfo& t, bool on_host, bool generated);

// Reads the sample rows of every table of `schema` that is Sampled() (up to
// `sample_rows` each; `generated` says which have a generated column) on
// `db` (`host` is the host's connection, `db` itself or QueryPilot's own read
// connection to the same files), within the bounds above, all of them by
// `*budget_end_ns` (set to kSampleBudgetMs from now when 0), several tables
// to a statement where they can be, into each table's `sample_rows` (and
// the notes they add, NoteNumbersAsText). A read stopped so is recorded in
// schema->stopped_reads. kInterrupted when the host's interrupt (`interrupt`)
// stopped it.
Status SampleTables(sqlite3* db, sqlite3* host, int sample_rows, bool on_host,
                    const std::vector<bool>& generated, int64_t* budget_end_ns,
                    InterruptProbe* interrupt, Schema* schema);

}  // namespace querypilot
