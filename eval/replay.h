// The replay model: an OpenAI-compatible chat-completions server on
// 127.0.0.1 that answers with the SQL a published system produced.
//
// It lets the evaluation run the real extension and its real provider code
// end to end with no model at hand. For the question being asked, the first
// generation is answered with the prediction's `pred_sql`; every correction
// turn (a request that already holds an assistant message) with its
// `repaired_sql`, the system's own second answer (or `pred_sql` again when the
// file has none, which QueryPilot's repeat guard then stops). A request that
// does not carry the expected question is answered with HTTP 400, and counted,
// so a broken prompt cannot be scored as an answer. With alternatives (other
// systems' SQL for the question), the first reply holds them as further
// ```sql blocks, after pred_sql. A recording's prediction (replies) is
// answered with its texts as a model wrote them: a first prompt with the
// first reply, a request for n choices with the first n replies; a correction
// with the first reply again (a recording holds no corrections, so the
// repeat guard ends the run with the answer it has). Usage figures in its
// replies are estimates (characters / 4) and are reported as such.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/base/status.h"
#include "eval/dataset.h"

namespace httplib {
class Server;
}

namespace querypilot::eval {

class ReplayServer {
 public:
  ReplayServer();
  ~ReplayServer();  // stops the server
  ReplayServer(const ReplayServer&) = delete;
  ReplayServer& operator=(const ReplayServer&) = delete;

  // Binds a free port on 127.0.0.1 and serves on a background thread.
  Status Start();
  // "http://127.0.0.1:<port>/v1"
  std::string base_url() const;

  // Sets the question the next requests must be for, and its prediction.
  void Expect(const std::string& question, const Prediction& prediction);

  struct Observed {
    int requests = 0;
    size_t first_prompt_chars = 0;  // system + messages of the first request
    std::string first_user_text;    // the user messages of the first request
    int mismatches = 0;             // requests without the expected question
    // The first prompt's rules (its system text before the schema) differ
    // from those of the prompt the recorded replies answered.
    bool rules_differ = false;
  };
  // What was seen since the last Expect().
  Observed observed() const;

 private:
  void Handle(const std::string& body, int& status, std::string& reply);

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::string question_;
  Prediction prediction_;
  Observed observed_;
};

}  // namespace querypilot::eval
