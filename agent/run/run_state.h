// A run's state, for the agent's nodes only: agent/run/agent.cpp (the state
// machine and the nodes from generate on), agent/run/first_prompt.cpp (cache,
// load_schema: what the first prompt shows) and agent/run/finish.cpp (finish:
// the answer returned, the samples' vote, the confidence, the record).
// Nothing else includes it: outside the agent a run's state is opaque
// (Agent::RunState in agent.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/agent.h"
#include "agent/knowledge/linking.h"
#include "agent/memory/examples.h"
#include "agent/model_calls.h"
#include "agent/quality/candidates.h"
#include "agent/quality/readings.h"
#include "agent/quality/review.h"
#include "agent/quality/samples.h"

namespace querypilot {

// What model calls cost, added to the run's counts.
inline void AddCost(RunRecord* run, const CallCost& cost) {
  run->llm_calls += cost.calls;
  run->llm_ms += cost.ms;
  AddTokens(&run->prompt_tokens, cost.prompt_tokens);
  AddTokens(&run->completion_tokens, cost.completion_tokens);
}

// True when `schema` shows the column (or, for an empty `column`, the table):
// the host's rules left it in.
inline bool ShowsColumn(const Schema& schema, std::string_view database, std::string_view table,
                        std::string_view column) {
  const TableInfo* t = schema.FindTable(table, database);
  return t && (column.empty() || t->FindColumn(column));
}

// Milliseconds since `t`.
inline double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

struct Agent::RunState {
  // What agent_runs will show of this run: each node fills in what it learns
  // (the question, model calls and tokens, time per node, examples shown,
  // ...), and Finish adds the outcome.
  RunRecord run;
  std::chrono::steady_clock::time_point started;
  std::shared_ptr<const Schema> schema;
  // `schema` as SchemaCache gave it, before WithAskTablesQualified and the
  // descriptions (`schema_notes`) that make `schema` from it: sample rows read
  // later are added to it, and `schema` is made from it again
  // (Agent::ReadSamples). Null once `schema` is made otherwise
  // (RuleWholeSchema), when it has no samples pending.
  std::shared_ptr<const Schema> ruled_schema;
  std::vector<Description> schema_notes;
  int64_t sample_budget_end_ns = 0;  // the run's sample reads end by then (WithSamples)
  double samples_ms = 0;             // spent reading them (Agent::ReadSamples)
  LinkedSchema linked;               // the part of the schema the prompt shows
  std::vector<ValueHint> hints;      // the stored values the question names, shown with it
  std::vector<Example> examples;     // the verified examples shown with the question
  std::string unreadable_note;       // why a user's table named ask is shown qualified
  // Every table of `schema` was checked under the host's rules at this run,
  // not only those its first prompt shows (SchemaCache).
  bool whole_schema_checked = false;
  std::vector<ChatMessage> messages;  // the conversation with the model
  std::vector<AttemptRecord> attempts;
  // Normalised SQL of every attempt so far that had SQL, with its index in
  // `attempts`.
  std::vector<std::pair<std::string, size_t>> tried;
  // The current attempt.
  std::string reply;
  std::string sql;
  std::unique_ptr<LiveQuery> query;
  Status error;
  std::vector<ReflectionIssue> result_issues;
  Reflection reflection;
  // A result that ran but was sent back for another attempt. The run returns
  // it if no later attempt does better.
  struct Kept {
    std::unique_ptr<LiveQuery> query;
    std::string sql;
    int attempt = 0;
    size_t critical = 0;
    std::vector<std::string> advice;
    std::vector<ReflectionIssue> issues;  // its findings, for its confidence
  };
  std::optional<Kept> kept;
  // The first reply's other queries (the `candidates` setting), until the
  // first reading starts.
  std::vector<std::string> pending;
  // The same, once launched as the first reading starts (readings.h): those
  // that can run beside the host's connection run while it does, until the
  // candidates node waits for them.
  std::vector<OtherReading> others;
  bool others_launched = false;
  std::chrono::steady_clock::time_point others_launched_at{};
  // Each query of the first reply as it ran, the first reading first
  // (agent/quality/candidates.h).
  std::vector<Candidate> candidates;
  // The other replies to the first prompt (the `samples` setting), as
  // written, until RunSamples judges them; then every reply's outcome.
  std::vector<std::string> sample_replies;
  std::vector<SampleOutcome> samples;
  SampleTally sample_tally;
  std::optional<SampleVote> vote;  // with three samples or more, their vote
  // The normalised SQL of the verified examples shown (confidence: an
  // example's SQL reused).
  std::vector<std::string> example_sql;
  // The model's review (the `review` setting): what it said of the answer
  // returned, its reasoning when it did not accept one, how many reviews
  // were made; and the answer it did not accept, held while the one
  // correction it asked for runs, and returned unless a review accepts that
  // correction.
  ReviewOutcome review = ReviewOutcome::kNotReviewed;
  std::string review_reasoning;
  int reviews = 0;
  struct Reviewed {
    std::unique_ptr<LiveQuery> query;
    std::string sql;
    int attempt = 0;
    std::vector<std::string> advice;
    Reflection reflection;
  };
  std::optional<Reviewed> reviewed;
  History::Standing cached;  // the confidence of the run a cached answer came from
  int stood_by = 0;  // the attempt whose query the model repeated after its result was sent back
  std::shared_ptr<const ValueLookup> values;  // the value index as this run saw it
  std::vector<Example> conversation;          // the session's earlier turns
  // The watchdog stopped a query: the connection stays interrupted until the
  // asking statement ends, so the run can run no more SQL and ends here.
  bool connection_stopped = false;
  // The plan's slow scans for the current attempt's SQL, read before it runs
  // (a query the watchdog stopped leaves no way to ask afterwards).
  std::vector<SlowScan> slow_scans;
  // Each node is timed from the end of the one before (`mark`), so the nodes
  // add up to the run's duration exactly.
  std::chrono::steady_clock::time_point mark;
  // Where Advance goes on from.
  Node node = Node::kCache;
  // A run paused before a generation's model call: the call to make, and
  // once given back, its reply.
  std::optional<ChatRequest> awaited;
  std::optional<Result<ChatReply>> given;

  // Adds to the time of a node, or of a part of one ("load_schema/value_index"),
  // in the order first seen.
  void AddTime(std::string_view name, double ms) {
    for (auto& [n, total] : run.node_times) {
      if (n == name) {
        total += ms;
        return;
      }
    }
    run.node_times.emplace_back(std::string(name), ms);
  }

  AttemptRecord& attempt() { return attempts.back(); }
};

}  // namespace querypilot
