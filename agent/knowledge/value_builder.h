// BackgroundBuild: a database file's value index, read beside the asks.
//
// One per (database file, index file) in the process, shared by every
// connection that asks about that file: the first ask starts it, and it
// lives as long as some connection uses it. Its thread opens the file on a
// connection of its own, so an ask never waits for it: the ask looks up
// what the store holds so far (agent/knowledge/value_store.h). Once every
// table is read, the thread checks every second whether the file changed
// (PRAGMA data_version) and catches up on new rows.
//
// When the last connection using it closes, the thread ends and its
// connection to the file closes, within the host's close: nothing of
// QueryPilot's holds the file after it. A file in WAL mode whose host would
// checkpoint it on close is opened read-write with PRAGMA query_only
// (agent/sql/read_connection.h), so that if QueryPilot's connection closes
// last it checkpoints and removes the -wal and -shm files, as the host's
// close would have. What was read is kept for the next connection to the
// same file: a private temporary index (QueryPilot's own, never the user's
// file) stays open for the four files used last; an index file is on disk.
// Either starts again "complete" when it was, and catches up from there.
//
// The thread never writes to the database file. Each chunk it reads is a
// short read transaction; in rollback-journal mode a writer may meet it as a
// SHARED lock for that long (a few milliseconds), as with any other reader.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/base/status.h"
#include "agent/knowledge/value_store.h"

namespace querypilot {

class BackgroundBuild {
 public:
  // The build of `file` into the index file `store_path` ("" = a temporary
  // one), started if this process has none yet. `writable`: the file is
  // opened read-write with query_only, as HostCheckpointsOnClose() says of
  // the host (agent/sql/read_connection.h); a build is shared only by hosts
  // alike in this. An index file that cannot be opened is an error naming it.
  // One that holds every table of the file read (kept by an earlier process)
  // starts "complete", and catches up on what changed since. `kept_file`:
  // the index file is a kept one, opened as ValueStore::Open() opens those.
  static Result<std::shared_ptr<BackgroundBuild>> For(const std::string& file,
                                                      const std::string& store_path, bool writable,
                                                      bool kept_file = false);

  // The last user gone: stops the thread and waits for it to close its
  // connection; keeps what it read for the next build of the same file.
  ~BackgroundBuild();
  BackgroundBuild(const BackgroundBuild&) = delete;
  BackgroundBuild& operator=(const BackgroundBuild&) = delete;

  const std::shared_ptr<ValueStore>& store() const;
  const std::string& source() const;  // the file, as the store names it
  // The file may have changed: check it now instead of within a second.
  void Wake();
  // Every table was read by the asking connection itself (a small file's
  // first ask, agent_index()): "complete" now, as the thread would say once
  // it looked, unless it failed. (A thread still starting, on a busy
  // machine, would otherwise say "starting" of an index that is whole.)
  void MarkComplete();
  // Waits at most `ms` for every table to be read; true when it is.
  bool WaitComplete(int ms);
  // True once the thread has ended for good: the file could not be opened,
  // or the store cannot be used (ValueStore::broken()).
  bool failed() const;
  // state ("starting", "reading", "complete", "failed: ..."), ms until
  // complete, passes.
  nlohmann::json Progress() const;

  struct State;  // shared with the thread (value_builder.cpp)

 private:
  explicit BackgroundBuild(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace querypilot
