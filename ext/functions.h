// QueryPilot's scalar SQL functions, each registered by its rows in
// kFunctions (ext/querypilot.cpp). Each decodes its arguments, calls one
// method of the connection's Session and encodes the result; a failure is
// the function's error, "name(): message". See functions.cpp for usage.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// querypilot_version(): the extension's version, as text.
void QuerypilotVersionFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_config(): every setting as JSON; agent_config(key): one setting,
// typed (a number as a number); agent_config(key, value) sets it for this
// connection and agent_config(key, NULL) restores its default, each
// returning the value now in force. An API key is never read back.
void AgentConfigFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// ask_sql(question): the checked SQL that answers the question, as text,
// kept for the statement as ask()'s answer is.
void AskSqlFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_feedback(run_id, 'good' | 'bad' | NULL): marks a run; good runs become
// examples for similar questions, bad ones never do.
void AgentFeedbackFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_forget(run_id): removes a run from the record: its row in agent_runs,
// its attempts, its cached answer, the example it taught, and its rows in the
// history file. Returns the run id.
void AgentForgetFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// ask_start(question): starts an asynchronous ask; returns its run id at
// once (ask_result(id [, wait_ms]) gives its rows).
void AskStartFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// ask_state(run_id): 'pending', 'ready', 'done', 'failed' or 'lost'.
void AskStateFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// ask_prompt(question): the messages the first model call of
// ask(question) would send, as JSON, without calling the model.
void AskPromptFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_explain(run_id): 2 to 4 sentences about the run's result, from the
// model (explain_model); recorded in agent_runs.explanation.
void AgentExplainFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_chart(run_id): a Vega-Lite v5 specification of the run's answer,
// its rows embedded, as JSON text (agent/chart/chart.h).
void AgentChartFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_chart_html(run_id): an HTML page that draws that chart offline.
void AgentChartHtmlFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_index([database]): reads every text value of the connection's
// databases (or one) into the value index now, like ANALYZE; resumable and
// interruptible. Returns JSON: per database, state, tables, values, ms.
void AgentIndexFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_prompt(name): the prompt text in force; agent_prompt(name, text) sets
// it; agent_prompt(name, NULL) restores the default.
void AgentPromptFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_describe(target [, text]): reads, sets or (text NULL) removes the
// description of a table or column.
void AgentDescribeFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;

}  // namespace querypilot::ext
