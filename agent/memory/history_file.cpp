#include "agent/memory/history_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/own_file.h"
#include "agent/sql/sqlite_errors.h"

namespace querypilot {
namespace {

bool Exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

bool IsBusy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

// SQLite's words for the last failure on `db`, with what a lock means here.
std::string WhyFailed(sqlite3* db, int rc) {
  std::string why = sqlite3_errmsg(db);
  if (IsBusy(rc)) {
    why = fmt::format("locked by another connection, still after {} ms: {}",
                      HistoryFile::kBusyWaitMs, why);
  }
  return why;
}

}  // namespace

Result<std::shared_ptr<HistoryFile>> HistoryFile::Open(sqlite3* host, const std::string& path,
                                                       std::vector<RunRecord>* runs,
                                                       std::vector<AttemptRecord>* attempts,
                                                       bool in_own_folder) {
  // Identity, not spelling: a URI, a hard link or a symlink to one of the
  // connection's files is refused before anything is opened, and again with
  // the name SQLite itself resolved before anything is written.
  if (Status st = CheckOwnFile(host, path, "history_file"); !st.ok()) return st;
  sqlite3* db = nullptr;
  int flags = OwnFileOpenFlags();
  if (in_own_folder && sqlite3_libversion_number() >= 3031000) flags |= SQLITE_OPEN_NOFOLLOW;
  int rc = OpenOwnConnection(path.c_str(), &db, flags);
  std::shared_ptr<HistoryFile> file(new HistoryFile(db));
  if (rc != SQLITE_OK) {
    return Status::InvalidArgument("cannot open history_file " + path + ": " +
                                   (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
  if (Status st = CheckOwnConnection(host, db, "history_file"); !st.ok()) return st;
  if (sqlite3_db_readonly(db, "main") == 1) {
    // mode=ro, or a file or folder SQLite could only open for reading: it
    // could keep nothing.
    return Status::InvalidArgument(
        "history_file " + path +
        " is read-only here (mode=ro, the file's permissions or a read-only file "
        "system): QueryPilot could keep no run in it");
  }
  sqlite3_busy_timeout(db, kBusyWaitMs);
  // A run is written at every ask: in WAL mode with synchronous NORMAL a
  // commit waits for no disk flush (a power cut may lose the last runs,
  // never the file), and readers never hold up a writer. A file where WAL
  // cannot be used (a mode=ro name, a file system without shared memory)
  // stays as it is.
  sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr);
  // What a failure to read or create the tables means.
  auto unusable = [&](int code) {
    if (IsBusy(code)) {
      return Status(ErrorKind::kDatabaseBusy,
                    "history_file " + path + " cannot be read now: it is " + WhyFailed(db, code) +
                        "; set it again once that connection has committed");
    }
    const int primary = code & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
      return Status::InvalidArgument("history_file " + path +
                                     " is not a history file: " + sqlite3_errmsg(db));
    }
    return Status(ClassifySqliteFailure(code, sqlite3_errmsg(db)),
                  "cannot use history_file " + path + ": " + sqlite3_errmsg(db));
  };
  rc = sqlite3_exec(
      db,
      "CREATE TABLE IF NOT EXISTS querypilot_runs(id INTEGER PRIMARY KEY, record TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS querypilot_attempts(run_id INTEGER NOT NULL, attempt INTEGER NOT "
      "NULL, "
      "record TEXT NOT NULL, PRIMARY KEY (run_id, attempt));"
      "CREATE TABLE IF NOT EXISTS querypilot_descriptions(target TEXT PRIMARY KEY, database TEXT "
      "NOT NULL, "
      "table_name TEXT NOT NULL, column_name TEXT NOT NULL, description TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS querypilot_next_run(id INTEGER NOT NULL);"
      // The runs' ids alone, a few dozen pages for ten thousand runs: what
      // counting them reads at every run kept (DropOldest), rather than
      // every run's record. A file an earlier QueryPilot made gets it here.
      "CREATE INDEX IF NOT EXISTS querypilot_runs_ids ON querypilot_runs(id);",
      nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return unusable(sqlite3_extended_errcode(db));
  // Read in one transaction, to the end: a lock met halfway fails the
  // setting rather than leave out what was not read.
  const int64_t version = file->DataVersion();
  if (Status st = ReadNewest(db, runs, attempts, unusable); !st.ok()) return st;
  file->data_version_ = version;
  auto run_stmt =
      Statement::Prepare(db, "INSERT OR REPLACE INTO querypilot_runs(id, record) VALUES (?1, ?2)");
  auto attempt_stmt = Statement::Prepare(
      db,
      "INSERT OR REPLACE INTO querypilot_attempts(run_id, attempt, record) VALUES (?1, ?2, ?3)");
  if (!run_stmt.ok() || !attempt_stmt.ok())
    return Status::Internal("cannot prepare history_file writes");
  file->save_run_ = std::move(run_stmt).value();
  file->save_attempt_ = std::move(attempt_stmt).value();
  return file;
}

template <typename Unusable>
Status HistoryFile::ReadNewest(sqlite3* db, std::vector<RunRecord>* runs,
                               std::vector<AttemptRecord>* attempts, Unusable&& unusable) {
  Exec(db, "BEGIN");
  // The newest runs a history holds in memory (History::kMemoryRuns), and
  // their attempts: a file of many more is not parsed whole at each
  // connection's first use.
  auto read = [&](const char* sql, int64_t bound, auto parse, auto* out) -> Status {
    Result<Statement> st = Statement::Prepare(db, sql);
    if (!st.ok()) return unusable(sqlite3_extended_errcode(db));
    st->BindInt(1, bound);
    int step;
    while ((step = st->Step()) == SQLITE_ROW) {
      if (auto rec = parse(st->ColumnText(0))) out->push_back(std::move(*rec));
    }
    return step == SQLITE_DONE ? Status::Ok() : unusable(sqlite3_extended_errcode(db));
  };
  Status read_all = read(
      "SELECT record FROM (SELECT id, record FROM querypilot_runs ORDER BY id DESC LIMIT ?1) "
      "ORDER BY id",
      static_cast<int64_t>(History::kMemoryRuns), RunFromJson, runs);
  if (read_all.ok()) {
    const int64_t oldest = runs->empty() ? 0 : runs->front().id;
    read_all =
        read("SELECT record FROM querypilot_attempts WHERE run_id >= ?1 ORDER BY run_id, attempt",
             oldest, AttemptFromJson, attempts);
  }
  Exec(db, "COMMIT");
  if (!read_all.ok()) {
    runs->clear();
    attempts->clear();
  }
  return read_all;
}

int64_t HistoryFile::DataVersion() const {
  Result<Statement> st = Statement::Prepare(db_, "PRAGMA data_version");
  if (!st.ok() || st->Step() != SQLITE_ROW) return -1;
  return st->ColumnInt(0);
}

bool HistoryFile::ChangedElsewhere() {
  const int64_t now = DataVersion();
  return now < 0 || now != data_version_;
}

Status HistoryFile::Load(std::vector<RunRecord>* runs, std::vector<AttemptRecord>* attempts) {
  // The version before the read: a commit made while it reads is read
  // again next time, never missed.
  const int64_t version = DataVersion();
  Status st = ReadNewest(db_, runs, attempts, [this](int rc) { return Failure(rc); });
  if (st.ok()) data_version_ = version;
  return st;
}

Status HistoryFile::Failure(int rc) const {
  return Status(ClassifySqliteFailure(rc, sqlite3_errmsg(db_)), WhyFailed(db_, rc));
}

template <typename F>
Status HistoryFile::InTransaction(F&& write) {
  // IMMEDIATE: the write lock is waited for (kBusyWaitMs) before anything
  // is written, not met halfway.
  int rc = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Failure(sqlite3_extended_errcode(db_));
  Status st = write();
  if (st.ok()) {
    rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) st = Failure(sqlite3_extended_errcode(db_));
  }
  // A failed COMMIT leaves the transaction open; a full disk may have
  // rolled it back already (then this is a no-op).
  if (!st.ok() && !sqlite3_get_autocommit(db_)) Exec(db_, "ROLLBACK");
  return st;
}

std::vector<Description> HistoryFile::LoadDescriptions() {
  std::vector<Description> out;
  Result<Statement> st = Statement::Prepare(db_,
                                            "SELECT database, table_name, column_name, description "
                                            "FROM querypilot_descriptions ORDER BY target");
  if (!st.ok()) return out;
  while (st->Step() == SQLITE_ROW) {
    out.push_back({st->ColumnText(0), st->ColumnText(1), st->ColumnText(2), st->ColumnText(3)});
  }
  return out;
}

Status HistoryFile::SaveDescription(const Description& d) {
  return InTransaction([&]() -> Status {
    Result<Statement> st = Statement::Prepare(
        db_, "INSERT OR REPLACE INTO querypilot_descriptions VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!st.ok()) return Failure(sqlite3_extended_errcode(db_));
    st->Bind(1, text::Lower(d.Target()));
    st->Bind(2, d.database);
    st->Bind(3, d.table);
    st->Bind(4, d.column);
    st->Bind(5, d.text);
    return st->Step() == SQLITE_DONE ? Status::Ok() : Failure(sqlite3_extended_errcode(db_));
  });
}

Status HistoryFile::ForgetDescription(const std::string& target) {
  return InTransaction([&]() -> Status {
    Result<Statement> st =
        Statement::Prepare(db_, "DELETE FROM querypilot_descriptions WHERE target = ?1");
    if (!st.ok()) return Failure(sqlite3_extended_errcode(db_));
    st->Bind(1, text::Lower(target));
    return st->Step() == SQLITE_DONE ? Status::Ok() : Failure(sqlite3_extended_errcode(db_));
  });
}

Result<int64_t> HistoryFile::FirstFreeId() {
  Result<Statement> st =
      Statement::Prepare(db_,
                         "SELECT max(coalesce((SELECT max(id) FROM querypilot_next_run), 1), "
                         "coalesce((SELECT max(id) FROM querypilot_runs), 0) + 1, "
                         "coalesce((SELECT max(run_id) FROM querypilot_attempts), 0) + 1)");
  if (!st.ok() || st->Step() != SQLITE_ROW) return Failure(sqlite3_extended_errcode(db_));
  return st->ColumnInt(0);
}

Status HistoryFile::SetFirstFreeId(int64_t next) {
  for (const char* sql :
       {"DELETE FROM querypilot_next_run", "INSERT INTO querypilot_next_run(id) VALUES (?1)"}) {
    Result<Statement> st = Statement::Prepare(db_, sql);
    if (!st.ok()) return Failure(sqlite3_extended_errcode(db_));
    if (std::string_view(sql).find("?1") != std::string_view::npos) st->BindInt(1, next);
    if (st->Step() != SQLITE_DONE) return Failure(sqlite3_extended_errcode(db_));
  }
  return Status::Ok();
}

Result<int64_t> HistoryFile::NewRunId(int64_t at_least) {
  int64_t id = 0;
  Status st = InTransaction([&]() -> Status {
    Result<int64_t> free = FirstFreeId();
    if (!free.ok()) return free.status();
    id = std::max(*free, at_least);
    return SetFirstFreeId(id + 1);
  });
  if (!st.ok()) return st;
  return id;
}

Status HistoryFile::DropOldest() {
  // How many runs the file holds: count(*) reads querypilot_runs_ids' pages,
  // not the runs, so a full history of ten thousand runs costs an ask
  // microseconds (walking to the ten-thousandth newest run read every run's
  // page, milliseconds).
  Result<Statement> count = Statement::Prepare(db_, "SELECT count(*) FROM querypilot_runs");
  if (!count.ok()) return Failure(sqlite3_extended_errcode(db_));
  if (count->Step() != SQLITE_ROW) return Failure(sqlite3_extended_errcode(db_));
  const int64_t excess = count->ColumnInt(0) - std::max(max_runs_.load(), 1);
  if (excess <= 0) return Status::Ok();
  // The oldest run kept, past the `excess` oldest: runs and attempts below
  // it go.
  Result<Statement> st =
      Statement::Prepare(db_, "SELECT id FROM querypilot_runs ORDER BY id LIMIT 1 OFFSET ?1");
  if (!st.ok()) return Failure(sqlite3_extended_errcode(db_));
  st->BindInt(1, excess);
  if (st->Step() != SQLITE_ROW) return Failure(sqlite3_extended_errcode(db_));
  const int64_t oldest = st->ColumnInt(0);
  for (const char* sql : {"DELETE FROM querypilot_runs WHERE id < ?1",
                          "DELETE FROM querypilot_attempts WHERE run_id < ?1"}) {
    Result<Statement> del = Statement::Prepare(db_, sql);
    if (!del.ok()) return Failure(sqlite3_extended_errcode(db_));
    del->BindInt(1, oldest);
    if (del->Step() != SQLITE_DONE) return Failure(sqlite3_extended_errcode(db_));
  }
  return Status::Ok();
}

Status HistoryFile::ForgetRun(int64_t run_id) {
  return InTransaction([&]() -> Status {
    for (const char* sql : {"DELETE FROM querypilot_runs WHERE id = ?1",
                            "DELETE FROM querypilot_attempts WHERE run_id = ?1"}) {
      Result<Statement> st = Statement::Prepare(db_, sql);
      if (!st.ok()) return Failure(sqlite3_extended_errcode(db_));
      st->BindInt(1, run_id);
      if (st->Step() != SQLITE_DONE) return Failure(sqlite3_extended_errcode(db_));
    }
    return Status::Ok();
  });
}

HistoryFile::~HistoryFile() {
  save_run_ = Statement();
  save_attempt_ = Statement();
  if (db_) sqlite3_close_v2(db_);  // a statement left open delays the close, never leaks it
}

Status HistoryFile::SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts,
                            bool claim_id) {
  return InTransaction([&]() -> Status {
    if (claim_id) {
      // An id this connection gave while it could not ask the file: kept
      // under it only while no one else has been given it.
      Result<int64_t> free = FirstFreeId();
      if (!free.ok()) return free.status();
      if (*free > run.id) {
        return Status::InvalidArgument(
            fmt::format("the file could not give this run an id when it started, and another "
                        "connection's run has since been given {}",
                        run.id));
      }
      if (Status st = SetFirstFreeId(run.id + 1); !st.ok()) return st;
    }
    sqlite3_stmt* s = save_run_.get();
    std::string json = RunToJson(run);
    sqlite3_bind_int64(s, 1, run.id);
    sqlite3_bind_text(s, 2, json.data(), static_cast<int>(json.size()), SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    Status st = rc == SQLITE_DONE ? Status::Ok() : Failure(sqlite3_extended_errcode(db_));
    sqlite3_reset(s);
    if (!st.ok() || !attempts) return st;
    s = save_attempt_.get();
    for (const AttemptRecord& a : *attempts) {
      json = AttemptToJson(a);
      sqlite3_bind_int64(s, 1, a.run_id);
      sqlite3_bind_int(s, 2, a.attempt);
      sqlite3_bind_text(s, 3, json.data(), static_cast<int>(json.size()), SQLITE_TRANSIENT);
      rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) st = Failure(sqlite3_extended_errcode(db_));
      sqlite3_reset(s);
      if (!st.ok()) return st;
    }
    return DropOldest();
  });
}

Result<std::string> DefaultHistoryFile(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  if (!file || !*file) return std::string();
  Result<std::string> key = DatabaseFileKey(file);
  if (!key.ok()) return std::string();
  const std::string dir = CacheFolder("history");
  if (dir.empty()) {
    return Status::InvalidArgument(
        "there is no cache folder ($XDG_CACHE_HOME or $HOME) to keep it in");
  }
  Result<std::string> folder = OwnFolder(dir, true);
  if (!folder.ok()) return folder.status();
  const std::string path = fmt::format("{}/{}.qphistory", *folder, *key);
  // A name in a folder of its own: whatever is there that is not a plain
  // file of the user's (a link) goes, the name only.
  if (Result<std::string> cleared = ClearOwnFileName(path); !cleared.ok()) return cleared.status();
  return path;
}

}  // namespace querypilot
