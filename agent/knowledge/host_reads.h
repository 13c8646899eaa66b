// Which tables the host's rules let read whole, found many tables to a
// compiled statement rather than one (agent/knowledge/schema.h: on the
// host's own connection, what its rules leave out is not even read, so
// every table is checked before anything is sampled).
#pragma once

#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"

struct sqlite3;

namespace querypilot {

// For each table of `schema`, true when the host's rules (the authorizer of
// `host`) now let a statement read every one of its columns; false where
// that is not known here, and the caller checks the table by itself
// (HostKeeps, schema.cpp). Tables are taken a group at a time: the
// statement that selects each one's columns (SELECT q."a", ... FROM
// "main"."t" AS q), joined by UNION ALL, is compiled on `host` and never run
// (EXPLAIN). A group compiles only where no column of it is denied, and its
// program makes one read for each column unless the rules blank one (its
// read compiled into a NULL): a group short of a read, or that does not
// compile, is false throughout. Ordinary tables only: a view, a virtual
// table or one with a generated column (`generated`) reads other than its
// columns, and is always false. kInterrupted on the host's interrupt.
Result<std::vector<bool>> HostReadsAll(sqlite3* host, const Schema& schema,
                                       const std::vector<bool>& generated);

// HostReadsAll for the tables of `schema` at `places` only (an ask's shown
// tables, SchemaCache::Confirm): one answer per place, in their order.
Result<std::vector<bool>> HostReadsThese(sqlite3* host, const Schema& schema,
                                         const std::vector<bool>& generated,
                                         const std::vector<size_t>& places);

}  // namespace querypilot
