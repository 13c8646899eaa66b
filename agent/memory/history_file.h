// HistoryFile: a history kept in a SQLite file of its own (history_file), so
// that agent_runs and agent_attempts span restarts and are shared by every
// connection and process that uses the file. For a database file it is used
// by default (a file of QueryPilot's own in the cache folder, agent/session/session.cpp).
//
// It is a separate connection to a separate file: the user's database is
// never written, and opening the user's own database as the history file is
// refused. Each run and attempt is one row holding its JSON. Run ids come
// from the file (querypilot_next_run: the smallest id never given), each in a
// transaction of its own, so that two processes never number two runs alike;
// past max_runs runs, the oldest go.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/status.h"
#include "agent/memory/history.h"
#include "agent/sql/statement.h"

struct sqlite3;

namespace querypilot {

class HistoryFile : public HistorySink {
 public:
  // How long a write waits for another connection's lock on the file before
  // it gives up (SQLITE_BUSY): short, so that a held lock never holds up an
  // ask; what was not written, the run's not_kept says.
  static constexpr int kBusyWaitMs = 250;

  // Opens (creating if needed) the file at `path` and reads its newest runs
  // (History::kMemoryRuns at most) and their attempts.
  // `host` is the user's connection: `path` may not be any of its files. A
  // file QueryPilot could not write (read-only) is refused; so is one locked
  // by another connection past the wait above, with an error that says so.
  // With `in_own_folder` (a name QueryPilot gave in a folder of its own), a
  // symbolic link at the name is refused by SQLite (SQLITE_OPEN_NOFOLLOW,
  // 3.31 and later).
  static Result<std::shared_ptr<HistoryFile>> Open(sqlite3* host, const std::string& path,
                                                   std::vector<RunRecord>* runs,
                                                   std::vector<AttemptRecord>* attempts,
                                                   bool in_own_folder = false);
  ~HistoryFile() override;
  HistoryFile(const HistoryFile&) = delete;
  HistoryFile& operator=(const HistoryFile&) = delete;

  // The descriptions kept in the file (agent_describe), and changes to them:
  // each written or not at all, an error saying why.
  std::vector<Description> LoadDescriptions();
  Status SaveDescription(const Description& d);
  Status ForgetDescription(const std::string& target);

  // One transaction each; an error (SQLite's words: a lock, a full disk, a
  // read-only file) when nothing was written.
  Status SaveRun(const RunRecord& run, const std::vector<AttemptRecord>* attempts,
                 bool claim_id) override;
  Status ForgetRun(int64_t run_id) override;
  Result<int64_t> NewRunId(int64_t at_least) override;
  // PRAGMA data_version: another connection committed since the last Load
  // (or Open).
  bool ChangedElsewhere() override;
  Status Load(std::vector<RunRecord>* runs, std::vector<AttemptRecord>* attempts) override;

  // The most runs the file keeps (max_history_runs): each run written whole
  // drops the oldest past it, with their attempts.
  void SetMaxRuns(int max_runs) { max_runs_.store(max_runs); }

 private:
  explicit HistoryFile(sqlite3* db) : db_(db) {}
  // Runs `write` inside BEGIN IMMEDIATE ... COMMIT; rolls back and returns
  // the first failure.
  template <typename F>
  Status InTransaction(F&& write);
  // The failure of the last call on db_, as a Status.
  Status Failure(int rc) const;
  // Inside a transaction: the smallest id the file has never given (its
  // counter, and past every run it holds).
  Result<int64_t> FirstFreeId();
  // Inside a transaction: ids below `next` are given from now on.
  Status SetFirstFreeId(int64_t next);
  // Inside a transaction: drops the oldest runs past max_runs_.
  Status DropOldest();
  // The newest runs (History::kMemoryRuns) and their attempts, in one read
  // transaction; `unusable` says what a failure means.
  template <typename Unusable>
  static Status ReadNewest(sqlite3* db, std::vector<RunRecord>* runs,
                           std::vector<AttemptRecord>* attempts, Unusable&& unusable);
  // PRAGMA data_version now; -1 when it cannot be read.
  int64_t DataVersion() const;
  sqlite3* db_;
  int64_t data_version_ = -1;  // as of the last read
  std::atomic<int> max_runs_{10000};
  Statement save_run_;
  Statement save_attempt_;
};

// The history file of a connection whose history_file is "" (the default):
// for a database file, a file of QueryPilot's own in the cache folder,
// named by the database's identity (DatabaseFileKey), in a folder it made
// (OwnFolder: the user's, mode 0700, no link); "" (none: memory only) for a
// memory or temporary database, or one whose file is not on disk (another
// VFS's). An error says why none can be used where one is meant to be.
Result<std::string> DefaultHistoryFile(sqlite3* db);

}  // namespace querypilot
