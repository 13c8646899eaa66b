#include "agent/knowledge/value_builder.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "agent/base/sqlite.h"
#include "agent/sql/statement.h"

namespace querypilot {

using Clock = std::chrono::steady_clock;

struct BackgroundBuild::State {
  std::string file;
  std::shared_ptr<ValueStore> store;
  std::atomic<bool> cancel{false};
  mutable std::mutex mu;
  std::condition_variable cv;
  bool wake = false;
  bool finished = false;  // the thread has ended
  sqlite3* reader = nullptr;  // while the thread has it open (for sqlite3_interrupt)
  std::string state = "starting";
  Clock::time_point started = Clock::now();
  int64_t complete_ms = -1;  // first time every table was read
  int64_t passes = 0;
  pid_t pid = getpid();

  void Set(std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    state = std::move(s);
  }
};

namespace {

// Waits up to `ms` for a wake-up or cancellation; true when cancelled.
bool Pause(BackgroundBuild::State& s, int ms);

void Run(std::shared_ptr<BackgroundBuild::State> s) {
  sqlite3* src = nullptr;
  if (sqlite3_open_v2(s->file.c_str(), &src, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    s->Set(fmt::format("failed: could not open the database read-only: {}", src ? sqlite3_errmsg(src) : "no memory"));
    sqlite3_close(src);
  } else {
    sqlite3_busy_timeout(src, 200);
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->reader = src;
    }
    s->Set("reading");
    ScanLimits limits;
    limits.cancel = &s->cancel;
    // An index kept in a file may be older than the database: rows added
    // since are read, tables with rows gone are read again.
    CatchUp(src, "main", *s->store, s->file, kCountEveryTable);
    int64_t data_version = -1;
    while (!s->cancel.load()) {
      const bool done = ScanSource(src, "main", *s->store, s->file, limits);
      {
        std::lock_guard<std::mutex> lock(s->mu);
        ++s->passes;
        if (done) {
          s->state = "complete";
          if (s->complete_ms < 0) {
            s->complete_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - s->started).count();
          }
          s->cv.notify_all();
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
        if (data_version >= 0 && !CatchUp(src, "main", *s->store, s->file, kCountEveryTable).empty()) s->Set("reading");
        data_version = now;
      }
    }
    std::lock_guard<std::mutex> lock(s->mu);
    s->reader = nullptr;
    sqlite3_close(src);
  }
  std::lock_guard<std::mutex> lock(s->mu);
  s->finished = true;
  s->cv.notify_all();
}

bool Pause(BackgroundBuild::State& s, int ms) {
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait_for(lock, std::chrono::milliseconds(ms), [&s] { return s.wake || s.cancel.load(); });
  s.wake = false;
  return s.cancel.load();
}

std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex;  // never destroyed: threads may outlive static destruction
  return *mu;
}

std::map<std::pair<std::string, std::string>, std::weak_ptr<BackgroundBuild>>& Registry() {
  static auto* registry = new std::map<std::pair<std::string, std::string>, std::weak_ptr<BackgroundBuild>>;
  return *registry;
}

// The builds used last, kept after their last connection closes: a tool
// that opens a connection per query (sqlite-utils, a web app's request)
// still finds its index. Bounded, so a process that visits many files keeps
// few threads.
constexpr size_t kKeptBuilds = 4;
std::vector<std::shared_ptr<BackgroundBuild>>& Recent() {
  static auto* recent = new std::vector<std::shared_ptr<BackgroundBuild>>;
  return *recent;
}

void KeepRecent(const std::shared_ptr<BackgroundBuild>& build) {
  auto& recent = Recent();
  std::erase(recent, build);
  recent.insert(recent.begin(), build);
  if (recent.size() > kKeptBuilds) recent.resize(kKeptBuilds);
}

}  // namespace

Result<std::shared_ptr<BackgroundBuild>> BackgroundBuild::For(const std::string& file, const std::string& store_path) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto& slot = Registry()[{file, store_path}];
  if (auto existing = slot.lock(); existing && existing->state_->pid == getpid()) {
    KeepRecent(existing);
    return existing;
  }
  auto store = ValueStore::Open(store_path);
  if (!store.ok()) return store.status();
  auto state = std::make_shared<State>();
  state->file = file;
  state->store = std::move(store).value();
  std::shared_ptr<BackgroundBuild> build(new BackgroundBuild(state));
  std::thread(Run, state).detach();
  slot = build;
  KeepRecent(build);
  return build;
}

BackgroundBuild::~BackgroundBuild() {
  State& s = *state_;
  s.cancel.store(true);
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.reader) sqlite3_interrupt(s.reader);
  s.cv.notify_all();
  // After fork() the thread is not in this process: nothing to wait for.
  if (s.pid == getpid()) s.cv.wait(lock, [&s] { return s.finished; });
}

const std::shared_ptr<ValueStore>& BackgroundBuild::store() const { return state_->store; }
const std::string& BackgroundBuild::source() const { return state_->file; }

void BackgroundBuild::Wake() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->wake = true;
  state_->cv.notify_all();
}

bool BackgroundBuild::WaitComplete(int ms) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, std::chrono::milliseconds(ms),
                             [this] { return state_->state == "complete" || state_->finished; }) &&
         state_->state == "complete";
}

nlohmann::json BackgroundBuild::Progress() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  nlohmann::json j;
  j["state"] = state_->state;
  j["complete_after_ms"] = state_->complete_ms < 0 ? nlohmann::json() : nlohmann::json(state_->complete_ms);
  j["passes"] = state_->passes;
  return j;
}

}  // namespace querypilot
