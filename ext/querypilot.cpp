/*
** QueryPilot: a self-correcting text-to-SQL agent as a SQLite extension.
**
** Usage:
**
**   .load ./build/querypilot
**   SELECT * FROM ask('Which five customers spent the most last year?');
**   SELECT * FROM agent_runs;
**
** This file is the single entry point. It creates the connection's state and
** registers every function and module from the tables below, checking each
** return code. Where extensions cannot be loaded, a host registers it as an
** automatic extension instead (libquerypilot_preload.so, ext/preload.c, or
** sqlite3_auto_extension itself): docs/beyond-one-machine.md.
*/
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/base/own_surface.h"
#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/base/thread_annotations.h"
#include "agent/session/session.h"
#include "ext/ask_result.h"
#include "ext/ask_vtab.h"
#include "ext/functions.h"
#include "ext/record_tables.h"

extern "C" {
SQLITE_EXTENSION_INIT1
// libquerypilot_preload.so's (ext/preload.c): nonzero while it opens a
// connection on the calling thread. Null where the preload is not loaded.
__attribute__((weak)) int querypilot_preload_opening(void);
}

namespace querypilot::ext {
namespace {

// Functions that reach a network or change settings are never
// DETERMINISTIC or INNOCUOUS, and are DIRECTONLY: a database's own views and
// triggers must not be able to call them.
constexpr int kDirectOnly = SQLITE_UTF8 | SQLITE_DIRECTONLY;

struct FunctionSpec {
  const char* name;
  int n_args;
  int flags;
  void (*func)(sqlite3_context*, int, sqlite3_value**);
};

constexpr FunctionSpec kFunctions[] = {
    {"querypilot_version", 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
     QuerypilotVersionFunc},
    {"agent_config", 0, kDirectOnly, AgentConfigFunc},
    {"agent_config", 1, kDirectOnly, AgentConfigFunc},
    {"agent_config", 2, kDirectOnly, AgentConfigFunc},
    {"ask_sql", 1, kDirectOnly, AskSqlFunc},
    {"ask_prompt", 1, kDirectOnly, AskPromptFunc},
    {"ask_start", 1, kDirectOnly, AskStartFunc},
    {"ask_state", 1, kDirectOnly, AskStateFunc},
    {"agent_feedback", 2, kDirectOnly, AgentFeedbackFunc},
    {"agent_forget", 1, kDirectOnly, AgentForgetFunc},
    {"agent_explain", 1, kDirectOnly, AgentExplainFunc},
    {"agent_chart", 1, kDirectOnly, AgentChartFunc},
    {"agent_chart_html", 1, kDirectOnly, AgentChartHtmlFunc},
    {"agent_index", 0, kDirectOnly, AgentIndexFunc},
    {"agent_index", 1, kDirectOnly, AgentIndexFunc},
    {"agent_prompt", 1, kDirectOnly, AgentPromptFunc},
    {"agent_prompt", 2, kDirectOnly, AgentPromptFunc},
    {"agent_describe", 1, kDirectOnly, AgentDescribeFunc},
    {"agent_describe", 2, kDirectOnly, AgentDescribeFunc},
};

struct ModuleSpec {
  const char* name;
  const sqlite3_module* module;
};

const ModuleSpec kModules[] = {
    {"ask", &kAskModule},
    {"ask_result", &kAskResultModule},
};

// Each registration holds its own reference to the connection's state.
void ReleaseSessionRef(void* p) {
  delete static_cast<std::shared_ptr<Session>*>(p);
}

// The connections QueryPilot is loaded into, so that a second load on the
// same connection keeps its state. An entry expires with its Session,
// which SQLite destroys (through the registrations' destructors) when the
// connection closes: a new connection at the same address finds it expired.
// Process-wide, and not owned by the session, because the question comes
// before any session is reached: a connection has no place of QueryPilot's
// own to ask (sqlite3_set_clientdata is 3.44's; QueryPilot loads into 3.37),
// and a second load replaces the functions whose user data hold the session.
Mutex loaded_mu;
std::map<sqlite3*, std::weak_ptr<Session>>& Loaded() REQUIRES(loaded_mu) {
  static auto* loaded = new std::map<sqlite3*, std::weak_ptr<Session>>();
  return *loaded;
}

// ask('q') is found in temp first: the statement that asks then holds a
// read transaction on the connection's private temp database only, not on
// main, whose file other processes may be waiting to write
// (agent/sql/read_connection.h). Should this fail (the file cannot be read,
// the connection cannot write its temp schema), the eponymous main.ask
// serves all the same. Making it reads the schemas of the connection's files.
void MakeTempAsk(sqlite3* db) {
  sqlite3_exec(db, "CREATE VIRTUAL TABLE IF NOT EXISTS temp.ask USING ask", nullptr, nullptr,
               nullptr);
}

// True when QueryPilot is loaded as the connection opens, by
// libquerypilot_preload.so (ext/preload.c), which says so while it is inside
// an open on this thread. An automatic extension a host registers itself
// (sqlite3_auto_extension) cannot be told apart from sqlite3_load_extension:
// its connections make temp.ask at once.
bool LoadedAsItOpens() {
  return querypilot_preload_opening != nullptr && querypilot_preload_opening() != 0;
}

int Register(sqlite3* db, char** err) {
  MutexLock lock(&loaded_mu);
  std::erase_if(Loaded(), [](const auto& entry) { return entry.second.expired(); });
  if (std::shared_ptr<Session> loaded = Loaded()[db].lock()) {
    // Loaded here already: registering again would replace the functions
    // and with them the connection's settings, history and descriptions.
    // The second load changes nothing.
    return SQLITE_OK;
  }
  // Generated SQL may reach nothing QueryPilot registers: the critic reads
  // the names from these tables.
  OwnSurface own;
  for (const auto& f : kFunctions) own.functions.push_back(f.name);
  for (const auto& m : kModules) own.modules.push_back(m.name);
  for (const RecordTableSpec& t : RecordTables()) own.modules.push_back(t.name);
  // Nothing done as a connection opens may touch its file: a file that is
  // not a database, or one another connection holds locked, must open as it
  // does without QueryPilot. So temp.ask is then made at the connection's
  // first call of QueryPilot's (Session::Reachable), and at once otherwise.
  const bool opening = LoadedAsItOpens();
  auto conn = std::make_shared<Session>(
      db, std::move(own), opening ? std::function<void()>([db] { MakeTempAsk(db); }) : nullptr);
  Loaded()[db] = conn;
  for (const auto& f : kFunctions) {
    auto* ref = new std::shared_ptr<Session>(conn);
    int rc = sqlite3_create_function_v2(db, f.name, f.n_args, f.flags, ref, f.func, nullptr,
                                        nullptr, ReleaseSessionRef);
    // On failure SQLite has already called the destructor for `ref`.
    if (rc != SQLITE_OK) {
      *err = sqlite3_mprintf("querypilot: could not register function %s/%d: %s", f.name, f.n_args,
                             sqlite3_errstr(rc));
      return rc;
    }
  }
  for (const auto& m : kModules) {
    auto* ref = new std::shared_ptr<Session>(conn);
    int rc = sqlite3_create_module_v2(db, m.name, m.module, ref, ReleaseSessionRef);
    if (rc != SQLITE_OK) {
      *err = sqlite3_mprintf("querypilot: could not register module %s: %s", m.name,
                             sqlite3_errstr(rc));
      return rc;
    }
  }
  if (int rc = RegisterRecordTables(db, conn, err); rc != SQLITE_OK) return rc;
  if (!opening) MakeTempAsk(db);
  return SQLITE_OK;
}

}  // namespace
}  // namespace querypilot::ext

extern "C" __attribute__((visibility("default"))) int sqlite3_querypilot_init(
    sqlite3* db, char** pzErrMsg, const sqlite3_api_routines* pApi) {
  // The routine table is process-wide: set it once, so that connections
  // loading QueryPilot from several threads at once do not race on it.
  static std::once_flag api_once;
  std::call_once(api_once, [pApi] {
    SQLITE_EXTENSION_INIT2(pApi);
    // Names the host's SQLite reads as keywords are quoted in prompts.
    querypilot::SetHostKeywordCheck(querypilot::HostKeywordCheck);
  });
  // A connection QueryPilot opens for itself, reached here because QueryPilot
  // is an automatic extension (libquerypilot_preload.so): left alone. A
  // session there would register that connection's file as a host's, and the
  // own-file checks would then refuse history_file and value_index_file as
  // the database of another connection (tests/e2e/test_dqlite.py).
  if (pApi == sqlite3_api && querypilot::OpeningOwnConnection()) return SQLITE_OK;
  if (pApi != sqlite3_api) {
    *pzErrMsg =
        sqlite3_mprintf("querypilot: already loaded by another SQLite library in this process");
    return SQLITE_ERROR;
  }
  if (sqlite3_libversion_number() < 3037000) {
    *pzErrMsg =
        sqlite3_mprintf("querypilot needs SQLite 3.37 or newer; this is %s", sqlite3_libversion());
    return SQLITE_ERROR;
  }
  try {
    return querypilot::ext::Register(db, pzErrMsg);
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    *pzErrMsg = sqlite3_mprintf("querypilot: %s", e.what());
    return SQLITE_ERROR;
  } catch (...) {
    *pzErrMsg = sqlite3_mprintf("querypilot: initialisation failed");
    return SQLITE_ERROR;
  }
}
