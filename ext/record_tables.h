// The record tables: what QueryPilot did and knows, as read-only eponymous
// tables. See record_tables.cpp.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// agent_runs, agent_attempts and agent_metrics: the history and its sums.
extern sqlite3_module kRunsModule;
extern sqlite3_module kAttemptsModule;
extern sqlite3_module kMetricsModule;
// agent_prompts: every editable prompt text, in force and default.
extern sqlite3_module kPromptsModule;
// agent_descriptions: the user's descriptions of tables and columns.
extern sqlite3_module kDescriptionsModule;

}  // namespace querypilot::ext
