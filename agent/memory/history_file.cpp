#include "agent/memory/history_file.h"

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/sql/own_file.h"

namespace querypilot {
namespace {

bool Exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

}  // namespace

Result<std::shared_ptr<HistoryFile>> HistoryFile::Open(sqlite3* host, const std::string& path,
                                                       std::vector<RunRecord>* runs,
                                                       std::vector<AttemptRecord>* attempts) {
  // Identity, not spelling: a URI, a hard link or a symlink to one of the
  // connection's files is refused before anything is opened, and again with
  // the name SQLite itself resolved before anything is written.
  if (Status st = CheckOwnFile(host, path, "history_file"); !st.ok()) return st;
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, OwnFileOpenFlags(), nullptr);
  std::shared_ptr<HistoryFile> file(new HistoryFile(db));
  if (rc != SQLITE_OK) {
    return Status::InvalidArgument("cannot open history_file " + path + ": " +
                                   (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
  if (Status st = CheckOwnConnection(host, db, "history_file"); !st.ok()) return st;
  sqlite3_busy_timeout(db, 2000);
  if (!Exec(db,
            "CREATE TABLE IF NOT EXISTS querypilot_runs(id INTEGER PRIMARY KEY, record TEXT NOT NULL);"
            "CREATE TABLE IF NOT EXISTS querypilot_attempts(run_id INTEGER NOT NULL, attempt INTEGER NOT NULL, "
            "record TEXT NOT NULL, PRIMARY KEY (run_id, attempt));"
            "CREATE TABLE IF NOT EXISTS querypilot_descriptions(target TEXT PRIMARY KEY, database TEXT NOT NULL, "
            "table_name TEXT NOT NULL, column_name TEXT NOT NULL, description TEXT NOT NULL);")) {
    return Status::InvalidArgument("history_file " + path + " is not a history file: " + sqlite3_errmsg(db));
  }
  auto read = [&](const char* sql, auto parse, auto* out) -> Status {
    Result<Statement> st = Statement::Prepare(db, sql);
    if (!st.ok()) return st.status();
    while (st->Step() == SQLITE_ROW) {
      if (auto rec = parse(st->ColumnText(0))) out->push_back(std::move(*rec));
    }
    return Status::Ok();
  };
  if (Status st = read("SELECT record FROM querypilot_runs ORDER BY id", RunFromJson, runs); !st.ok()) {
    return Status::InvalidArgument("cannot read history_file " + path + ": " + st.message());
  }
  if (Status st = read("SELECT record FROM querypilot_attempts ORDER BY run_id, attempt", AttemptFromJson, attempts);
      !st.ok()) {
    return Status::InvalidArgument("cannot read history_file " + path + ": " + st.message());
  }
  auto run_stmt = Statement::Prepare(db, "INSERT OR REPLACE INTO querypilot_runs(id, record) VALUES (?1, ?2)");
  auto attempt_stmt = Statement::Prepare(
      db, "INSERT OR REPLACE INTO querypilot_attempts(run_id, attempt, record) VALUES (?1, ?2, ?3)");
  if (!run_stmt.ok() || !attempt_stmt.ok()) return Status::Internal("cannot prepare history_file writes");
  file->save_run_ = std::move(run_stmt).value();
  file->save_attempt_ = std::move(attempt_stmt).value();
  return file;
}

std::vector<Description> HistoryFile::LoadDescriptions() {
  std::vector<Description> out;
  Result<Statement> st = Statement::Prepare(
      db_, "SELECT database, table_name, column_name, description FROM querypilot_descriptions ORDER BY target");
  if (!st.ok()) return out;
  while (st->Step() == SQLITE_ROW) {
    out.push_back({st->ColumnText(0), st->ColumnText(1), st->ColumnText(2), st->ColumnText(3)});
  }
  return out;
}

void HistoryFile::SaveDescription(const Description& d) {
  Result<Statement> st = Statement::Prepare(
      db_, "INSERT OR REPLACE INTO querypilot_descriptions VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!st.ok()) {
    ++errors_;
    return;
  }
  st->Bind(1, text::Lower(d.Target()));
  st->Bind(2, d.database);
  st->Bind(3, d.table);
  st->Bind(4, d.column);
  st->Bind(5, d.text);
  if (st->Step() != SQLITE_DONE) ++errors_;
}

void HistoryFile::ForgetDescription(const std::string& target) {
  Result<Statement> st = Statement::Prepare(db_, "DELETE FROM querypilot_descriptions WHERE target = ?1");
  if (!st.ok()) return;
  st->Bind(1, text::Lower(target));
  if (st->Step() != SQLITE_DONE) ++errors_;
}

void HistoryFile::ForgetRun(int64_t run_id) {
  Exec(db_, "BEGIN");
  for (const char* sql : {"DELETE FROM querypilot_runs WHERE id = ?1", "DELETE FROM querypilot_attempts WHERE run_id = ?1"}) {
    Result<Statement> st = Statement::Prepare(db_, sql);
    if (!st.ok()) {
      ++errors_;
      continue;
    }
    st->BindInt(1, run_id);
    if (st->Step() != SQLITE_DONE) ++errors_;
  }
  if (!Exec(db_, "COMMIT")) {
    ++errors_;
    Exec(db_, "ROLLBACK");
  }
}

HistoryFile::~HistoryFile() {
  save_run_ = Statement();
  save_attempt_ = Statement();
  if (db_) sqlite3_close(db_);
}

void HistoryFile::SaveRun(const RunRecord& run) {
  sqlite3_stmt* s = save_run_.get();
  std::string json = RunToJson(run);
  sqlite3_bind_int64(s, 1, run.id);
  sqlite3_bind_text(s, 2, json.data(), static_cast<int>(json.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(s) != SQLITE_DONE) ++errors_;
  sqlite3_reset(s);
}

void HistoryFile::SaveAttempts(const std::vector<AttemptRecord>& attempts) {
  sqlite3_stmt* s = save_attempt_.get();
  Exec(db_, "BEGIN");
  for (const AttemptRecord& a : attempts) {
    std::string json = AttemptToJson(a);
    sqlite3_bind_int64(s, 1, a.run_id);
    sqlite3_bind_int(s, 2, a.attempt);
    sqlite3_bind_text(s, 3, json.data(), static_cast<int>(json.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(s) != SQLITE_DONE) ++errors_;
    sqlite3_reset(s);
  }
  if (!Exec(db_, "COMMIT")) {
    ++errors_;
    Exec(db_, "ROLLBACK");
  }
}

}  // namespace querypilot
