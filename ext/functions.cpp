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
**
** agent_config('api_key', ...) can set the key but never reads it back:
** reads say 'set (agent_config)', 'set (environment: NAME)' or 'unset'.
** agent_config and ask_sql are DIRECTONLY and not deterministic.
*/
#include "ext/functions.h"

#include <memory>
#include <string>

#include "agent/config.h"
#include "ext/callback.h"
#include "agent/prompts.h"
#include "ext/connection.h"
#include "querypilot_version.h"

namespace querypilot::ext {
namespace {

Connection& ConnectionOf(sqlite3_context* ctx) {
  return **static_cast<std::shared_ptr<Connection>*>(sqlite3_user_data(ctx));
}

std::string TextArg(sqlite3_value* v) {
  const unsigned char* t = sqlite3_value_text(v);
  if (!t) return "";
  return std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_value_bytes(v)));
}

void ResultError(sqlite3_context* ctx, const std::string& msg) {
  sqlite3_result_error(ctx, msg.c_str(), static_cast<int>(msg.size()));
}

}  // namespace

void QuerypilotVersionFunc(sqlite3_context* ctx, int, sqlite3_value**) noexcept {
  sqlite3_result_text(ctx, QUERYPILOT_VERSION, -1, SQLITE_STATIC);
}

void AgentConfigFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_config", [&] {
    Connection& conn = ConnectionOf(ctx);
    if (argc == 0) {
      std::string json = conn.ConfigJson();
      ResultText(ctx, json);
      sqlite3_result_subtype(ctx, 'J');
      return;
    }
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
      ResultError(ctx, "agent_config(): the setting name is NULL");
      return;
    }
    std::string key = TextArg(argv[0]);
    if (argc == 2) {
      std::string value;
      if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        // NULL restores the default.
        if (key != "api_key") {
          Result<std::string> def = Config().Get(key, [](const char*) -> const char* { return nullptr; });
          if (!def.ok()) {
            ResultError(ctx, "agent_config(): " + def.status().message());
            return;
          }
          value = def.value();
        }
      } else {
        value = TextArg(argv[1]);
      }
      if (Status st = conn.SetConfig(key, value); !st.ok()) {
        ResultError(ctx, "agent_config(): " + st.message());
        return;
      }
    }
    Result<std::string> v = conn.GetConfig(key);
    if (!v.ok()) {
      ResultError(ctx, "agent_config(): " + v.status().message());
      return;
    }
    // A number reads back as a number: agent_config('max_rows') + 1 works.
    switch (Config::TypeOf(key)) {
      case Config::ValueType::kInteger: sqlite3_result_int64(ctx, std::stoll(v.value())); return;
      case Config::ValueType::kReal: sqlite3_result_double(ctx, std::stod(v.value())); return;
      case Config::ValueType::kText: ResultText(ctx, v.value()); return;
    }
  });
}

void AgentFeedbackFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_feedback", [&] {
    Connection& conn = ConnectionOf(ctx);
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
      ResultError(ctx, "agent_feedback(): the first argument is a run id from agent_runs");
      return;
    }
    std::string verdict = sqlite3_value_type(argv[1]) == SQLITE_NULL ? "" : TextArg(argv[1]);
    if (verdict != "good" && verdict != "bad" && !verdict.empty()) {
      ResultError(ctx, "agent_feedback(): the verdict is 'good', 'bad' or NULL (none)");
      return;
    }
    int64_t run_id = sqlite3_value_int64(argv[0]);
    if (Status st = conn.CheckOwnFiles(); !st.ok()) {  // the history file is written
      ResultError(ctx, "agent_feedback(): " + st.message());
      return;
    }
    if (!conn.history().SetFeedback(run_id, verdict)) {
      ResultError(ctx, "agent_feedback(): there is no run " + std::to_string(run_id) + " in agent_runs");
      return;
    }
    if (verdict.empty()) {
      sqlite3_result_null(ctx);
    } else {
      ResultText(ctx, verdict);
    }
  });
}

void AgentPromptFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_prompt", [&] {
    Connection& conn = ConnectionOf(ctx);
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
      ResultError(ctx, "agent_prompt(): the prompt name is NULL; SELECT name FROM agent_prompts lists them");
      return;
    }
    std::string name = TextArg(argv[0]);
    Result<std::string> text = Status::Ok();
    if (argc == 1) {
      if (Status st = ValidatePromptText(name, "x"); !st.ok()) {
        text = st;
      } else {
        text = std::string(PromptTextFor(conn.config().prompts, name));
      }
    } else if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
      text = conn.SetPrompt(name, std::nullopt);  // back to the default
    } else {
      text = conn.SetPrompt(name, TextArg(argv[1]));
    }
    if (!text.ok()) {
      ResultError(ctx, "agent_prompt(): " + text.status().message());
      return;
    }
    ResultText(ctx, text.value());
  });
}

void AgentDescribeFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_describe", [&] {
    Connection& conn = ConnectionOf(ctx);
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
      ResultError(ctx, "agent_describe(): the table or column is NULL: agent_describe('orders.status', '...')");
      return;
    }
    std::optional<std::string> text;
    if (argc == 2 && sqlite3_value_type(argv[1]) != SQLITE_NULL) text = TextArg(argv[1]);
    Result<std::optional<std::string>> now = conn.Describe(TextArg(argv[0]), text, argc == 1);
    if (!now.ok()) {
      ResultError(ctx, "agent_describe(): " + now.status().message());
    } else if (now->has_value()) {
      ResultText(ctx, **now);
    } else {
      sqlite3_result_null(ctx);
    }
  });
}

void AgentIndexFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_index", [&] {
    std::string database;
    if (argc == 1) {
      if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
        ResultError(ctx, "agent_index(): the argument is a database name such as 'main' (PRAGMA database_list)");
        return;
      }
      database = TextArg(argv[0]);
    }
    Result<std::string> built = ConnectionOf(ctx).BuildValueIndex(database);
    if (!built.ok()) {
      ResultError(ctx, "agent_index(): " + built.status().message());
      // After the message: sqlite3_result_error sets SQLITE_ERROR.
      if (built.status().kind() == ErrorKind::kInterrupted) sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
      return;
    }
    ResultText(ctx, built.value());
    sqlite3_result_subtype(ctx, 'J');
  });
}

void AgentExplainFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "agent_explain", [&] {
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
      ResultError(ctx, "agent_explain(): the argument is a run id from agent_runs");
      return;
    }
    Result<std::string> text = ConnectionOf(ctx).Explain(sqlite3_value_int64(argv[0]));
    if (!text.ok()) {
      ResultError(ctx, "agent_explain(): " + text.status().message());
      return;
    }
    ResultText(ctx, text.value());
  });
}

void AskSqlFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept {
  GuardFunction(ctx, "ask_sql", [&] {
    Connection& conn = ConnectionOf(ctx);
    if (argc < 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
      ResultError(ctx, "ask_sql(): the question is NULL");
      return;
    }
    std::string question = TextArg(argv[0]);
    if (Status st = conn.ValidateQuestion(question); !st.ok()) {
      ResultError(ctx, "ask_sql(): " + st.message());
      return;
    }
    StatementContext context = conn.CurrentStatementContext();
    if (auto kept = conn.FindAnswer(question, context)) {
      ResultText(ctx, kept->sql);
      return;
    }
    Result<RunResult> run = conn.Ask(question);
    if (!run.ok()) {
      ResultError(ctx, "ask_sql(): " + run.status().message());
      return;
    }
    if (run->status != RunStatus::kOk) {
      ResultError(ctx, "ask_sql(): " + run->UserMessage());
      return;
    }
    auto answer = std::make_shared<StatementAnswer>();
    answer->run_id = run->run_id;
    answer->sql = run->sql;
    answer->column_names = run->query->column_names();
    // The SQL was executed once to check it; its rows are not kept here, so a
    // later ask() of the same question in this statement re-runs the SQL.
    conn.KeepAnswer(question, std::move(context), answer);
    ResultText(ctx, run->sql);
  });
}

}  // namespace querypilot::ext
