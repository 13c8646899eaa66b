// The agent's view of a language model: a chat completion.
//
// LlmClient is the seam between the agent and the providers: the agent only
// builds ChatRequests and reads ChatReplies; providers/ turn them into the
// OpenAI or Anthropic wire formats over HTTP.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/enum_names.h"
#include "agent/base/status.h"

namespace querypilot {

enum class ChatRole { kSystem, kUser, kAssistant };

// A role's name as the providers' wire formats write it.
inline constexpr std::array<std::string_view, 3> kChatRoleNames = {"system", "user", "assistant"};
static_assert(kChatRoleNames.size() == static_cast<size_t>(ChatRole::kAssistant) + 1);
constexpr std::string_view ChatRoleName(ChatRole role) {
  return EnumName(kChatRoleNames, role, "assistant");
}

struct ChatMessage {
  ChatRole role;
  std::string content;
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;  // at most one kSystem, first
  double temperature = 0.0;
  int max_tokens = 1024;
  // Independent completions wanted, each written without seeing the others
  // (the `samples` setting). 1 asks for one, as every call but a run's first
  // generation does.
  int choices = 1;
};

struct ChatReply {
  std::string text;  // the first choice
  // The other choices, when the request asked for more than one: at most
  // choices - 1, fewer when a provider or a further call gave fewer.
  std::vector<std::string> more;
  // Tokens of every call made for this reply, every choice included.
  int64_t prompt_tokens = -1;  // -1: the provider did not say
  int64_t completion_tokens = -1;
  int calls = 1;       // model calls made: more than 1 where choices were asked one by one
  int http_tries = 0;  // HTTP requests made, retries included
  double ms = 0;       // wall time of the call, retries included
};

// Adds a call's tokens to a total (-1: not said, on either side).
inline void AddTokens(int64_t* total, int64_t n) {
  if (n >= 0) *total = *total < 0 ? n : *total + n;
}

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  // One chat completion (with request.choices > 1, that many independent
  // choices where the provider gives them). Errors are provider kinds
  // (kProviderAuth, ...) with the provider's own message; never the API key.
  virtual Result<ChatReply> Complete(const ChatRequest& request) = 0;
};

}  // namespace querypilot
