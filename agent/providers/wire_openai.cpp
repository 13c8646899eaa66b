#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/base/text.h"
#include "agent/providers/wire.h"
#include "agent/providers/wire_detail.h"

namespace querypilot {

using nlohmann::json;

std::string OpenAIRequestBody(const ChatRequest& request) {
  json messages = json::array();
  for (const auto& m : request.messages) {
    messages.push_back({{"role", ChatRoleName(m.role)}, {"content", m.content}});
  }
  json body = {{"model", request.model},
               {"messages", std::move(messages)},
               {"temperature", request.temperature},
               {"max_tokens", request.max_tokens},
               {"stream", false}};
  // Only when more than one is wanted: a server that rejects "n" still
  // answers every ordinary request.
  if (request.choices > 1) body["n"] = std::min(request.choices, kMaxChoices);
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> OpenAIHeaders(std::string_view api_key) {
  std::vector<std::string> h = {"Content-Type: application/json", "Accept: application/json"};
  if (!api_key.empty()) h.push_back("Authorization: Bearer " + std::string(api_key));
  return h;
}

namespace {

// The text of one choice, or why it has none.
Result<std::string> ChoiceText(const json& choice, std::string_view body) {
  if (!choice.is_object()) return wire_detail::BadReply("no choices", body);
  auto msg = choice.find("message");
  if (msg == choice.end() || !msg->is_object()) return wire_detail::BadReply("no message", body);
  std::string text;
  auto content = msg->find("content");
  if (content != msg->end() && content->is_string()) {
    text = content->get<std::string>();
  } else if (content != msg->end() && content->is_array()) {
    // Some servers send content parts: [{"type":"text","text":"..."}].
    for (const auto& part : *content) {
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
          part["text"].is_string()) {
        text += part["text"].get<std::string>();
      }
    }
  }
  if (text.empty()) {
    if (auto refusal = msg->find("refusal"); refusal != msg->end() && refusal->is_string()) {
      return Status(ErrorKind::kProviderBadResponse,
                    "the model declined to answer: " + refusal->get<std::string>());
    }
    std::string finish = choice.value("finish_reason", json()).is_string()
                             ? choice["finish_reason"].get<std::string>()
                             : "";
    return wire_detail::BadReply(
        finish == "length" ? "empty content: the completion hit max_tokens" : "empty content",
        body);
  }
  return text;
}

}  // namespace

Result<ChatReply> ParseOpenAIReply(long http_status, std::string_view body) {
  if (http_status < 200 || http_status >= 300) return wire_detail::HttpError(http_status, body);
  if (!text::IsValidUtf8(body)) return wire_detail::BadReply("not valid UTF-8", body);
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return wire_detail::BadReply("not a JSON object", body);
  if (auto err = j.find("error"); err != j.end() && !err->is_null()) {
    return Status(ErrorKind::kProviderBadResponse,
                  "the provider returned an error: " +
                      text::ToValidUtf8(wire_detail::ErrorMessageFromBody(body)));
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return wire_detail::BadReply("no choices", body);
  }
  // Choices in the order of their "index" (a server may send them in any).
  std::vector<const json*> ordered;
  for (const json& c : *choices) ordered.push_back(&c);
  auto index_of = [](const json* c) {
    return c->is_object() && c->value("index", json()).is_number_integer()
               ? c->value("index", json()).get<int64_t>()
               : int64_t{0};
  };
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const json* a, const json* b) { return index_of(a) < index_of(b); });
  ChatReply reply;
  for (size_t i = 0; i < ordered.size(); ++i) {
    Result<std::string> text = ChoiceText(*ordered[i], body);
    if (i == 0 && !text.ok()) return text.status();
    // Another choice that holds no text is one fewer choice, not an error.
    if (i == 0) {
      reply.text = std::move(text).value();
    } else if (text.ok()) {
      reply.more.push_back(std::move(text).value());
    }
  }
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
    if (auto p = usage->find("prompt_tokens"); p != usage->end() && p->is_number_integer()) {
      reply.prompt_tokens = p->get<int64_t>();
    }
    if (auto c = usage->find("completion_tokens"); c != usage->end() && c->is_number_integer()) {
      reply.completion_tokens = c->get<int64_t>();
    }
  }
  return reply;
}

}  // namespace querypilot
