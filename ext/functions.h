// QueryPilot's scalar SQL functions. See functions.cpp.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

void QuerypilotVersionFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
void AgentConfigFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
void AskSqlFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_feedback(run_id, 'good' | 'bad' | NULL): marks a run; good runs become
// examples for similar questions, bad ones never do.
void AgentFeedbackFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_forget(run_id): removes a run from the record: its row in agent_runs,
// its attempts, its cached answer, the example it taught, and its rows in the
// history file. Returns the run id.
void AgentForgetFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_prompt(name): the prompt text in force; agent_prompt(name, text) sets
// it; agent_prompt(name, NULL) restores the default.
// agent_explain(run_id): 2 to 4 sentences about the run's result, from the
// model (explain_model); recorded in agent_runs.explanation.
void AgentExplainFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_index([database]): reads every text value of the connection's
// databases (or one) into the value index now, like ANALYZE; resumable and
// interruptible. Returns JSON: per database, state, tables, values, ms.
void AgentIndexFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
void AgentPromptFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;
// agent_describe(target [, text]): reads, sets or (text NULL) removes the
// description of a table or column.
void AgentDescribeFunc(sqlite3_context* ctx, int argc, sqlite3_value** argv) noexcept;

}  // namespace querypilot::ext
