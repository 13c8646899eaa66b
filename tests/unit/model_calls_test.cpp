// ModelCalls: each step's request from its row and the settings, and what a
// call costs.
#include "agent/model_calls.h"

#include <gtest/gtest.h>

#include "agent/agent.h"
#include "agent/config.h"

namespace querypilot {
namespace {

class CountingClient final : public LlmClient {
 public:
  Result<ChatReply> Complete(const ChatRequest& request) override {
    seen.push_back(request);
    if (fail) return Status(ErrorKind::kProviderUnavailable, "down");
    ChatReply r;
    r.text = "ok";
    r.calls = 2;
    r.ms = 5;
    r.prompt_tokens = 10;
    r.completion_tokens = -1;
    return r;
  }
  std::vector<ChatRequest> seen;
  bool fail = false;
};

TEST(ModelCallsTest, EachStepTakesItsModelTemperatureAndTokensFromItsRow) {
  Config config;
  config.temperature = 0.7;
  config.max_tokens = 2000;
  config.samples = 3;
  config.correction_model = "strong";
  config.explain_model = "small";
  config.review_model = "reviewer";
  AgentContext ctx;
  ctx.config = &config;
  ctx.model = "run-model";
  ModelCalls calls(ctx);
  struct Case {
    ModelStep step;
    const char* model;
    double temperature;
    int max_tokens;
    int choices;
  } cases[] = {
      {ModelStep::kFirst, "run-model", 0.7, 2000, 3},
      {ModelStep::kCorrection, "strong", 0.7, 2000, 1},
      {ModelStep::kSelection, "run-model", 0.0, 16, 1},
      {ModelStep::kExplanation, "small", 0.7, 400, 1},
      {ModelStep::kChart, "small", 0.7, 2000, 1},
      {ModelStep::kReview, "reviewer", 0.0, 600, 1},
  };
  for (const Case& c : cases) {
    ChatRequest req = calls.Request(c.step, {{ChatRole::kUser, "q"}});
    EXPECT_EQ(req.model, c.model) << ModelStepName(c.step);
    EXPECT_EQ(req.temperature, c.temperature) << ModelStepName(c.step);
    EXPECT_EQ(req.max_tokens, c.max_tokens) << ModelStepName(c.step);
    EXPECT_EQ(req.choices, c.choices) << ModelStepName(c.step);
    ASSERT_EQ(req.messages.size(), 1u);
  }
  // A step's own model left empty: the run's.
  config.correction_model.clear();
  EXPECT_EQ(calls.Request(ModelStep::kCorrection, {}).model, "run-model");
  // Every step has its row, in order.
  ASSERT_EQ(ModelStepRows().size(), 6u);
  for (size_t i = 0; i < ModelStepRows().size(); ++i)
    EXPECT_EQ(static_cast<size_t>(ModelStepRows()[i].step), i);
}

TEST(ModelCallsTest, ACallsCostIsCountedFailedOrNot) {
  Config config;
  CountingClient client;
  AgentContext ctx;
  ctx.config = &config;
  ctx.llm = &client;
  ModelCalls calls(ctx);
  CallCost cost;
  ASSERT_TRUE(calls.Call(calls.Request(ModelStep::kFirst, {}), &cost).ok());
  EXPECT_EQ(cost.calls, 2);
  EXPECT_EQ(cost.ms, 5);
  EXPECT_EQ(cost.prompt_tokens, 10);
  EXPECT_EQ(cost.completion_tokens, -1);
  client.fail = true;
  EXPECT_FALSE(calls.Call(calls.Request(ModelStep::kFirst, {}), &cost).ok());
  EXPECT_EQ(cost.calls, 3);
  EXPECT_EQ(cost.prompt_tokens, 10);
  // No client: the reason there is none, and no call.
  AgentContext none;
  none.config = &config;
  none.llm_status = Status(ErrorKind::kNotConfigured, "no model is configured");
  ModelCalls unavailable(none);
  EXPECT_FALSE(unavailable.available());
  EXPECT_EQ(unavailable.unavailable().message(), "no model is configured");
  CallCost nothing;
  EXPECT_FALSE(unavailable.Call(unavailable.Request(ModelStep::kFirst, {}), &nothing).ok());
  EXPECT_EQ(nothing.calls, 0);
}

}  // namespace
}  // namespace querypilot
