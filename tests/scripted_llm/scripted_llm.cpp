// querypilot-scripted-llm: a scripted language model on loopback.
//
// It speaks the two wire formats QueryPilot uses, OpenAI chat completions
// (POST /v1/chat/completions) and Anthropic Messages (POST /v1/messages), and
// answers from a script instead of a model, so the whole agent loop can be
// tested and demonstrated without a network. It binds 127.0.0.1 only.
//
// Usage:
//   querypilot-scripted-llm [--port N] [--script FILE] [--port-file FILE]
//
// A script is JSON:
//   {"rules": [{"match": "five customers", "replies": [R1, R2, ...]}, ...],
//    "default": R, "require_key": "optional key the requests must carry"}
// A request takes the first rule whose "match" occurs in its user messages
// (in any case when the rule has "ignore_case": true); the rule's n-th
// matching request gets replies[n] (the last one repeats).
// A review of an answer (QueryPilot's `review`, on by default: its system
// message names the field "is_acceptable") takes only rules that say
// "review": true, and other requests take only rules that do not; a review
// no rule matches gets the script's "review_default", or when it has none a
// record that accepts the answer, so a script written for the questions
// alone runs with the review on. An OpenAI request
// for n choices ("n": k) gets the rule's next k replies as its k choices,
// unless the script says "ignore_n": true (as Ollama's endpoint does: one
// choice). Anthropic requests always get one.
// A reply R is a string (the model's text) or an object:
//   {"content": "...", "status": 429, "headers": {"Retry-After": "1"},
//    "error": "message for an error body", "raw_body": "sent as is",
//    "delay_ms": 3000, "hold": true, "usage": false}
// A reply with "hold": true is recorded in the log at once but sent only
// after POST /__release (or after two minutes, so that a test that never
// releases it fails instead of hanging): a test waits for the request in the
// log, does what must happen while the model "thinks", then releases it, and
// no step depends on how fast the machine is.
//
// Control endpoints: POST /__script (load a script, reset counters and log,
// hold replies again), POST /__release (send every held reply, and any later
// one at once, until the next script), GET /__log (every request so far:
// path, query parameters, selected headers, JSON body).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/base/thread_annotations.h"
#include "tests/review_request.h"

using nlohmann::json;

namespace {

struct State {
  std::mutex mu;
  json script = json::object();
  std::vector<size_t> hits;  // per rule
  json log = json::array();
};

State g_state;
httplib::Server* g_server = nullptr;

// Replies with "hold": true wait here until /__release (or the server stops).
struct Gate {
  querypilot::Mutex mu;
  querypilot::CondVar cv;
  bool released GUARDED_BY(mu) = false;
};
Gate g_gate;
// Set by SIGTERM and SIGINT (a lock-free atomic is safe in a signal handler):
// held replies then end, so that stopping never waits on them.
std::atomic<bool> g_stopping{false};
constexpr std::chrono::minutes kLongestHold{2};

void Hold() {
  const auto until = std::chrono::steady_clock::now() + kLongestHold;
  querypilot::MutexLock lock(&g_gate.mu);
  for (auto now = std::chrono::steady_clock::now(); !g_gate.released && !g_stopping && now < until;
       now = std::chrono::steady_clock::now()) {
    // Woken by /__release; waking every 50 ms notices a stop.
    g_gate.cv.WaitUntil(&g_gate.mu, std::min(until, now + std::chrono::milliseconds(50)));
  }
}

void Release(bool released) {
  {
    querypilot::MutexLock lock(&g_gate.mu);
    g_gate.released = released;
  }
  g_gate.cv.SignalAll();
}

void LoadScript(const json& script) {
  Release(false);
  std::lock_guard<std::mutex> lock(g_state.mu);
  g_state.script = script;
  g_state.hits.assign(script.contains("rules") ? script["rules"].size() : 0, 0);
  g_state.log = json::array();
}

std::string UserText(const json& body) {
  std::string text;
  if (!body.contains("messages") || !body["messages"].is_array()) return text;
  for (const auto& m : body["messages"]) {
    if (!m.is_object() || m.value("role", "") != "user") continue;
    if (m.contains("content") && m["content"].is_string())
      text += m["content"].get<std::string>() + "\n";
  }
  return text;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

size_t PromptChars(const json& body) {
  size_t n = 0;
  if (body.contains("system") && body["system"].is_string())
    n += body["system"].get<std::string>().size();
  if (body.contains("messages") && body["messages"].is_array()) {
    for (const auto& m : body["messages"]) {
      if (m.is_object() && m.contains("content") && m["content"].is_string()) {
        n += m["content"].get<std::string>().size();
      }
    }
  }
  return n;
}

// A review request: its system message (OpenAI's first message, Anthropic's
// "system") names the reflection record's field.
bool IsReview(const json& body) {
  std::string system;
  if (body.contains("system") && body["system"].is_string()) system = body["system"];
  const json messages = body.value("messages", json::array());
  if (messages.is_array() && !messages.empty() && messages[0].is_object() &&
      messages[0].value("role", "") == "system" && messages[0].contains("content") &&
      messages[0]["content"].is_string()) {
    system += messages[0]["content"].get<std::string>();
  }
  return querypilot::test_models::IsReviewSystemText(system);
}

// The next reply of the first rule that matches (the caller holds the lock).
json Pick(const httplib::Request& req, const json& body) {
  const json& script = g_state.script;
  if (script.contains("require_key")) {
    std::string want = script["require_key"].get<std::string>();
    std::string got = req.path == "/v1/messages" ? req.get_header_value("x-api-key")
                                                 : req.get_header_value("Authorization");
    if (got != want && got != "Bearer " + want) {
      return {{"status", 401}, {"error", "invalid api key"}};
    }
  }
  std::string text = UserText(body);
  const bool review = IsReview(body);
  if (script.contains("rules")) {
    const json& rules = script["rules"];
    for (size_t i = 0; i < rules.size(); ++i) {
      if (rules[i].value("review", false) != review) continue;
      std::string match = rules[i].value("match", "");
      if (rules[i].value("ignore_case", false)) {
        if (Lower(text).find(Lower(match)) == std::string::npos) continue;
      } else if (text.find(match) == std::string::npos) {
        continue;
      }
      const json& replies = rules[i]["replies"];
      size_t n = g_state.hits[i]++;
      if (replies.empty()) break;
      return replies[std::min(n, replies.size() - 1)];
    }
  }
  if (review) {
    if (script.contains("review_default")) return script["review_default"];
    return std::string(querypilot::test_models::kAcceptingReview);
  }
  if (script.contains("default")) return script["default"];
  return "I do not know how to answer that.";
}

// Picks the replies for a request (one per choice it gets: "n" for OpenAI's
// format unless the script says "ignore_n") and records the request.
std::vector<json> NextReplies(const httplib::Request& req, const json& body) {
  json query = json::object();
  for (const auto& [name, value] : req.params) query[name] = value;
  std::lock_guard<std::mutex> lock(g_state.mu);
  json entry = {{"path", req.path},
                {"query", query},
                {"authorization", req.get_header_value("Authorization")},
                {"x_api_key", req.get_header_value("x-api-key")},
                {"anthropic_version", req.get_header_value("anthropic-version")},
                {"body", body}};
  g_state.log.push_back(entry);
  size_t wanted = 1;
  const json n = body.value("n", json(1));
  if (req.path != "/v1/messages" && !g_state.script.value("ignore_n", false) &&
      n.is_number_integer()) {
    wanted = static_cast<size_t>(std::clamp<int64_t>(n.get<int64_t>(), 1, 16));
  }
  std::vector<json> replies;
  for (size_t i = 0; i < wanted; ++i) {
    json r = Pick(req, body);
    if (r.is_string()) r = json{{"content", r}};
    replies.push_back(std::move(r));
  }
  return replies;
}

void Respond(const httplib::Request& req, httplib::Response& res, bool anthropic) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
    res.status = 400;
    res.set_content(R"({"error":{"message":"request body is not JSON"}})", "application/json");
    return;
  }
  const std::vector<json> replies = NextReplies(req, body);
  // The first choice decides the status, headers and delay of the response.
  json reply = replies.front();
  if (reply.contains("delay_ms")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(reply["delay_ms"].get<int>()));
  }
  if (reply.value("hold", false)) Hold();
  int status = reply.value("status", 200);
  res.status = status;
  if (reply.contains("headers")) {
    for (const auto& [k, v] : reply["headers"].items()) res.set_header(k, v.get<std::string>());
  }
  if (reply.contains("raw_body")) {
    res.set_content(reply["raw_body"].get<std::string>(),
                    reply.value("content_type", std::string("application/json")));
    return;
  }
  if (status != 200) {
    std::string message = reply.value("error", std::string("scripted error"));
    json err = anthropic ? json{{"type", "error"},
                                {"error", {{"type", "api_error"}, {"message", message}}}}
                         : json{{"error", {{"message", message}, {"type", "api_error"}}}};
    res.set_content(err.dump(), "application/json");
    return;
  }
  std::string content = reply.value("content", std::string());
  long prompt_tokens = static_cast<long>(PromptChars(body) / 4);
  long completion_tokens = 0;
  json choices = json::array();
  for (size_t i = 0; i < replies.size(); ++i) {
    const std::string text = replies[i].value("content", std::string());
    completion_tokens += static_cast<long>(text.size() / 4) + 1;
    choices.push_back({{"index", i},
                       {"message", {{"role", "assistant"}, {"content", text}}},
                       {"finish_reason", "stop"}});
  }
  bool usage = reply.value("usage", true);
  json out;
  std::string model = body.value("model", std::string("scripted"));
  if (anthropic) {
    out = {{"id", "msg_scripted"},
           {"type", "message"},
           {"role", "assistant"},
           {"model", model},
           {"content", json::array({{{"type", "text"}, {"text", content}}})},
           {"stop_reason", "end_turn"}};
    if (usage)
      out["usage"] = {{"input_tokens", prompt_tokens}, {"output_tokens", completion_tokens}};
  } else {
    out = {{"id", "chatcmpl-scripted"},
           {"object", "chat.completion"},
           {"model", model},
           {"choices", std::move(choices)}};
    if (usage) {
      out["usage"] = {{"prompt_tokens", prompt_tokens},
                      {"completion_tokens", completion_tokens},
                      {"total_tokens", prompt_tokens + completion_tokens}};
    }
  }
  res.set_content(out.dump(), "application/json");
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string script_path, port_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      port = std::stoi(argv[++i]);
    } else if (a == "--script" && i + 1 < argc) {
      script_path = argv[++i];
    } else if (a == "--port-file" && i + 1 < argc) {
      port_file = argv[++i];
    } else {
      std::cerr << "usage: querypilot-scripted-llm [--port N] [--script FILE] [--port-file FILE]\n";
      return 2;
    }
  }
  if (!script_path.empty()) {
    std::ifstream in(script_path);
    json script = json::parse(in, nullptr, false);
    if (script.is_discarded()) {
      std::cerr << "querypilot-scripted-llm: " << script_path << " is not valid JSON\n";
      return 2;
    }
    LoadScript(script);
  }

  httplib::Server server;
  server.set_tcp_nodelay(true);
  // Enough workers for many clients with keep-alive connections at once (the
  // concurrency benchmark holds one per thread while replies are delayed).
  server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  g_server = &server;
  auto openai = [](const httplib::Request& req, httplib::Response& res) {
    Respond(req, res, false);
  };
  server.Post("/v1/chat/completions", openai);
  server.Post("/chat/completions", openai);
  // Under any base path, as Azure OpenAI's deployments serve it
  // (/openai/deployments/<name>/chat/completions?api-version=...).
  server.Post(R"(/.+/chat/completions)", openai);
  server.Post("/v1/messages",
              [](const httplib::Request& req, httplib::Response& res) { Respond(req, res, true); });
  server.Post("/__script", [](const httplib::Request& req, httplib::Response& res) {
    json script = json::parse(req.body, nullptr, false);
    if (script.is_discarded() || !script.is_object()) {
      res.status = 400;
      res.set_content("script is not a JSON object", "text/plain");
      return;
    }
    LoadScript(script);
    res.set_content("ok", "text/plain");
  });
  server.Post("/__release", [](const httplib::Request&, httplib::Response& res) {
    Release(true);
    res.set_content("ok", "text/plain");
  });
  server.Get("/__log", [](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(g_state.mu);
    res.set_content(g_state.log.dump(), "application/json");
  });

  int bound = port ? (server.bind_to_port("127.0.0.1", port) ? port : -1)
                   : server.bind_to_any_port("127.0.0.1");
  if (bound <= 0) {
    std::cerr << "querypilot-scripted-llm: cannot bind 127.0.0.1:" << port << "\n";
    return 1;
  }
  if (!port_file.empty()) {
    std::ofstream(port_file) << bound << "\n";
  }
  std::cout << "scripted LLM listening on 127.0.0.1:" << bound << std::endl;
  std::signal(SIGTERM, [](int) {
    g_stopping = true;
    if (g_server) g_server->stop();
  });
  std::signal(SIGINT, [](int) {
    g_stopping = true;
    if (g_server) g_server->stop();
  });
  server.listen_after_bind();
  return 0;
}
