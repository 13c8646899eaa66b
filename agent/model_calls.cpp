#include "agent/model_calls.h"

#include <algorithm>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/prompt/prompts.h"
#include "agent/sql/read_connection.h"

namespace querypilot {
namespace {

constexpr ModelStepRow kModelSteps[] = {
    {ModelStep::kFirst, "first", nullptr, true, 0, true, ""},
    {ModelStep::kCorrection, "correction", &Config::correction_model, true, 0, false, ""},
    {ModelStep::kSelection, "selection", nullptr, false, 16, false, "select"},
    {ModelStep::kExplanation, "explanation", &Config::explain_model, true, 400, false, "explain"},
    {ModelStep::kChart, "chart", &Config::explain_model, true, 0, false, "chart"},
    {ModelStep::kReview, "review", &Config::review_model, false, 600, false, "review"},
};

}  // namespace

std::span<const ModelStepRow> ModelStepRows() {
  return kModelSteps;
}

const ModelStepRow& ModelStepRowOf(ModelStep step) {
  for (const ModelStepRow& row : kModelSteps) {
    if (row.step == step) return row;
  }
  return kModelSteps[0];
}

std::string_view ModelStepName(ModelStep step) {
  return ModelStepRowOf(step).name;
}

void CallCost::Add(const ChatReply& reply) {
  calls += reply.calls;
  ms += reply.ms;
  AddTokens(&prompt_tokens, reply.prompt_tokens);
  AddTokens(&completion_tokens, reply.completion_tokens);
}

void CallCost::Add(const CallCost& other) {
  calls += other.calls;
  ms += other.ms;
  AddTokens(&prompt_tokens, other.prompt_tokens);
  AddTokens(&completion_tokens, other.completion_tokens);
}

bool ModelCalls::available() const {
  return ctx_.llm != nullptr;
}

Status ModelCalls::unavailable() const {
  return ctx_.llm ? Status::Ok() : ctx_.llm_status;
}

ChatRequest ModelCalls::Request(ModelStep step, std::vector<ChatMessage> messages) const {
  const ModelStepRow& row = ModelStepRowOf(step);
  const Config& config = *ctx_.config;
  ChatRequest req;
  req.model = row.model && !(config.*row.model).empty() ? config.*row.model : ctx_.model;
  req.messages = std::move(messages);
  req.temperature = row.set_temperature ? config.temperature : 0.0;
  req.max_tokens =
      row.max_tokens_cap > 0 ? std::min(config.max_tokens, row.max_tokens_cap) : config.max_tokens;
  req.choices = row.samples ? config.samples : 1;
  return req;
}

Result<ChatReply> ModelCalls::Call(const ChatRequest& request, CallCost* cost) const {
  if (!ctx_.llm) {
    return ctx_.llm_status.ok() ? Status(ErrorKind::kInternal, "no model to call here")
                                : ctx_.llm_status;
  }
  // The host's files stay unlocked while the model answers.
  if (ctx_.pre_model_reads) ctx_.pre_model_reads->End();
  Result<ChatReply> reply = ctx_.llm->Complete(request);
  if (reply.ok()) {
    cost->Add(*reply);
  } else {
    cost->AddFailed();
  }
  return reply;
}

Result<ChatReply> ModelCalls::Ask(ModelStep step, std::string user, CallCost* cost) const {
  const ModelStepRow& row = ModelStepRowOf(step);
  std::vector<ChatMessage> messages;
  if (!row.system_prompt.empty()) {
    messages.push_back(
        {ChatRole::kSystem, std::string(PromptTextFor(ctx_.config->prompts, row.system_prompt))});
  }
  messages.push_back({ChatRole::kUser, std::move(user)});
  return Call(Request(step, std::move(messages)), cost);
}

}  // namespace querypilot
