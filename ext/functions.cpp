/*
** Scalar functions.
**
** Usage:
**
**   SELECT querypilot_version();                 -- '0.1.0'
**   SELECT agent_config();                       -- every setting, as JSON
**   SELECT agent_config('max_attempts');         -- one setting
**   SELECT agent_config('max_attempts', 5);      -- set it for this connection
**   SELECT agent_config('model', NULL);          -- back to the default
**   SELECT ask_sql('How many orders are there?'); -- the checked SQL, as text
**   SELECT agent_index();                        -- read every value now, like ANALYZE
**   SELECT agent_forget(3);                      -- run 3 is gone from the record
**   SELECT ask_start('How many orders are there?'); -- a run id, at once
**   SELECT ask_state(7);                         -- 'pending', 'ready', 'done', ...
**   SELECT agent_chart(3);                       -- a Vega-Lite chart of run 3's answer
**   .once chart.html
**   SELECT agent_chart_html(3);                  -- a page that draws it offline
**
** agent_config('api_key', ...) can set the key but never reads it back:
** reads say 'set (agent_config)', 'set (environment: NAME)' or 'unset'.
** Each function decodes its arguments, calls one method of the connection's
** Session (agent/session/session.h) and encodes what it returns.
*/
#include "ext/functions.h"

#include <memory>
#include <string>

#include "agent/session/session.h"
#include "ext/callback.h"
#include "querypilot_version.h"

namespace querypilot::ext {
namespace {

Session& SessionOf(sqlite3_context* ctx) {
  return **static_cast<std::shared_ptr<Session>*>(sqlite3_user_data(ctx));
}

std::string TextArg(sqlite3_value* v) {
  const unsigned char* t = sqlite3_value_text(v);
  if (!t) return "";
  return std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_value_bytes(v)));
}

bool IsNull(sqlite3_value* v) {
  return sqlite3_value_type(v) == SQLITE_NULL;
}

void ResultError(sqlite3_context* ctx, const std::string& msg) {
  sqlite3_result_error(ctx, msg.c_str(), static_cast<int>(msg.size()));
}

// Sets the error "where(): message" and returns true when `st` is an error.
bool Failed(sqlite3_context* ctx, const char* where, const Status& st) {
  if (st.ok()) return false;
  ResultError(ctx, std::string(where) + "(): " + st.message());
  return true;
}
template <typename T>
bool Failed(sqlite3_context* ctx, const char* where, const Result<T>& r) {
  return !r.ok() && Failed(ctx, where, r.status());
}

void ResultJson(sqlite3_context* ctx, const std::string& json) {
  ResultText(ctx, json);
  sqlite3_result_subtype(ctx, 'J');
}

// True, with the error set, when the function must not run now: SQL
// QueryPilot runs for a model is stepping on the connection, and only the
// host's schema (a TEMP view) can have reached it (Session::Reachable).
bool Unreachable(sqlite3_context* ctx, const char* where) {
  return Failed(ctx, where, SessionOf(ctx).Reachable(std::string(where) + "()"));
}

// A run id from agent_runs, or an error naming the function.
bool RunIdArg(sqlite3_context* ctx, const char* where, sqlite3_value* v, int64_t* run_id) {
  if (sqlite3_value_type(v) != SQLITE_INTEGER) {
    ResultError(ctx, std::string(where) + "(): the first argument is a run id from agent_runs");
    return false;
  }
  *run_id = sqlite3_value_int64(v);
  return true;
}

}  // namespace

void QuerypilotVersionFunc(sqlite3_context* ctx, int, sqlite3_value**) noexcept {
  GuardFunction(ctx, "querypilot_version", [&] {
    if (Unreachable(ctx, "querypilot_version")) return;
    sqlite3_result_text(ctx, QUERYPILOT_VERSION, -1, SQLITE_STATIC);
  });
}

void AgentConfigFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_config", [&] {
    if (Unreachable(ctx, "agent_config")) return;
    Session& session = SessionOf(ctx);
    if (argc == 0) return ResultJson(ctx, session.SettingsJson());
    if (IsNull(argv[0])) return ResultError(ctx, "agent_config(): the setting name is NULL");
    const std::string key = TextArg(argv[0]);
    if (argc == 2) {
      // NULL restores the default.
      Status st = IsNull(argv[1]) ? session.Reset(key) : session.Set(key, TextArg(argv[1]));
      if (Failed(ctx, "agent_config", st)) return;
    }
    Result<Value> v = session.Setting(key);
    if (!Failed(ctx, "agent_config", v)) ResultValue(ctx, v.value());
  });
}

void AgentFeedbackFunc(sqlite3_context* ctx, int, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_feedback", [&] {
    if (Unreachable(ctx, "agent_feedback")) return;
    int64_t run_id = 0;
    if (!RunIdArg(ctx, "agent_feedback", argv[0], &run_id)) return;
    const std::string verdict = IsNull(argv[1]) ? "" : TextArg(argv[1]);
    if (Failed(ctx, "agent_feedback", SessionOf(ctx).Feedback(run_id, verdict))) return;
    if (verdict.empty()) return sqlite3_result_null(ctx);
    ResultText(ctx, verdict);
  });
}

void AgentForgetFunc(sqlite3_context* ctx, int, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_forget", [&] {
    if (Unreachable(ctx, "agent_forget")) return;
    int64_t run_id = 0;
    if (!RunIdArg(ctx, "agent_forget", argv[0], &run_id)) return;
    if (!Failed(ctx, "agent_forget", SessionOf(ctx).Forget(run_id)))
      sqlite3_result_int64(ctx, run_id);
  });
}

void AgentPromptFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_prompt", [&] {
    if (Unreachable(ctx, "agent_prompt")) return;
    Session& session = SessionOf(ctx);
    if (IsNull(argv[0])) {
      return ResultError(
          ctx,
          "agent_prompt(): the prompt name is NULL; SELECT name FROM agent_prompts lists them");
    }
    const std::string name = TextArg(argv[0]);
    Result<std::string> text = argc == 1 ? session.PromptText(name)
                               : IsNull(argv[1])
                                   ? session.SetPrompt(name, std::nullopt)  // the default
                                   : session.SetPrompt(name, TextArg(argv[1]));
    if (!Failed(ctx, "agent_prompt", text)) ResultText(ctx, text.value());
  });
}

void AgentDescribeFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_describe", [&] {
    if (Unreachable(ctx, "agent_describe")) return;
    if (IsNull(argv[0])) {
      return ResultError(
          ctx,
          "agent_describe(): the table or column is NULL: agent_describe('orders.status', '...')");
    }
    std::optional<std::string> text;
    if (argc == 2 && !IsNull(argv[1])) text = TextArg(argv[1]);
    Result<std::optional<std::string>> now =
        SessionOf(ctx).Describe(TextArg(argv[0]), text, argc == 1);
    if (Failed(ctx, "agent_describe", now)) return;
    if (!now->has_value()) return sqlite3_result_null(ctx);
    ResultText(ctx, **now);
  });
}

void AgentIndexFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_index", [&] {
    if (Unreachable(ctx, "agent_index")) return;
    std::string database;
    if (argc == 1) {
      if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
        return ResultError(
            ctx,
            "agent_index(): the argument is a database name such as 'main' (PRAGMA database_list)");
      }
      database = TextArg(argv[0]);
    }
    Result<std::string> built = SessionOf(ctx).BuildValueIndex(database);
    if (!Failed(ctx, "agent_index", built)) return ResultJson(ctx, built.value());
    // After the message: sqlite3_result_error sets SQLITE_ERROR.
    if (built.status().kind() == ErrorKind::kInterrupted)
      sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
  });
}

void AgentExplainFunc(sqlite3_context* ctx, int, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_explain", [&] {
    if (Unreachable(ctx, "agent_explain")) return;
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
      return ResultError(ctx, "agent_explain(): the argument is a run id from agent_runs");
    }
    Result<std::string> text = SessionOf(ctx).Explain(sqlite3_value_int64(argv[0]));
    if (!Failed(ctx, "agent_explain", text)) ResultText(ctx, text.value());
  });
}

void AgentChartFunc(sqlite3_context* ctx, int, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_chart", [&] {
    if (Unreachable(ctx, "agent_chart")) return;
    int64_t run_id = 0;
    if (!RunIdArg(ctx, "agent_chart", argv[0], &run_id)) return;
    Result<std::string> spec = SessionOf(ctx).Chart(run_id);
    if (!Failed(ctx, "agent_chart", spec)) ResultJson(ctx, spec.value());
  });
}

void AgentChartHtmlFunc(sqlite3_context* ctx, int, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_chart_html", [&] {
    if (Unreachable(ctx, "agent_chart_html")) return;
    int64_t run_id = 0;
    if (!RunIdArg(ctx, "agent_chart_html", argv[0], &run_id)) return;
    Result<std::string> page = SessionOf(ctx).ChartPage(run_id);
    if (!Failed(ctx, "agent_chart_html", page)) ResultText(ctx, page.value());
  });
}

void AskSqlFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "ask_sql", [&] {
    if (Unreachable(ctx, "ask_sql")) return;
    if (argc < 1 || IsNull(argv[0])) return ResultError(ctx, "ask_sql(): the question is NULL");
    Result<std::string> sql = SessionOf(ctx).AskSql(TextArg(argv[0]));
    if (!Failed(ctx, "ask_sql", sql)) ResultText(ctx, sql.value());
  });
}

void AskStartFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "ask_start", [&] {
    if (Unreachable(ctx, "ask_start")) return;
    if (argc < 1 || IsNull(argv[0])) return ResultError(ctx, "ask_start(): the question is NULL");
    Result<int64_t> id = SessionOf(ctx).AskStart(TextArg(argv[0]));
    if (!Failed(ctx, "ask_start", id)) sqlite3_result_int64(ctx, id.value());
  });
}

void AskStateFunc(sqlite3_context* ctx, int, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "ask_state", [&] {
    if (Unreachable(ctx, "ask_state")) return;
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
      return ResultError(ctx, "ask_state(): the argument is a run id from ask_start");
    }
    Result<std::string> state = SessionOf(ctx).AskState(sqlite3_value_int64(argv[0]));
    if (!Failed(ctx, "ask_state", state)) ResultText(ctx, state.value());
  });
}

void AskPromptFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "ask_prompt", [&] {
    if (Unreachable(ctx, "ask_prompt")) return;
    if (argc < 1 || IsNull(argv[0])) return ResultError(ctx, "ask_prompt(): the question is NULL");
    Result<std::string> messages = SessionOf(ctx).Prompt(TextArg(argv[0]));
    if (!Failed(ctx, "ask_prompt", messages)) ResultJson(ctx, messages.value());
  });
}

}  // namespace querypilot::ext
