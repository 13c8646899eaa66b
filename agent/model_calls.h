// ModelCalls: the one place a run, an explanation or a chart calls a model.
//
// Each step that calls a model is one row of ModelStepRows(): which setting
// names its model (else the run's own), at what temperature and within how
// many tokens it answers. ModelCalls::Request builds a step's request from
// its row and the settings; ModelCalls::Call ends the reads made before a
// model call (PreModelReads: the host's files stay unlocked while the model
// answers), makes the call and adds what it cost (calls, time, tokens) to a
// CallCost. The callers (the agent's generations, corrections and pick, the
// explanation, the chart) build only the messages and record the cost where
// they keep it; nothing here calls back up into them.
//
// A run paused for its model (ask_start) builds its request here and has it
// answered on a worker thread (agent/answers/async_runs.h); the reply's cost is
// added as any other.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/providers/llm.h"

namespace querypilot {

struct AgentContext;
struct Config;

// The steps that call a model.
enum class ModelStep {
  kFirst,        // a run's first generation (with `samples` choices)
  kCorrection,   // a correction turn (attempts after the first)
  kSelection,    // candidate_select's pick among disagreeing answers
  kExplanation,  // agent_explain
  kChart,        // agent_chart's proposal with chart_model
  kReview,       // the review of an answer that ran (`review`)
};

// How a step's calls are made.
struct ModelStepRow {
  ModelStep step;
  std::string_view name;  // as agent_attempts and the docs say it
  // The setting naming the step's model ("" there: the run's model); null:
  // always the run's model.
  std::string Config::*model;
  bool set_temperature;  // the temperature setting; false: 0, a pick is no place for variety
  int max_tokens_cap;    // at most this many of max_tokens; 0: max_tokens
  bool samples;          // asks for `samples` independent choices
  // The prompt text (agent/prompt/prompts.h) that is the system message of a step
  // asked in one message (Ask); "" for the steps of a run's conversation.
  std::string_view system_prompt;
};

// Every step, one row each, in ModelStep's order.
std::span<const ModelStepRow> ModelStepRows();
const ModelStepRow& ModelStepRowOf(ModelStep step);
std::string_view ModelStepName(ModelStep step);

// What one or more model calls cost, as agent_runs and agent_attempts count
// it. Tokens are -1 while no call has said.
struct CallCost {
  int calls = 0;
  double ms = 0;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;

  // A reply's calls, time and tokens.
  void Add(const ChatReply& reply);
  // A call that failed: counted, with no time or tokens.
  void AddFailed() { ++calls; }
  // Another cost's.
  void Add(const CallCost& other);
};

// The model calls of one context: its client, settings, run model and the
// reads to end before a call. Holds a reference to `ctx`, which must outlive
// it.
class ModelCalls {
 public:
  explicit ModelCalls(const AgentContext& ctx) : ctx_(ctx) {}
  ModelCalls(const ModelCalls&) = delete;
  ModelCalls& operator=(const ModelCalls&) = delete;

  // Whether a model can be called here; when not, why (the provider's
  // resolution error).
  bool available() const;
  Status unavailable() const;

  // The request `step` makes with `messages`: its row's model, temperature,
  // tokens and choices under the context's settings.
  ChatRequest Request(ModelStep step, std::vector<ChatMessage> messages) const;

  // Ends the reads before a model call, makes the call and adds its cost to
  // `*cost` (a failed call counts as one). The provider's error when it
  // fails; the caller decides what a failure means for its step.
  Result<ChatReply> Call(const ChatRequest& request, CallCost* cost) const;

  // A step asked in one message: its row's system prompt text (the user's
  // own where they rewrote it) and `user`, called as Call does.
  Result<ChatReply> Ask(ModelStep step, std::string user, CallCost* cost) const;

 private:
  const AgentContext& ctx_;
};

}  // namespace querypilot
