#include "agent/knowledge/sample_reads.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/schema.h"
#include "agent/sql/statement.h"
#include "agent/sql/watchdog.h"

namespace querypilot {
namespace {

// One value as a short SQL literal for the prompt's sample rows.
std::string SampleLiteral(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
    case SQLITE_BLOB:
      return fmt::format("<blob {} bytes>", sqlite3_column_bytes(stmt, i));
    default: {
      std::string v(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)),
                    static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
      std::string out = "'";
      for (char c : text::Truncate(v, 40)) {
        if (c == '\'') out.push_back('\'');
        out.push_back(c == '\n' || c == '\r' ? ' ' : c);
      }
      return out + "'";
    }
  }
}

// How a sample read ended.
enum class ReadEnd { kDone, kTimedOut, kTooBig, kInterrupted, kFailed };

struct SampleProgress {
  int64_t deadline_ns = 0;
  InterruptProbe* host = nullptr;
  bool timed_out = false;
  bool interrupted = false;
};

// QueryPilot's progress handler, on its own read connection only.
int OnSampleProgress(void* arg) noexcept {
  auto* p = static_cast<SampleProgress*>(arg);
  if (CoarseNowNs() >= p->deadline_ns) {
    p->timed_out = true;
    return 1;
  }
  if (p->host->Interrupted()) {
    p->interrupted = true;
    return 1;
  }
  return 0;
}

// Reads the rows of `sql` on `db` into `rows` within `budget_ms` and the
// length cap (kSampleValueBytes). On QueryPilot's own connection (`db` is
// not `host`) a step past the budget or the host's interrupt is stopped by
// its progress handler and the watchdog; on the host's, between steps only.
ReadEnd ReadSampleRows(sqlite3* db, sqlite3* host, const std::string& sql, int budget_ms,
                       InterruptProbe* host_probe, std::vector<std::vector<std::string>>* rows) {
  const bool own = db != host;
  const int length = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1);
  if (length > kSampleValueBytes) sqlite3_limit(db, SQLITE_LIMIT_LENGTH, kSampleValueBytes);
  SampleProgress progress;
  progress.deadline_ns = CoarseNowNs() + int64_t{budget_ms} * 1000000;
  progress.host = host_probe;
  const bool handler = own && Host().progress_handler;
  if (handler) sqlite3_progress_handler(db, 1000, OnSampleProgress, &progress);
  int rc = SQLITE_OK;
  bool fired = false;
  {
    std::optional<WatchdogSlot> slot;
    if (own) slot.emplace(db, int64_t{budget_ms} * 1000000);
    int code = SQLITE_OK;
    auto st = Statement::Prepare(db, sql, nullptr, &code);
    rc = code;
    if (st.ok()) {
      for (;;) {
        if (slot) slot->Arm();
        rc = st->Step();
        if (slot && slot->Disarm()) fired = true;
        if (rc != SQLITE_ROW) break;
        std::vector<std::string> row;
        for (int i = 0; i < st->ColumnCount(); ++i) row.push_back(SampleLiteral(st->get(), i));
        rows->push_back(std::move(row));
        if (!own && CoarseNowNs() >= progress.deadline_ns) {
          progress.timed_out = true;
          break;
        }
      }
      if (rc != SQLITE_DONE) rc = sqlite3_errcode(db);
    }
  }
  if (handler) sqlite3_progress_handler(db, 0, nullptr, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, length);
  if (rc == SQLITE_DONE && !progress.timed_out) return ReadEnd::kDone;
  rows->clear();
  if (progress.interrupted || ((rc & 0xff) == SQLITE_INTERRUPT && host_probe->Interrupted()))
    return ReadEnd::kInterrupted;
  if (progress.timed_out || fired) return ReadEnd::kTimedOut;
  if ((rc & 0xff) == SQLITE_TOOBIG) return ReadEnd::kTooBig;
  return ReadEnd::kFailed;
}

// Ordinary tables sampled by one statement (a UNION ALL of each table's
// read, its rows tagged with the table's place): a schema of thousands of
// tables is common, and a statement each costs more in its prepare than in
// its reading. SQLite allows 500 arms by default.
constexpr size_t kSampledAtOnce = 50;

// Reads the sample rows of the ordinary tables of `schema` (no view, virtual
// table or generated column: nothing that runs code of unknown length)
// kSampledAtOnce at a time, within ReadSampleRows' bounds, each group's read
// given what one table's read may take. Returns which tables were sampled; a
// group whose read did not end as planned (too slow, a value too long, a
// table that fails, the host's interrupt) is left to the caller, which reads
// its tables one by one and says why one was left out.
std::vector<bool> SampleTablesAtOnce(sqlite3* db, sqlite3* host, int sample_rows,
                                     const std::vector<bool>& generated, int64_t budget_end_ns,
                                     InterruptProbe* interrupt, Schema* schema) {
  std::vector<bool> sampled(schema->tables.size(), false);
  std::vector<size_t> group;
  auto read_group = [&] {
    if (group.size() < 2) return;  // one table: read as the caller reads it
    size_t width = 0;
    for (size_t n : group) width = std::max(width, schema->tables[n].columns.size());
    std::vector<std::string> arms;
    for (size_t i = 0; i < group.size(); ++i) {
      const TableInfo& t = schema->tables[group[i]];
      std::string pad;
      for (size_t c = t.columns.size(); c < width; ++c) pad += ", NULL";
      arms.push_back(fmt::format("SELECT {}, *{} FROM ({} LIMIT {})", i, pad,
                                 SelectColumns(t, AllColumns(t)), sample_rows));
    }
    const int64_t left_ms = (budget_end_ns - CoarseNowNs()) / 1000000;
    if (left_ms <= 0 || interrupt->Interrupted()) return;
    std::vector<std::vector<std::string>> rows;
    if (ReadSampleRows(db, host, fmt::format("{}", fmt::join(arms, " UNION ALL ")),
                       static_cast<int>(std::min<int64_t>(kSampleReadMs, left_ms)), interrupt,
                       &rows) != ReadEnd::kDone) {
      return;
    }
    std::vector<std::vector<std::vector<std::string>>> each(group.size());
    for (std::vector<std::string>& row : rows) {
      size_t i = group.size();
      if (!row.empty()) std::from_chars(row[0].data(), row[0].data() + row[0].size(), i);
      if (i >= group.size()) return;  // not the rows asked for: read one by one
      row.erase(row.begin());
      row.resize(schema->tables[group[i]].columns.size());
      each[i].push_back(std::move(row));
    }
    for (size_t i = 0; i < group.size(); ++i) {
      TableInfo& t = schema->tables[group[i]];
      t.sample_rows = std::move(each[i]);
      // A CSV imported without a typed table: its numbers are TEXT.
      NoteNumbersAsText(&t);
      sampled[group[i]] = true;
    }
  };
  for (size_t n = 0; n < schema->tables.size(); ++n) {
    const TableInfo& t = schema->tables[n];
    if (t.columns.empty() || t.is_view || t.is_virtual || generated[n]) continue;
    group.push_back(n);
    if (group.size() == kSampledAtOnce) {
      read_group();
      group.clear();
    }
  }
  read_group();
  return sampled;
}

}  // namespace

std::string SelectColumns(const TableInfo& t, const std::vector<size_t>& which) {
  std::vector<std::string> names;
  for (size_t i : which) names.push_back("q." + QuoteIdentifier(t.columns[i].name));
  return fmt::format("SELECT {} FROM {} AS q", fmt::join(names, ", "), t.SqlName());
}

std::vector<size_t> AllColumns(const TableInfo& t) {
  std::vector<size_t> all(t.columns.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

bool Sampled(const TableInfo& t, bool on_host, bool generated) {
  return !t.columns.empty() && !(on_host && (t.is_view || t.is_virtual || generated));
}

Status SampleTables(sqlite3* db, sqlite3* host, int sample_rows, bool on_host,
                    const std::vector<bool>& generated, int64_t* budget_end_ns,
                    InterruptProbe* interrupt, Schema* schema) {
  if (*budget_end_ns == 0) *budget_end_ns = CoarseNowNs() + int64_t{kSampleBudgetMs} * 1000000;
  const std::vector<bool> sampled =
      SampleTablesAtOnce(db, host, sample_rows, generated, *budget_end_ns, interrupt, schema);
  for (size_t n = 0; n < schema->tables.size(); ++n) {
    TableInfo& t = schema->tables[n];
    if (sampled[n] || !Sampled(t, on_host, generated[n])) continue;
    if (interrupt->Interrupted())
      return Status(ErrorKind::kInterrupted, "interrupted while reading the schema's sample rows");
    const std::string what = fmt::format("sample rows of {}.{}", t.database, t.name);
    const int64_t left_ms = (*budget_end_ns - CoarseNowNs()) / 1000000;
    if (left_ms <= 0) {
      schema->stopped_reads.push_back(fmt::format(
          "{}: left out, the {} ms for all sample rows were spent", what, kSampleBudgetMs));
      continue;
    }
    const int budget_ms = static_cast<int>(std::min<int64_t>(kSampleReadMs, left_ms));
    switch (ReadSampleRows(db, host,
                           fmt::format("{} LIMIT {}", SelectColumns(t, AllColumns(t)), sample_rows),
                           budget_ms, interrupt, &t.sample_rows)) {
      case ReadEnd::kDone:
        // A CSV imported without a typed table: its numbers are TEXT.
        NoteNumbersAsText(&t);
        break;
      case ReadEnd::kFailed:  // a view over a missing table, a module not loaded
        break;
      case ReadEnd::kTimedOut:
        schema->stopped_reads.push_back(
            fmt::format("{}: left out, not read within {} ms", what, budget_ms));
        break;
      case ReadEnd::kTooBig:
        schema->stopped_reads.push_back(
            fmt::format("{}: left out, a value is longer than {} bytes", what, kSampleValueBytes));
        break;
      case ReadEnd::kInterrupted:
        return Status(ErrorKind::kInterrupted,
                      fmt::format("interrupted while reading the {}", what));
    }
  }
  return Status::Ok();
}

}  // namespace querypilot
