#include "eval/replay.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/base/text.h"
#include "agent/prompt/prompts.h"

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

// A request of the review's family: a review (its system message is the
// review prompt's), or the correction a review sent back (its last user
// message holds the "review.correction" text). Told by the prompts' own
// rows, so a change of their text changes this with them.
bool IsReviewRequest(std::string_view system_text, std::string_view last_user,
                     int assistant_turns) {
  static const PromptOverrides kDefaults;
  const std::string_view review = PromptTextFor(kDefaults, "review");
  const std::string_view correction = PromptTextFor(kDefaults, "review.correction");
  if (!review.empty() && system_text.substr(0, review.size()) == review) return true;
  return assistant_turns > 0 && !correction.empty() &&
         last_user.find(correction) != std::string_view::npos;
}

}  // namespace

std::string RenderRequest(const json& body) {
  // model_bridge.py's render(): an Anthropic "system" member first, then
  // each message; content given as blocks is their texts, one per line.
  auto text_of = [](const json& c) -> std::string {
    if (c.is_string()) return c.get<std::string>();
    if (c.is_array()) {
      std::string out;
      bool first = true;
      for (const json& b : c) {
        if (!b.is_object()) continue;
        if (!first) out += "\n";
        first = false;
        out += b.value("text", "");
      }
      return out;
    }
    return c.is_null() ? "None" : c.dump();
  };
  std::vector<std::string> parts;
  if (body.contains("system")) {
    std::string system = text_of(body["system"]);
    if (!system.empty()) parts.push_back("=== system ===\n" + system);
  }
  if (body.contains("messages") && body["messages"].is_array()) {
    for (const json& m : body["messages"]) {
      if (!m.is_object()) continue;
      const std::string role =
          m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "user";
      parts.push_back("=== " + role + " ===\n" +
                      text_of(m.contains("content") ? m["content"] : json()));
    }
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "\n\n" : "") + parts[i];
  return out + "\n";
}

Status ReviewReplies::Load(const std::string& path, size_t reply) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(fmt::format("cannot open the review recording {}", path));
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    return Status::InvalidArgument(
        fmt::format("{} is not a review recording (a JSON array of {{request, replies}})", path));
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    if (!e.is_object() || !e.contains("request") || !e["request"].is_string() ||
        !e.contains("replies") || !e["replies"].is_array() || e["replies"].empty()) {
      return Status::InvalidArgument(fmt::format(
          "{}: entry {} needs \"request\" (text) and \"replies\" (a non-empty list)", path, i + 1));
    }
    const json& replies = e["replies"];
    const json& chosen = replies[std::min(reply, replies.size() - 1)];
    if (!chosen.is_string()) {
      return Status::InvalidArgument(fmt::format("{}: entry {}: a reply is not text", path, i + 1));
    }
    replies_[e["request"].get<std::string>()] = chosen.get<std::string>();
  }
  return Status::Ok();
}

Status ReviewReplies::SetDumpFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return Status::InvalidArgument(fmt::format("cannot create the dump folder {}", dir));
  }
  std::lock_guard<std::mutex> lock(mu_);
  dump_dir_ = dir;
  constexpr std::string_view kSuffix = ".request.txt";
  for (const fs::directory_entry& f : fs::directory_iterator(dir)) {
    const std::string name = f.path().filename().string();
    if (name.size() <= kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix)
      continue;
    const std::string stem = name.substr(0, name.size() - kSuffix.size());
    if (stem.empty() || !std::all_of(stem.begin(), stem.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      continue;
    const int number = std::atoi(stem.c_str());
    std::ifstream in(f.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    in_dump_.emplace(text.str(), number);
    next_number_ = std::max(next_number_, number + 1);
  }
  return Status::Ok();
}

const std::string* ReviewReplies::Find(const std::string& request) const {
  auto it = replies_.find(request);
  if (it == replies_.end()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  ++served_;
  return &it->second;
}

void ReviewReplies::Missing(const std::string& request) {
  std::lock_guard<std::mutex> lock(mu_);
  missing_seen_[request] = true;
  if (dump_dir_.empty() || in_dump_.count(request)) return;
  in_dump_.emplace(request, 0);
  pending_.push_back(request);
}

Status ReviewReplies::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const std::string& a, const std::string& b) { return Crc32(a) < Crc32(b); });
  for (const std::string& request : pending_) {
    const int number = next_number_++;
    in_dump_[request] = number;
    const std::string stem =
        (std::filesystem::path(dump_dir_) / fmt::format("{:04d}", number)).string();
    // Written whole, then renamed, as model_bridge.py does: a reader never
    // sees half a request.
    {
      std::ofstream out(stem + ".request.tmp", std::ios::binary);
      out << request;
      if (!out) return Status::Internal(fmt::format("cannot write {}.request.tmp", stem));
    }
    std::error_code ec;
    std::filesystem::rename(stem + ".request.tmp", stem + ".request.txt", ec);
    if (ec) return Status::Internal(fmt::format("cannot write {}.request.txt", stem));
    ++dumped_;
  }
  pending_.clear();
  return Status::Ok();
}

size_t ReviewReplies::served() const {
  std::lock_guard<std::mutex> lock(mu_);
  return served_;
}

size_t ReviewReplies::missing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return missing_seen_.size();
}

size_t ReviewReplies::dumped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dumped_;
}

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
  std::string user_text, system_text, last_user;
  for (const auto& m : request["messages"]) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) continue;
    const std::string& content = m["content"].get_ref<const std::string&>();
    chars += content.size();
    std::string role = m.value("role", "");
    if (role == "assistant") ++assistant_turns;
    if (role == "user") {
      user_text += content;
      last_user = content;
    }
    if (role == "system") system_text += content;
  }
  const int choices = std::clamp(request.value("n", 1), 1, 16);
  std::string sql;
  std::vector<std::string> alternatives;
  std::vector<std::string> samples;  // further choices, with n
  std::vector<std::string> texts;    // the reply's choices
  const bool review = IsReviewRequest(system_text, last_user, assistant_turns);
  const std::string rendered = review ? RenderRequest(request) : std::string();
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
    if (review) {
      ++observed_.review_requests;
      const std::string* recorded = review_replies_ ? review_replies_->Find(rendered) : nullptr;
      if (!recorded) {
        ++observed_.review_missing;
        if (review_replies_) review_replies_->Missing(rendered);
        return error(400, "replay: no recorded reply to this review request");
      }
      texts.push_back(*recorded);
    } else if (!prediction_.replies.empty()) {
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
      if (assistant_turns == 0) samples = prediction_.samples;
    }
  }
  if (texts.empty()) {
    std::string content = fmt::format("```sql\n{}\n```", sql);
    for (const std::string& alt : alternatives) content += fmt::format("\n```sql\n{}\n```", alt);
    texts.push_back(std::move(content));
    // Independent samples: the n choices of one request, the prediction's
    // first; fewer when there are fewer samples (the provider asks again
    // for the rest, and those get the prediction's reply).
    for (size_t i = 0; i < samples.size() && texts.size() < static_cast<size_t>(choices); ++i)
      texts.push_back(fmt::format("```sql\n{}\n```", samples[i]));
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
