#include "agent/knowledge/value_builder.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "agent/base/sqlite.h"
#include "agent/base/thread_annotations.h"
#include "agent/knowledge/value_scan.h"
#include "agent/sql/read_connection.h"
#include "agent/sql/statement.h"

namespace querypilot {

using Clock = std::chrono::steady_clock;

// What storing one chunk of the background's may hold the store for.
constexpr double kBackgroundChunkMs = 4;

namespace {

using Key = std::tuple<std::string, std::string, bool>;  // (file, index file, writable)

// The builds running, by what they read. Process-wide because connections
// that read the same file share one build (one thread, one store), whichever
// session started it. Its lock is taken before a build's state's and the
// kept list's (BackgroundBuild::For).
struct BuildRegistry {
  Mutex mu;
  std::map<Key, std::weak_ptr<BackgroundBuild>> builds GUARDED_BY(mu);
};

}  // namespace

struct BackgroundBuild::State {
  std::string file;
  std::string store_path;
  bool writable = false;  // opened read-write with query_only
  std::shared_ptr<ValueStore> store;
  std::atomic<bool> cancel{false};
  mutable Mutex mu ACQUIRED_AFTER(BuildRegistry::mu);
  CondVar cv;
  bool wake GUARDED_BY(mu) = false;
  bool finished GUARDED_BY(mu) = false;  // the thread has ended
  // While the thread has it open (for sqlite3_interrupt).
  sqlite3* reader GUARDED_BY(mu) = nullptr;
  std::string state GUARDED_BY(mu) = "starting";
  const Clock::time_point started = Clock::now();
  int64_t complete_ms GUARDED_BY(mu) = -1;  // first time every table was read
  int64_t passes GUARDED_BY(mu) = 0;
  const pid_t pid = getpid();

  void Set(std::string s) EXCLUDES(mu) {
    MutexLock lock(&mu);
    state = std::move(s);
  }
};

namespace {

// Waits up to `ms` for a wake-up or cancellation; true when cancelled.
bool Pause(BackgroundBuild::State& s, int ms);

// The store cannot be used: said, and the thread ends.
bool Broken(BackgroundBuild::State& s) {
  Status why = s.store->broken();
  if (why.ok()) return false;
  s.Set("failed: " + why.message());
  return true;
}

void Run(std::shared_ptr<BackgroundBuild::State> s) {
  Result<sqlite3*> opened = OpenBeside(s->file, s->writable);
  if (!opened.ok()) {
    s->Set("failed: " + opened.status().message());
  } else {
    sqlite3* src = opened.value();
    sqlite3_busy_timeout(src, 200);
    {
      MutexLock lock(&s->mu);
      s->reader = src;
      // A store kept complete from an earlier build stays so while it
      // catches up.
      if (s->state != "complete") s->state = "reading";
    }
    ScanLimits limits;
    limits.cancel = &s->cancel;
    // An ask's lookup waits for the chunk being stored: a few milliseconds.
    limits.max_chunk_ms = kBackgroundChunkMs;
    // An index kept in a file, or from an earlier build, may be older than
    // the database: rows added since are read, tables with rows gone are
    // read again.
    if (!CatchUp(src, "main", *s->store, s->file, kCountEveryTable).empty()) s->Set("reading");
    int64_t data_version = -1;
    while (!s->cancel.load() && !Broken(*s)) {
      const bool done = ScanSource(src, "main", *s->store, s->file, limits);
      if (Broken(*s)) break;
      {
        MutexLock lock(&s->mu);
        ++s->passes;
        if (done) {
          s->state = "complete";
          if (s->complete_ms < 0) {
            s->complete_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - s->started)
                    .count();
          }
          s->cv.SignalAll();
        }
      }
      // Done: look again in a second, or when an ask says the file changed.
      // Not done (busy, interrupted): try again soon.
      if (Pause(*s, done ? 1000 : 50)) break;
      auto version = [src]() -> int64_t {
        Result<Statement> st = Statement::Prepare(src, "PRAGMA data_version");
        return st.ok() && st->Step() == SQLITE_ROW ? st->ColumnInt(0) : -1;
      };
      const int64_t now = version();
      if (done && now != data_version) {
        if (data_version >= 0 &&
            !CatchUp(src, "main", *s->store, s->file, kCountEveryTable).empty())
          s->Set("reading");
        data_version = now;
      }
    }
    {
      MutexLock lock(&s->mu);
      s->reader = nullptr;  // interrupted no more
    }
    // The close may be the last of the file's connections (within the
    // host's close, when the build's last user goes): it then checkpoints
    // the log into the file and removes the -wal and -shm files (writable
    // only). A checkpoint stops at an interruption, and SQLite keeps a
    // connection interrupted until a statement starts with none running:
    // one does.
    (void)sqlite3_exec(src, "SELECT 1", nullptr, nullptr, nullptr);
    sqlite3_close_v2(src);
  }
  MutexLock lock(&s->mu);
  s->finished = true;
  s->cv.SignalAll();
}

bool Pause(BackgroundBuild::State& s, int ms) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(ms);
  MutexLock lock(&s.mu);
  while (!s.wake && !s.cancel.load()) {
    if (!s.cv.WaitUntil(&s.mu, deadline)) break;
  }
  s.wake = false;
  return s.cancel.load();
}

BuildRegistry& Builds() {
  static auto* registry = new BuildRegistry();  // never destroyed: threads may outlive it
  return *registry;
}

// What the builds of the files used last read, kept after their last
// connection closed (process-wide for that: it outlives every session): a tool that opens a
// connection per query (sqlite-utils, a web app's request) still finds its index. A private
// temporary store is kept open (it is QueryPilot's own, and gone with the process); an index file
// is closed, as it keeps what it holds on disk. Bounded, so a process that visits many files keeps
// few. Never a connection to the user's file.
struct Kept {
  Key key;
  std::shared_ptr<ValueStore> store;  // null for an index file
  bool complete = false;
  int64_t complete_ms = -1;
  pid_t pid = 0;
};
constexpr size_t kKeptBuilds = 4;

struct KeptList {
  Mutex mu ACQUIRED_AFTER(BuildRegistry::mu);
  std::vector<Kept> builds GUARDED_BY(mu);
};
// Process-wide, as the registry is: what it keeps outlives every session.
KeptList& KeptBuilds() {
  static auto* kept = new KeptList();
  return *kept;
}

// The entry kept for `key`, taken out of the list.
std::optional<Kept> TakeKept(const Key& key) {
  KeptList& list = KeptBuilds();
  MutexLock lock(&list.mu);
  auto& kept = list.builds;
  auto it = std::find_if(kept.begin(), kept.end(), [&](const Kept& k) { return k.key == key; });
  if (it == kept.end()) return std::nullopt;
  Kept k = std::move(*it);
  kept.erase(it);
  if (k.pid != getpid()) return std::nullopt;  // after fork(): the parent's
  return k;
}

void Keep(Kept k) {
  std::vector<Kept> dropped;  // closed outside the lock (declared first: destroyed last)
  KeptList& list = KeptBuilds();
  MutexLock lock(&list.mu);
  auto& kept = list.builds;
  kept.insert(kept.begin(), std::move(k));
  while (kept.size() > kKeptBuilds) {
    dropped.push_back(std::move(kept.back()));
    kept.pop_back();
  }
}

}  // namespace

Result<std::shared_ptr<BackgroundBuild>> BackgroundBuild::For(const std::string& file,
                                                              const std::string& store_path,
                                                              bool writable, bool kept_file) {
  BuildRegistry& registry = Builds();
  MutexLock lock(&registry.mu);
  const Key key{file, store_path, writable};
  auto& slot = registry.builds[key];
  // One whose store was found unusable (by an ask's lookup, before its
  // thread noticed) is no build to join.
  if (auto existing = slot.lock(); existing && existing->state_->pid == getpid() &&
                                   !existing->failed() && existing->store()->broken().ok()) {
    return existing;
  }
  auto state = std::make_shared<State>();
  state->file = file;
  state->store_path = store_path;
  state->writable = writable;
  std::optional<Kept> kept = TakeKept(key);
  if (kept && kept->store && kept->store->broken().ok()) state->store = std::move(kept->store);
  if (!state->store) {
    auto store = ValueStore::Open(store_path, nullptr, kept_file);
    if (!store.ok()) return store.status();
    state->store = std::move(store).value();
  }
  // Complete when it was, and the store still holds every table read (an
  // index file may have been removed since); an index file that holds every
  // table of the file read is complete too (kept by an earlier process).
  // Either catches up from there, beside the asks, which need not wait.
  if ((kept && kept->complete) || !store_path.empty()) {
    std::vector<TableProgress> tables = state->store->Tables(file);
    if (!tables.empty() &&
        std::all_of(tables.begin(), tables.end(), [](const TableProgress& t) { return t.done; })) {
      MutexLock state_lock(&state->mu);  // no thread reads it yet
      state->state = "complete";
      state->complete_ms = kept && kept->complete ? kept->complete_ms : 0;
    }
  }
  std::shared_ptr<BackgroundBuild> build(new BackgroundBuild(state));
  std::thread(Run, state).detach();
  slot = build;
  return build;
}

BackgroundBuild::~BackgroundBuild() {
  State& s = *state_;
  bool complete = false;
  int64_t complete_ms = -1;
  {
    s.cancel.store(true);
    MutexLock lock(&s.mu);
    if (s.reader) sqlite3_interrupt(s.reader);
    s.cv.SignalAll();
    // After fork() the thread is not in this process: nothing to wait for.
    if (s.pid != getpid()) return;
    while (!s.finished) s.cv.Wait(&s.mu);
    complete = s.state == "complete";
    complete_ms = s.complete_ms;
  }
  // The thread holds the state until it returns, after `finished`: the store
  // is taken from it, so that an index file closes here, within the host's
  // close, not whenever the thread ends.
  std::shared_ptr<ValueStore> store = std::move(s.store);
  if (!store->broken().ok()) return;
  Kept k;
  k.key = Key{s.file, s.store_path, s.writable};
  if (s.store_path.empty()) k.store = std::move(store);
  k.complete = complete;
  k.complete_ms = complete_ms;
  k.pid = s.pid;
  Keep(std::move(k));
}

const std::shared_ptr<ValueStore>& BackgroundBuild::store() const {
  return state_->store;
}

bool BackgroundBuild::failed() const {
  MutexLock lock(&state_->mu);
  return state_->finished || state_->state.starts_with("failed");
}
const std::string& BackgroundBuild::source() const {
  return state_->file;
}

void BackgroundBuild::Wake() {
  MutexLock lock(&state_->mu);
  state_->wake = true;
  state_->cv.SignalAll();
}

void BackgroundBuild::MarkComplete() {
  MutexLock lock(&state_->mu);
  if (state_->state.starts_with("failed")) return;
  state_->state = "complete";
  if (state_->complete_ms < 0) {
    state_->complete_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - state_->started)
            .count();
  }
  state_->cv.SignalAll();
}

bool BackgroundBuild::WaitComplete(int ms) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(ms);
  MutexLock lock(&state_->mu);
  while (state_->state != "complete" && !state_->finished) {
    if (!state_->cv.WaitUntil(&state_->mu, deadline)) break;
  }
  return state_->state == "complete";
}

nlohmann::json BackgroundBuild::Progress() const {
  MutexLock lock(&state_->mu);
  nlohmann::json j;
  j["state"] = state_->state;
  j["complete_after_ms"] =
      state_->complete_ms < 0 ? nlohmann::json() : nlohmann::json(state_->complete_ms);
  j["passes"] = state_->passes;
  return j;
}

}  // namespace querypilot
