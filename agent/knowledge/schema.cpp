#include "agent/knowledge/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/host_reads.h"
#include "agent/knowledge/linking.h"
#include "agent/knowledge/sample_reads.h"
#include "agent/knowledge/schema_columns.h"
#include "agent/sql/interrupt.h"
#include "agent/sql/statement.h"
#include "agent/sql/watchdog.h"

namespace querypilot {
namespace {

// The opcodes of the program SQLite compiles `sql` into on `db`, listed by
// EXPLAIN: preparing asks the connection's authorizer, and stepping an
// EXPLAIN lists the program without running it (no table is read, no lock
// taken). Nullopt when it cannot be compiled; `*code` is SQLite's code.
using Program = std::vector<std::string>;
std::optional<Program> Compile(sqlite3* db, const std::string& sql, int* code) {
  *code = SQLITE_OK;
  auto st = Statement::Prepare(db, "EXPLAIN " + sql, nullptr, code);
  if (!st.ok()) return std::nullopt;
  Program ops;
  int rc;
  while ((rc = st->Step()) == SQLITE_ROW) ops.push_back(st->ColumnText(1));
  if (rc != SQLITE_DONE) {
    *code = rc;
    return std::nullopt;
  }
  return ops;
}

// How many column reads a program makes: SQLITE_IGNORE compiles a read into
// a NULL.
size_t ColumnReads(const Program& p) {
  return static_cast<size_t>(std::count_if(p.begin(), p.end(), [](const std::string& op) {
    return op == "Column" || op == "Rowid" || op == "VColumn";
  }));
}

// Which columns of `t` the host's rules let a statement of `host` read now,
// or kInterrupted. Statements are compiled on `host`, never run: SQLITE_DENY
// fails the prepare, and SQLITE_IGNORE compiles the column's read into a NULL.
// With `reader` (QueryPilot's own connection, which has no authorizer) and
// `reference` (the program of the same statement there), a column is kept
// only where both connections compile it alike: a column blanked deep in a
// view's body (or one the view filters on) changes the program too. Without
// (the host reads for itself, or the reader cannot compile it): a table's
// column is kept where its program reads a column; a view's columns are kept,
// and their values are never sampled on the host.
Result<std::vector<bool>> HostKeeps(sqlite3* host, sqlite3* reader, const TableInfo& t,
                                    const std::optional<Program>& reference) {
  std::vector<bool> keep(t.columns.size(), true);
  if (t.columns.empty()) return keep;
  const bool compare = reader != nullptr && reference.has_value();
  int code = SQLITE_OK;
  std::optional<Program> all = Compile(host, SelectColumns(t, AllColumns(t)), &code);
  if ((code & 0xff) == SQLITE_INTERRUPT) return Status(ErrorKind::kInterrupted, "interrupted");
  if (all) {
    if (compare ? *all == *reference : t.is_view || ColumnReads(*all) >= t.columns.size())
      return keep;
  } else if ((code & 0xff) != SQLITE_AUTH) {
    return keep;  // a view over a missing table, a module not loaded: not the host's rules
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    const std::string one = SelectColumns(t, {i});
    std::optional<Program> host_program = Compile(host, one, &code);
    if ((code & 0xff) == SQLITE_INTERRUPT) return Status(ErrorKind::kInterrupted, "interrupted");
    if (!host_program) {
      keep[i] = false;
    } else if (compare) {
      int own_code = SQLITE_OK;
      std::optional<Program> own = Compile(reader, one, &own_code);
      keep[i] = own && *own == *host_program;
    } else {
      keep[i] = t.is_view || ColumnReads(*host_program) > 0;
    }
  }
  return keep;
}

// `t` with only the columns `keep` marks (their sample values and foreign
// keys too).
TableInfo KeepColumns(const TableInfo& t, const std::vector<bool>& keep) {
  TableInfo out = t;
  out.columns.clear();
  std::set<std::string> dropped;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) {
      out.columns.push_back(t.columns[i]);
    } else {
      dropped.insert(t.columns[i].name);
    }
  }
  if (dropped.empty()) return out;
  for (auto& row : out.sample_rows) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < keep.size() && i < row.size(); ++i) {
      if (keep[i]) kept.push_back(std::move(row[i]));
    }
    row = std::move(kept);
  }
  std::erase_if(out.foreign_keys,
                [&](const ForeignKeyInfo& fk) { return dropped.count(fk.from_column) > 0; });
  return out;
}

}  // namespace

int64_t ReadSchemaVersion(sqlite3* db) {
  // One number for every database of the connection: a change to any
  // schema, an ATTACH or a DETACH gives another.
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&h](std::string_view part) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  bool any = false;
  for (const DatabaseInfo& d : ListDatabases(db).value_or(std::vector<DatabaseInfo>{})) {
    if (d.name == "temp") {
      // The temp schema is small, and QueryPilot's own answer tables come
      // and go in it: what counts is the rest of it.
      auto st = Statement::Prepare(
          db, "SELECT type, name, coalesce(sql, '') FROM temp.sqlite_master ORDER BY name");
      if (!st.ok()) continue;
      mix(d.name);
      while (st->Step() == SQLITE_ROW) {
        if (IsAnswerTable(st->ColumnText(2))) continue;
        mix(st->ColumnText(0));
        mix(st->ColumnText(1));
        mix(st->ColumnText(2));
      }
      continue;
    }
    auto st =
        Statement::Prepare(db, fmt::format("PRAGMA {}.schema_version", QuoteIdentifier(d.name)));
    if (!st.ok() || st->Step() != SQLITE_ROW) continue;
    mix(d.name);
    mix(d.file);
    mix(std::to_string(st->ColumnInt(0)));
    any = true;
  }
  return any ? static_cast<int64_t>(h >> 1) : -1;
}

struct SchemaCache::Read {
  Schema schema;         // not rendered; before the host's rules of any one ask
  bool on_host = false;  // read on the host's connection
  // For each table of `schema`: whether it has a generated column.
  std::vector<bool> generated;
  // Each table's place in `schema.tables`, by its database and name.
  std::map<TableName, size_t> index;

  // For table `n`, when it was read on a connection other than the host's:
  // the program of its columns' statement there (HostKeeps), compiled on
  // `reader` the first time a check needs it (a cold ask checks only the
  // tables its prompt shows), then kept. Nullopt on the host's connection,
  // or where it cannot be compiled.
  std::optional<Program> Reference(size_t n, sqlite3* reader) const {
    if (on_host || !reader) return std::nullopt;
    Programs& p = *programs;
    {
      MutexLock lock(&p.mu);
      if (p.compiled.size() == schema.tables.size() && p.compiled[n]) return p.reference[n];
    }
    const TableInfo& t = schema.tables[n];
    std::optional<Program> program;
    if (!t.columns.empty()) {
      int code = SQLITE_OK;
      program = Compile(reader, SelectColumns(t, AllColumns(t)), &code);
    }
    MutexLock lock(&p.mu);
    if (p.compiled.size() != schema.tables.size()) {
      p.compiled.assign(schema.tables.size(), false);
      p.reference.assign(schema.tables.size(), std::nullopt);
    }
    p.compiled[n] = true;
    p.reference[n] = program;
    return program;
  }

  // The sample rows of the tables of `schema` whose samples are pending,
  // read the first time a prompt shows them (SchemaCache::WithSamples), then
  // kept: asks on several threads may read and take them at once.
  struct Samples {
    Mutex mu;
    std::vector<bool> read GUARDED_BY(mu);  // for each table, once its samples are read
    std::vector<std::vector<std::vector<std::string>>> rows GUARDED_BY(mu);
    std::vector<std::string> stopped_reads GUARDED_BY(mu);  // as Schema::stopped_reads
    size_t count GUARDED_BY(mu) = 0;                        // tables read
  };
  std::unique_ptr<Samples> samples = std::make_unique<Samples>();

  // How many tables' samples were read since the files were.
  size_t SamplesRead() const {
    MutexLock lock(&samples->mu);
    return samples->count;
  }

 private:
  // Asks on several threads may check tables of one Read at once.
  struct Programs {
    Mutex mu;
    std::vector<std::optional<Program>> reference GUARDED_BY(mu);
    std::vector<bool> compiled GUARDED_BY(mu);
  };
  std::unique_ptr<Programs> programs = std::make_unique<Programs>();
};

namespace {

// What the files hold, read on `db` (see IntrospectSchema). On QueryPilot's
// own connection nothing is left out yet: the host's rules are applied to it
// at each ask (RuledSchema). On the host's, what its rules leave out now is
// not even read. `lazy`: no sample rows are read; the tables whose samples
// would be are marked pending (TableInfo::samples_pending), and read when a
// prompt shows them (SchemaCache::WithSamples).
Result<SchemaCache::Read> ReadFiles(sqlite3* db, int sample_rows, sqlite3* host, bool lazy) {
  SchemaCache::Read read;
  read.on_host = db == host;
  Schema& schema = read.schema;
  schema.schema_version = ReadSchemaVersion(db);
  std::vector<DatabaseInfo> databases = ListDatabases(db).value_or(std::vector<DatabaseInfo>{});
  // main first (the prompt of a plain database is unchanged), then temp and
  // the attached databases in SQLite's order.
  std::stable_partition(databases.begin(), databases.end(),
                        [](const DatabaseInfo& d) { return d.name == "main"; });
  std::vector<DeclaredText> declared;  // for each table, as sqlite_schema says it
  for (const DatabaseInfo& d : databases) {
    // pragma_table_list (3.37+) marks virtual-table shadow tables as 'shadow'.
    auto list = Statement::Prepare(
        db,
        fmt::format(
            "SELECT l.name, l.type, m.sql, l.wr, l.ncol FROM pragma_table_list AS l "
            "LEFT JOIN {}.sqlite_master AS m ON m.name = l.name AND m.type IN ('table', 'view') "
            "WHERE l.schema = ?1 AND l.type IN ('table', 'view', 'virtual') "
            "AND l.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY l.name",
            QuoteIdentifier(d.name)));
    if (!list.ok()) return list.status();
    list->Bind(1, d.name);
    while (list->Step() == SQLITE_ROW) {
      if (list->ColumnText(1) == "virtual" && IsAnswerTable(list->ColumnText(2))) continue;
      TableInfo t;
      t.name = list->ColumnText(0);
      t.database = d.name;
      t.is_view = list->ColumnText(1) == "view";
      t.is_virtual = list->ColumnText(1) == "virtual";
      if (t.is_virtual) t.module = VirtualTableModule(list->ColumnText(2));
      t.without_rowid = list->ColumnInt(3) != 0;
      // An ordinary table's CREATE text and its number of columns: its
      // columns and foreign keys are read from them (ReadColumnsAndKeys).
      DeclaredText text;
      if (list->ColumnText(1) == "table") {
        text.sql = list->ColumnText(2);
        text.columns = list->ColumnInt(4);
      }
      declared.push_back(std::move(text));
      schema.tables.push_back(std::move(t));
    }
  }
  // Attached tables are always shown qualified ("world.city"); others where
  // their name is not unique.
  // (Names counted once each: a schema of thousands of tables is common.)
  std::unordered_map<std::string, int> named;
  for (const TableInfo& t : schema.tables) ++named[text::Lower(t.name)];
  for (TableInfo& t : schema.tables) {
    t.qualified = named[text::Lower(t.name)] > 1 || (t.database != "main" && t.database != "temp");
  }
  std::vector<bool> generated(schema.tables.size(), false);  // has a generated column
  if (Status st = ReadColumnsAndKeys(db, databases, declared, &schema, &generated); !st.ok())
    return st;
  if (read.on_host) {
    // Read under the host's rules as they are now: what they leave out is
    // not sampled.
    std::vector<TableInfo> shown;
    std::vector<bool> shown_generated;
    Result<std::vector<bool>> all = HostReadsAll(host, schema, generated);
    if (!all.ok()) return all.status();
    for (size_t n = 0; n < schema.tables.size(); ++n) {
      const TableInfo& t = schema.tables[n];
      if ((*all)[n]) {
        shown.push_back(std::move(schema.tables[n]));
        shown_generated.push_back(generated[n]);
        continue;
      }
      Result<std::vector<bool>> keep = HostKeeps(host, nullptr, t, std::nullopt);
      if (!keep.ok()) return keep.status();
      if (!t.columns.empty() && std::none_of(keep->begin(), keep->end(), [](bool k) { return k; }))
        continue;
      shown.push_back(KeepColumns(t, *keep));
      shown_generated.push_back(generated[n]);
    }
    schema.tables = std::move(shown);
    generated = std::move(shown_generated);
  }
  for (size_t n = 0; n < schema.tables.size(); ++n)
    read.index.emplace(SchemaCache::TableName{schema.tables[n].database, schema.tables[n].name}, n);
  read.generated = generated;
  if (sample_rows <= 0) return read;
  if (lazy) {
    // Read when a prompt shows them (SchemaCache::WithSamples).
    for (size_t n = 0; n < schema.tables.size(); ++n)
      schema.tables[n].samples_pending = Sampled(schema.tables[n], read.on_host, generated[n]);
    return read;
  }
  InterruptProbe interrupt(host);
  int64_t budget_end_ns = 0;
  if (Status st = SampleTables(db, host, sample_rows, read.on_host, generated, &budget_end_ns,
                               &interrupt, &schema);
      !st.ok())
    return st;
  return read;
}

// What `keeps` lets a prompt show, summed up, so that rules unchanged since
// the last ask are seen as such.
std::string Summary(const std::vector<std::vector<bool>>& keeps) {
  std::string shown;
  for (const std::vector<bool>& keep : keeps) {
    for (bool k : keep) shown.push_back(k ? '1' : '0');
    shown.push_back('|');
  }
  return shown;
}

// The host's rules as they are now over table `n` of what was read.
Result<std::vector<bool>> HostKeepsNow(const SchemaCache::Read& read, size_t n, sqlite3* db,
                                       sqlite3* host) {
  return HostKeeps(host, read.on_host ? nullptr : db, read.schema.tables[n],
                   read.Reference(n, read.on_host ? nullptr : db));
}

// The host's rules as they are now over what was read: for each table, the
// columns they let the prompt show.
Result<std::vector<std::vector<bool>>> HostRulesNow(const SchemaCache::Read& read, sqlite3* db,
                                                    sqlite3* host) {
  std::vector<std::vector<bool>> keeps;
  keeps.reserve(read.schema.tables.size());
  for (size_t n = 0; n < read.schema.tables.size(); ++n) {
    Result<std::vector<bool>> keep = HostKeepsNow(read, n, db, host);
    if (!keep.ok()) return keep.status();
    keeps.push_back(std::move(keep).value());
  }
  return keeps;
}

// Every column of every table of `schema`, as kept before any check.
std::vector<std::vector<bool>> Unchecked(const Schema& schema) {
  std::vector<std::vector<bool>> keeps;
  keeps.reserve(schema.tables.size());
  for (const TableInfo& t : schema.tables) keeps.emplace_back(t.columns.size(), true);
  return keeps;
}

// Whether the rules left anything of a table out.
bool LeavesOut(const std::vector<bool>& keep) {
  return std::find(keep.begin(), keep.end(), false) != keep.end();
}

// Table `n` of what was read with the sample rows read since, if they were.
TableInfo WithSamplesRead(const SchemaCache::Read& read, size_t n,
                          const std::vector<std::vector<std::string>>& rows) {
  TableInfo t = read.schema.tables[n];
  t.sample_rows = rows;
  t.samples_pending = false;
  // A CSV imported without a typed table: its numbers are TEXT.
  NoteNumbersAsText(&t);
  return t;
}

// The schema the prompt may show: what was read, with the sample rows read
// since, less what the rules leave out (a table none of whose columns may be
// read is not shown at all). `*samples`, when given, is how many tables'
// samples read since it holds.
Schema RuledSchema(const SchemaCache::Read& read, const std::vector<std::vector<bool>>& keeps,
                   size_t* samples = nullptr) {
  Schema out;
  out.schema_version = read.schema.schema_version;
  out.stopped_reads = read.schema.stopped_reads;
  SchemaCache::Read::Samples& s = *read.samples;
  MutexLock lock(&s.mu);
  if (samples) *samples = s.count;
  out.stopped_reads.insert(out.stopped_reads.end(), s.stopped_reads.begin(), s.stopped_reads.end());
  for (size_t n = 0; n < read.schema.tables.size(); ++n) {
    const TableInfo& t = read.schema.tables[n];
    const std::vector<bool>& keep = keeps[n];
    if (!t.columns.empty() && std::none_of(keep.begin(), keep.end(), [](bool k) { return k; }))
      continue;
    if (t.samples_pending && n < s.read.size() && s.read[n]) {
      out.tables.push_back(KeepColumns(WithSamplesRead(read, n, s.rows[n]), keep));
    } else {
      out.tables.push_back(KeepColumns(t, keep));
    }
  }
  return out;
}

}  // namespace

Result<Schema> IntrospectSchema(sqlite3* db, int sample_rows, sqlite3* host) {
  if (!host) host = db;
  Result<SchemaCache::Read> read = ReadFiles(db, sample_rows, host, /*lazy=*/false);
  if (!read.ok()) return read.status();
  // On the host's connection ReadFiles read under its rules as they are now.
  if (read->on_host) return RuledSchema(*read, Unchecked(read->schema));
  auto keeps = HostRulesNow(*read, db, host);
  if (!keeps.ok()) return keeps.status();
  return RuledSchema(*read, *keeps);
}

Result<Schema> UnderHostRulesNow(const Schema& shown, sqlite3* host, sqlite3* reader) {
  SchemaCache::Read read;
  read.schema = shown;
  read.on_host = reader == nullptr;
  auto keeps = HostRulesNow(read, reader, host);
  if (!keeps.ok()) return keeps.status();
  Schema out = RuledSchema(read, *keeps);
  if (!reader) {
    // A column blanked in a view's body is not told apart here: the view's
    // values are not shown, as on the host's own connection (ReadFiles).
    for (TableInfo& t : out.tables) {
      if (t.is_view) t.sample_rows.clear();
    }
  }
  return out;
}

Result<std::shared_ptr<const Schema>> SchemaCache::Get(sqlite3* db, int sample_rows, sqlite3* host,
                                                       bool* all_checked) {
  if (!host) host = db;
  const bool on_host = db == host;
  const int64_t version = ReadSchemaVersion(db);
  std::shared_ptr<const Read> read;
  // As the last whole check found them, and the schema they ruled.
  std::shared_ptr<const std::vector<std::vector<bool>>> last;
  std::shared_ptr<const Schema> last_schema;
  bool check_all_due = false;  // a check found a table changed
  {
    MutexLock lock(&mu_);
    check_all_due = check_all_;
    if (read_ && read_->schema.schema_version == version && sample_rows_ == sample_rows &&
        read_on_host_ == on_host) {
      read = read_;
      if (all_checked && !check_all_ && keeps_ && keeps_->size() == read_->schema.tables.size()) {
        last = keeps_;
        last_schema = schema_;
      }
    }
  }
  const bool fresh = !read;
  if (fresh) {
    Result<Read> files = ReadFiles(db, sample_rows, host, /*lazy=*/true);
    if (!files.ok()) return files.status();
    read = std::make_shared<const Read>(std::move(files).value());
  }
  if (all_checked && !last && !read->on_host && !check_all_due) {
    // Nothing checked yet (the first ask, or files read again) and no check
    // found a change: no table is checked here. Every table is taken as
    // showing all its columns, and the caller confirms those its prompt
    // shows (Confirm), which finds any the rules leave something out of.
    last = std::make_shared<const std::vector<std::vector<bool>>>(Unchecked(read->schema));
  }
  // The host's rules at this ask: an authorizer set, changed or removed since
  // the files were read counts now. Only the tables the last whole check
  // found anything of refused are checked again when it may be taken as it
  // was: one found changed means every table is checked.
  bool whole = !last && !read->schema.tables.empty();
  int64_t checked = 0;
  for (size_t n = 0; !whole && last && n < last->size(); ++n) {
    if (!LeavesOut((*last)[n])) continue;
    Result<std::vector<bool>> keep = HostKeepsNow(*read, n, db, host);
    if (!keep.ok()) return keep.status();
    ++checked;
    whole = *keep != (*last)[n];
  }
  if (all_checked) *all_checked = whole || read->schema.tables.empty();
  std::vector<std::vector<bool>> keeps;
  if (whole && fresh && read->on_host) {
    // Read on the host's connection just now, under its rules as they are:
    // every table was checked there (ReadFiles), and keeps what they let
    // the prompt show.
    keeps = Unchecked(read->schema);
    checked += static_cast<int64_t>(keeps.size());
  } else if (whole) {
    auto now = HostRulesNow(*read, db, host);
    if (!now.ok()) return now.status();
    keeps = std::move(now).value();
    checked += static_cast<int64_t>(keeps.size());
  } else if (last) {
    // Nothing found changed: the schema those rules ruled, as it was.
    {
      MutexLock lock(&mu_);
      tables_checked_ += checked;
      checked = 0;
      if (read == read_ && schema_ && schema_ == last_schema &&
          schema_samples_ == read->SamplesRead())
        return schema_;
    }
    keeps = *last;
  }
  std::string shown = Summary(keeps);
  {
    MutexLock lock(&mu_);
    tables_checked_ += checked;
    if (whole) check_all_ = false;
    if (!fresh && read == read_ && schema_ && shown == shown_ &&
        schema_samples_ == read->SamplesRead())
      return schema_;
  }
  // With the sample rows read since the files were (WithSamples): an ask
  // that shows the tables the last one showed reads none.
  size_t samples = 0;
  Schema schema = RuledSchema(*read, keeps, &samples);
  RenderInto(&schema);
  auto shared = std::make_shared<const Schema>(std::move(schema));
  MutexLock lock(&mu_);
  if (fresh) {
    read_ = read;
    read_on_host_ = on_host;
    sample_rows_ = sample_rows;
    ++introspections_;
  } else if (read != read_) {
    return shared;  // read again meanwhile: the cache keeps the newer one
  }
  schema_ = shared;
  schema_samples_ = samples;
  keeps_ = std::make_shared<const std::vector<std::vector<bool>>>(std::move(keeps));
  shown_ = std::move(shown);
  return shared;
}

Result<std::shared_ptr<const Schema>> SchemaCache::WithSamples(const Schema& ruled,
                                                               const std::vector<TableName>& tables,
                                                               sqlite3* db, int sample_rows,
                                                               sqlite3* host,
                                                               int64_t* budget_end_ns) {
  if (!host) host = db;
  std::shared_ptr<const Read> read;
  auto held = [&] {
    MutexLock lock(&mu_);
    if (read_ && read_->schema.schema_version == ruled.schema_version &&
        sample_rows_ == sample_rows && read_on_host_ == (db == host))
      read = read_;
  };
  held();
  if (!read && ReadSchemaVersion(db) == ruled.schema_version) {
    // `ruled` came from another connection's cache (a paused run taken up
    // again here): this one reads the same files first.
    auto loaded = Get(db, sample_rows, host);
    if (!loaded.ok()) return loaded.status();
    held();
  }
  Schema out = ruled;
  // Each table of `out` asked for, with its place in what was read (or
  // none: the files were read again since `ruled` was made).
  std::vector<std::pair<size_t, size_t>> asked;
  std::vector<size_t> to_read;          // places in what was read, not read yet
  std::map<TableName, size_t> pending;  // the tables of `out` whose samples are pending
  for (size_t i = 0; i < out.tables.size(); ++i) {
    if (out.tables[i].samples_pending)
      pending.emplace(TableName{out.tables[i].database, out.tables[i].name}, i);
  }
  for (const TableName& name : tables) {
    auto found = pending.find(name);
    if (found == pending.end()) continue;
    const size_t i = found->second;
    pending.erase(found);  // each table once
    TableInfo* shown = &out.tables[i];
    auto it = read ? read->index.find(name) : std::map<TableName, size_t>::const_iterator{};
    if (!read || it == read->index.end() || !read->schema.tables[it->second].samples_pending) {
      // Not what the cache holds now: left out, as a read stopped is.
      shown->samples_pending = false;
      out.stopped_reads.push_back(
          fmt::format("sample rows of {}.{}: left out, the schema changed while they were read",
                      name.first, name.second));
      continue;
    }
    asked.emplace_back(i, it->second);
    MutexLock lock(&read->samples->mu);
    if (read->samples->read.empty() || !read->samples->read[it->second])
      to_read.push_back(it->second);
  }
  std::sort(to_read.begin(), to_read.end());
  to_read.erase(std::unique(to_read.begin(), to_read.end()), to_read.end());
  if (!to_read.empty()) {
    // Read as ReadFiles reads every table's, in the order of the schema.
    Schema batch;
    std::vector<bool> generated;
    for (size_t n : to_read) {
      batch.tables.push_back(read->schema.tables[n]);
      generated.push_back(read->generated[n]);
    }
    InterruptProbe interrupt(host);
    if (Status st = SampleTables(db, host, sample_rows, read->on_host, generated, budget_end_ns,
                                 &interrupt, &batch);
        !st.ok())
      return st;
    Read::Samples& kept = *read->samples;
    MutexLock lock(&kept.mu);
    if (kept.read.empty()) {
      kept.read.assign(read->schema.tables.size(), false);
      kept.rows.resize(read->schema.tables.size());
    }
    for (size_t k = 0; k < to_read.size(); ++k) {
      if (kept.read[to_read[k]]) continue;  // read meanwhile by another ask
      kept.read[to_read[k]] = true;
      kept.rows[to_read[k]] = std::move(batch.tables[k].sample_rows);
      ++kept.count;
    }
    kept.stopped_reads.insert(kept.stopped_reads.end(), batch.stopped_reads.begin(),
                              batch.stopped_reads.end());
    out.stopped_reads.insert(out.stopped_reads.end(), batch.stopped_reads.begin(),
                             batch.stopped_reads.end());
  }
  if (read) {
    Read::Samples& kept = *read->samples;
    MutexLock lock(&kept.mu);
    for (const auto& [i, n] : asked) {
      // The columns `ruled` shows of the table, in its order.
      const TableInfo& all = read->schema.tables[n];
      std::vector<bool> keep(all.columns.size(), false);
      size_t next = 0;
      for (size_t c = 0; c < all.columns.size(); ++c) {
        if (next < out.tables[i].columns.size() &&
            out.tables[i].columns[next].name == all.columns[c].name) {
          keep[c] = true;
          ++next;
        }
      }
      out.tables[i] = KeepColumns(WithSamplesRead(*read, n, kept.rows[n]), keep);
    }
  }
  RenderInto(&out);
  return std::make_shared<const Schema>(std::move(out));
}

Result<bool> SchemaCache::Confirm(const Schema& ruled, const std::vector<TableName>& tables,
                                  sqlite3* db, sqlite3* host) {
  if (!host) host = db;
  std::shared_ptr<const Read> read;
  std::vector<std::pair<size_t, std::vector<bool>>> shown;  // as `ruled` shows them
  {
    MutexLock lock(&mu_);
    if (schema_.get() != &ruled || !read_ || !keeps_ ||
        keeps_->size() != read_->schema.tables.size()) {
      check_all_ = true;
      return false;
    }
    read = read_;
    for (const TableName& name : tables) {
      auto it = read->index.find(name);
      if (it == read->index.end()) {
        check_all_ = true;
        return false;
      }
      shown.emplace_back(it->second, (*keeps_)[it->second]);
    }
  }
  // The tables shown whole, many to a compiled statement (HostReadsThese);
  // each it cannot vouch for, and each shown in part, by itself.
  std::vector<size_t> whole;
  for (const auto& [n, keep] : shown) {
    if (std::all_of(keep.begin(), keep.end(), [](bool k) { return k; })) whole.push_back(n);
  }
  Result<std::vector<bool>> grouped = HostReadsThese(host, read->schema, read->generated, whole);
  if (!grouped.ok()) return grouped.status();
  std::set<size_t> vouched;
  for (size_t k = 0; k < whole.size(); ++k) {
    if ((*grouped)[k]) vouched.insert(whole[k]);
  }
  for (const auto& [n, keep] : shown) {
    if (vouched.count(n)) continue;
    Result<std::vector<bool>> now = HostKeepsNow(*read, n, db, host);
    if (!now.ok()) return now.status();
    if (*now == keep) continue;
    MutexLock lock(&mu_);
    check_all_ = true;
    return false;
  }
  MutexLock lock(&mu_);
  tables_checked_ += static_cast<int64_t>(shown.size());
  return true;
}

int64_t SchemaCache::introspections() const {
  MutexLock lock(&mu_);
  return introspections_;
}

int64_t SchemaCache::tables_sampled() const {
  std::shared_ptr<const Read> read;
  {
    MutexLock lock(&mu_);
    read = read_;
  }
  return read ? static_cast<int64_t>(read->SamplesRead()) : 0;
}

int64_t SchemaCache::tables_checked() const {
  MutexLock lock(&mu_);
  return tables_checked_;
}

}  // namespace querypilot
