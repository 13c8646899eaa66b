// Wire formats of the two provider families, as pure functions.
//
// OpenAI-compatible chat completions (OpenAI, Ollama, llama.cpp's server,
// vLLM, LM Studio) and Anthropic Messages. Each has a request builder and a
// reply parser; neither touches the network, so both are tested on canned
// bodies. Parsers never let a JSON exception escape and never echo the API key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/providers/llm.h"

namespace querypilot {

// The most choices one request asks for.
constexpr int kMaxChoices = 16;

// --- OpenAI-compatible /chat/completions ------------------------------------
// With request.choices > 1, asks for them with "n" (some servers, Ollama's
// among them, ignore it and send one).
std::string OpenAIRequestBody(const ChatRequest& request);
// Headers besides Content-Type; no Authorization when `api_key` is empty.
std::vector<std::string> OpenAIHeaders(std::string_view api_key);
// A reply body with its HTTP status: the first choice (by "index") as its
// text, every other choice with text in `more`. Non-2xx statuses, an "error"
// object in a 200 reply, a first choice without text, missing choices and
// non-JSON bodies are provider errors.
Result<ChatReply> ParseOpenAIReply(long http_status, std::string_view body);

// --- Anthropic /v1/messages ---------------------------------------------------
// One choice: Messages has no "n" (request.choices is not sent).
std::string AnthropicRequestBody(const ChatRequest& request);
std::vector<std::string> AnthropicHeaders(std::string_view api_key);
Result<ChatReply> ParseAnthropicReply(long http_status, std::string_view body);

// The error kind of an HTTP status: 401/403 auth, 429 rate limit, 5xx and 529
// unavailable, other 4xx request.
ErrorKind ProviderErrorKindForStatus(long http_status);

}  // namespace querypilot
