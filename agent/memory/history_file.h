// HistoryFile: a history kept in a SQLite file of its own (history_file), so
// that agent_runs and agent_attempts span restarts. Opt-in.
//
// It is a separate connection to a separate file: the user's database is
// never written, and opening the user's own database as the history file is
// refused. Each run and attempt is one row holding its JSON.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/memory/history.h"
#include "agent/sql/statement.h"
#include "agent/base/status.h"

struct sqlite3;

namespace querypilot {

class HistoryFile : public HistorySink {
 public:
  // Opens (creating if needed) the file at `path` and reads what it holds.
  // `host` is the user's connection: `path` may not be any of its files.
  static Result<std::shared_ptr<HistoryFile>> Open(sqlite3* host, const std::string& path,
                                                   std::vector<RunRecord>* runs,
                                                   std::vector<AttemptRecord>* attempts);
  ~HistoryFile() override;
  HistoryFile(const HistoryFile&) = delete;
  HistoryFile& operator=(const HistoryFile&) = delete;

  // The descriptions kept in the file (agent_describe), and changes to them.
  std::vector<Description> LoadDescriptions();
  void SaveDescription(const Description& d);
  void ForgetDescription(const std::string& target);

  void SaveRun(const RunRecord& run) override;
  void SaveAttempts(const std::vector<AttemptRecord>& attempts) override;
  void ForgetRun(int64_t run_id) override;
  // Writes that failed (a full disk, a locked file); the memory copy is kept.
  int errors() const { return errors_.load(); }

 private:
  explicit HistoryFile(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  Statement save_run_;
  Statement save_attempt_;
  std::atomic<int> errors_{0};
};

}  // namespace querypilot
