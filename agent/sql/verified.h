// RunVerified: the one recipe by which QueryPilot runs SQL on the host's
// connection. The critic checks it (CheckSql: prepared under the read-only
// authorizer, sqlite3_stmt_readonly, exactly one statement), and only a
// statement that passes starts, under the executor's limits (LiveQuery).
// Every place that runs SQL (the agent's attempts and cached answers,
// answer tables, ask()'s re-runs, explanations, QueryPilot's own lookups)
// goes through here; tests/architecture/check_layers.py keeps it so.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"

struct sqlite3;

namespace querypilot {

// Where a RunVerified() failure happened.
enum class VerifiedStage {
  kCheck,  // the critic refused it, or it did not prepare: nothing ran
  kRun,    // it started and failed (a timeout, an error while stepping)
};

// Checks `sql` and starts it under `limits`, with `params` bound as text to
// ?1, ?2, ... Returns the running query (its first rows read), or why not;
// `*stage`, when given, says which step failed. Never runs a statement the
// critic did not pass. `target` names the connection and how it is checked
// (agent/sql/check_connection.h).
Result<std::unique_ptr<LiveQuery>> RunVerified(const SqlTarget& target, std::string_view sql,
                                               const ExecutionLimits& limits,
                                               const std::vector<std::string>& params = {},
                                               VerifiedStage* stage = nullptr);

// RunVerified for SQL that ran before (a run's answer, run again): its error
// starts with `refused` when the SQL no longer passes the checks or prepares,
// with `failed` when it started and failed.
Result<std::unique_ptr<LiveQuery>> RunAgainVerified(
    const SqlTarget& target, std::string_view sql, const ExecutionLimits& limits,
    std::string_view refused = "the run's SQL no longer runs: ",
    std::string_view failed = "the run's SQL failed: ");

}  // namespace querypilot
