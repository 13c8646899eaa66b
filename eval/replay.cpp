#include "eval/replay.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/base/text.h"

namespace querypilot::eval {
using nlohmann::json;

namespace {

// One thread per accepted connection. httplib's default pool (8 workers)
// keeps a worker on each kept-alive connection until it idles out (5 s):
// the runner keeps one connection per database open, so from the ninth
// database on each new connection waited for a worker. A thread that ends
// is joined at the next connection; shutdown() joins the rest.
class ThreadPerConnection : public httplib::TaskQueue {
 public:
  ~ThreadPerConnection() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    JoinFinished();
    auto done = std::make_shared<std::atomic<bool>>(false);
    threads_.push_back({std::thread([fn = std::move(fn), done] {
                          fn();
                          done->store(true);
                        }),
                        done});
  }

  void shutdown() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (Worker& w : threads_) {
      if (w.thread.joinable()) w.thread.join();
    }
    threads_.clear();
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void JoinFinished() {
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (!it->done->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = threads_.erase(it);
    }
  }
  std::mutex mu_;
  std::list<Worker> threads_;
};

// A first prompt's rules: its system text up to the schema.
std::string RulesOf(std::string_view system) {
  const size_t schema = system.find("Database schema:");
  return std::string(text::Trim(system.substr(0, schema)));
}

// The same of a request as model_bridge.py writes it ("=== system ===" ...).
std::string RecordedRules(std::string_view request) {
  constexpr std::string_view kSystem = "=== system ===\n";
  const size_t start = request.find(kSystem);
  if (start == std::string_view::npos) return "";
  return RulesOf(request.substr(start + kSystem.size()));
}

}  // namespace

ReplayServer::ReplayServer() : server_(std::make_unique<httplib::Server>()) {}

ReplayServer::~ReplayServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

Status ReplayServer::Start() {
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    int status = 200;
    std::string reply;
    Handle(req.body, status, reply);
    res.status = status;
    res.set_content(reply, "application/json");
  };
  server_->Post("/v1/chat/completions", handler);
  server_->Post("/chat/completions", handler);
  server_->set_tcp_nodelay(true);
  // Every connection is served at once, and kept for as many requests as
  // its client sends (httplib closes one after 5 by default).
  server_->new_task_queue = [] { return new ThreadPerConnection(); };
  server_->set_keep_alive_max_count(1000000);
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) return Status::Internal("the replay model could not bind a port on 127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // Serving before Start() returns: httplib's stop() does nothing to a server
  // that is not listening yet, so a run ending at once (a bad option) would
  // leave the destructor joining a thread that accepts forever.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Internal("the replay model on 127.0.0.1 did not start serving within 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::Ok();
}

std::string ReplayServer::base_url() const {
  return fmt::format("http://127.0.0.1:{}/v1", port_);
}

void ReplayServer::Expect(const std::string& question, const Prediction& prediction) {
  std::lock_guard<std::mutex> lock(mu_);
  question_ = question;
  prediction_ = prediction;
  observed_ = Observed{};
}

ReplayServer::Observed ReplayServer::observed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_;
}

void ReplayServer::Handle(const std::string& body, int& status, std::string& reply) {
  json request = json::parse(body, nullptr, false);
  auto error = [&](int code, const std::string& message) {
    status = code;
    reply = json{{"error", {{"message", message}, {"type", "replay_error"}}}}.dump();
  };
  if (request.is_discarded() || !request.contains("messages") || !request["messages"].is_array()) {
    return error(400, "replay: the request is not a chat-completions request");
  }
  size_t chars = 0;
  int assistant_turns = 0;
  std::string user_text, system_text;
  for (const auto& m : request["messages"]) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) continue;
    const std::string& content = m["content"].get_ref<const std::string&>();
    chars += content.size();
    std::string role = m.value("role", "");
    if (role == "assistant") ++assistant_turns;
    if (role == "user") user_text += content;
    if (role == "system") system_text += content;
  }
  const int choices = std::clamp(request.value("n", 1), 1, 16);
  std::string sql;
  std::vector<std::string> alternatives;
  std::vector<std::string> texts;  // the reply's choices
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++observed_.requests;
    if (observed_.requests == 1) {
      observed_.first_prompt_chars = chars;
      observed_.first_user_text = user_text;
    }
    if (question_.empty() || user_text.find(question_) == std::string::npos) {
      ++observed_.mismatches;
      return error(400, "replay: the request does not carry the question being evaluated");
    }
    if (!prediction_.replies.empty()) {
      const size_t k = assistant_turns == 0 ? static_cast<size_t>(choices) : 1;
      for (size_t i = 0; i < k; ++i)
        texts.push_back(prediction_.replies[i % prediction_.replies.size()]);
      if (observed_.requests == 1 && !prediction_.recorded_request.empty()) {
        observed_.rules_differ =
            RulesOf(system_text) != RecordedRules(prediction_.recorded_request);
      }
    } else {
      sql = assistant_turns == 0 || prediction_.repaired_sql.empty() ? prediction_.pred_sql
                                                                     : prediction_.repaired_sql;
      if (assistant_turns == 0) alternatives = prediction_.alternatives;
    }
  }
  if (texts.empty()) {
    std::string content = fmt::format("```sql\n{}\n```", sql);
    for (const std::string& alt : alternatives) content += fmt::format("\n```sql\n{}\n```", alt);
    texts.push_back(std::move(content));
  }
  json choice_list = json::array();
  size_t completion_chars = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    completion_chars += texts[i].size();
    choice_list.push_back({{"index", i},
                           {"message", {{"role", "assistant"}, {"content", texts[i]}}},
                           {"finish_reason", "stop"}});
  }
  json out = {{"id", "replay"},
              {"object", "chat.completion"},
              {"model", request.value("model", "replay")},
              {"choices", choice_list},
              {"usage",
               {{"prompt_tokens", (chars + 3) / 4},
                {"completion_tokens", (completion_chars + 3) / 4},
                {"total_tokens", (chars + 3) / 4 + (completion_chars + 3) / 4}}}};
  reply = out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace querypilot::eval
