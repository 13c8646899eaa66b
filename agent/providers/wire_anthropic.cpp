#include <nlohmann/json.hpp>

#include "agent/base/text.h"
#include "agent/providers/wire.h"
#include "agent/providers/wire_detail.h"

namespace querypilot {

using nlohmann::json;

std::string AnthropicRequestBody(const ChatRequest& request) {
  json messages = json::array();
  std::string system;
  for (const auto& m : request.messages) {
    if (m.role == ChatRole::kSystem) {
      system += m.content;
      continue;
    }
    messages.push_back({{"role", ChatRoleName(m.role)}, {"content", m.content}});
  }
  json body = {{"model", request.model},
               {"max_tokens", request.max_tokens},
               {"temperature", request.temperature},
               {"messages", std::move(messages)}};
  if (!system.empty()) body["system"] = system;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> AnthropicHeaders(std::string_view api_key) {
  std::vector<std::string> h = {"Content-Type: application/json", "Accept: application/json",
                                "anthropic-version: 2023-06-01"};
  if (!api_key.empty()) h.push_back("x-api-key: " + std::string(api_key));
  return h;
}

Result<ChatReply> ParseAnthropicReply(long http_status, std::string_view body) {
  if (http_status < 200 || http_status >= 300) return wire_detail::HttpError(http_status, body);
  if (!text::IsValidUtf8(body)) return wire_detail::BadReply("not valid UTF-8", body);
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return wire_detail::BadReply("not a JSON object", body);
  if (j.value("type", json()).is_string() && j["type"] == "error") {
    return Status(ErrorKind::kProviderBadResponse,
                  "the provider returned an error: " +
                      text::ToValidUtf8(wire_detail::ErrorMessageFromBody(body)));
  }
  auto content = j.find("content");
  if (content == j.end() || !content->is_array()) return wire_detail::BadReply("no content", body);
  ChatReply reply;
  for (const auto& block : *content) {
    if (block.is_object() && block.value("type", json()).is_string() && block["type"] == "text" &&
        block.contains("text") && block["text"].is_string()) {
      reply.text += block["text"].get<std::string>();
    }
  }
  if (reply.text.empty()) {
    bool max_tokens =
        j.value("stop_reason", json()).is_string() && j["stop_reason"] == "max_tokens";
    return wire_detail::BadReply(
        max_tokens ? "no text: the completion hit max_tokens" : "no text content", body);
  }
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
    if (auto p = usage->find("input_tokens"); p != usage->end() && p->is_number_integer()) {
      reply.prompt_tokens = p->get<int64_t>();
    }
    if (auto c = usage->find("output_tokens"); c != usage->end() && c->is_number_integer()) {
      reply.completion_tokens = c->get<int64_t>();
    }
  }
  return reply;
}

}  // namespace querypilot
