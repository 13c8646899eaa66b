// The virtual-table modules of QueryPilot.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// ask('question'): the answer's rows. See ask_vtab.cpp.
extern sqlite3_module kAskModule;
// agent_runs, agent_attempts and agent_metrics: the history and its sums.
// See history_vtab.cpp.
extern sqlite3_module kRunsModule;
extern sqlite3_module kAttemptsModule;
extern sqlite3_module kMetricsModule;
// agent_prompts: every editable prompt text, in force and default.
extern sqlite3_module kPromptsModule;
extern sqlite3_module kDescriptionsModule;  // agent_descriptions

}  // namespace querypilot::ext
