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
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/sql/database_list.h"

struct sqlite3;

namespace querypilot {

// Reads every database of `db` (main, temp, attached): user tables and views
// (not sqlite_* nor virtual-table shadow tables, nor QueryPilot's own answer
// tables), their columns and foreign keys, and up to `sample_rows` rows of
// each table. Runs only read-only statements.
// What the host's rules deny is left out: a column that the authorizer of
// `host` (the host's connection; `db` itself when null) denies or blanks
// (SQLITE_DENY, or SQLITE_IGNORE on a table's column) is not shown, sampled or
// hinted, and a table none of whose columns may be read is not shown at all.
// `db` may be QueryPilot's own read connection, which has no authorizer: the
// host's decides through statements prepared (never stepped) on `host`.
Result<Schema> IntrospectSchema(sqlite3* db, int sample_rows, sqlite3* host = nullptr);

// One number for the schemas of all the connection's databases and which
// databases are attached (each PRAGMA schema_version, names and files), or
// -1. Moves on any schema change, ATTACH or DETACH.
int64_t ReadSchemaVersion(sqlite3* db);

// A connection's cached Schema. Get() re-reads the schema when the
// connection's schema_version or `sample_rows` changed since the last read.
class SchemaCache {
 public:
  SchemaCache() = default;
  SchemaCache(const SchemaCache&) = delete;
  SchemaCache& operator=(const SchemaCache&) = delete;

  // `host` as for IntrospectSchema().
  Result<std::shared_ptr<const Schema>> Get(sqlite3* db, int sample_rows, sqlite3* host = nullptr);

  // How many times Get() had to read the schema (for tests and benchmarks).
  int64_t introspections() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Schema> schema_;
  int sample_rows_ = -1;
  int64_t introspections_ = 0;
};

}  // namespace querypilot
