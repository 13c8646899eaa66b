// Explain: a short plain-language account of a run's result, asked for after
// the rows came back (agent_explain(run_id)), so it never holds them up.
//
// The run's SQL runs again (checked by the critic, under the usual limits);
// its first 20 rows, the question and the SQL go to the model with the
// "explain" prompt text, and the model (explain_model, else the run's model)
// answers in 2 to 4 sentences. The explanation is recorded on the run.
#pragma once

#include <cstdint>
#include <string>

#include "agent/agent.h"

namespace querypilot {

// The explanation, or an error: no such run, a run that has no rows to
// explain, SQL that no longer runs, or the model's failure (the run and its
// rows are untouched by any of these).
Result<std::string> ExplainRun(const AgentContext& ctx, int64_t run_id);

}  // namespace querypilot
