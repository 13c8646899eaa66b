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
//
// Review requests (the `review` setting: a request whose system message is
// the review prompt), the correction a review sends back and the review of
// that correction are answered from a recording of review replies
// (ReviewReplies, --review-recording), looked up by the request's exact text
// as shared/tools/model_bridge.py renders it. A request with no recorded
// reply is written to the dump folder (--dump-missing) in that same form and
// answered at once with HTTP 400, so the ask goes on as if unreviewed.
// With samples (--samples), a first prompt asking for n choices gets the
// prediction's reply first and the samples' SQL as the further choices.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/base/status.h"
#include "eval/dataset.h"

namespace httplib {
class Server;
}

namespace querypilot::eval {

// A chat-completions request body as shared/tools/model_bridge.py writes it
// to NNNN.request.txt: "=== role ===\ncontent" per message, joined by blank
// lines, ending with a newline. The key of a recorded review reply.
std::string RenderRequest(const nlohmann::json& body);

// Recorded replies to review requests (and to the corrections they send
// back), keyed by the request's rendered text, with the folder a request
// that has none is dumped to. Shared by every run of an evaluation;
// thread-safe.
class ReviewReplies {
 public:
  ReviewReplies() = default;
  ReviewReplies(const ReviewReplies&) = delete;
  ReviewReplies& operator=(const ReviewReplies&) = delete;

  // Reads `path` (a JSON array of {"request": text, "replies": [text, ...]},
  // as eval/merge_review_replies.py writes it; other members are ignored).
  // `reply` (0-based) is which reply of each entry answers; an entry with
  // fewer replies answers with its last. Fails, naming the entry, on a
  // malformed one; a missing file is an error too.
  Status Load(const std::string& path, size_t reply);

  // Requests without a recorded reply are written to `dir` (created) as
  // NNNN.request.txt by Flush(), numbered after the highest number already
  // there; a request already in `dir` is not written again.
  Status SetDumpFolder(const std::string& dir);

  // The recorded reply to `request`, or nullptr.
  const std::string* Find(const std::string& request) const;

  // Counts `request` as missing, and keeps it for Flush() unless the dump
  // folder holds it already.
  void Missing(const std::string& request);

  // Writes the requests kept since the last Flush() to the dump folder, in
  // the order of the CRC-32 of their text (not the order asked, so a range
  // of numbers never holds one kind of answer, the right ones, say);
  // nothing without a dump folder. Fails when a file cannot be written.
  Status Flush();

  size_t entries() const { return replies_.size(); }
  size_t served() const;
  size_t missing() const;  // requests without a reply, counted once each
  size_t dumped() const;   // of those, newly written to the dump folder
  std::string dump_folder() const { return dump_dir_; }

 private:
  std::map<std::string, std::string> replies_;
  std::string dump_dir_;
  mutable std::mutex mu_;
  std::map<std::string, int> in_dump_;  // request text -> its number in the folder (0: pending)
  std::vector<std::string> pending_;
  std::map<std::string, bool> missing_seen_;
  int next_number_ = 1;
  mutable size_t served_ = 0;
  size_t dumped_ = 0;
};

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

  // Review requests are answered from `replies` (not owned; it outlives the
  // server); without it they get HTTP 400.
  void SetReviewReplies(ReviewReplies* replies) { review_replies_ = replies; }

  struct Observed {
    int requests = 0;
    size_t first_prompt_chars = 0;  // system + messages of the first request
    std::string first_user_text;    // the user messages of the first request
    int mismatches = 0;             // requests without the expected question
    // The first prompt's rules (its system text before the schema) differ
    // from those of the prompt the recorded replies answered.
    bool rules_differ = false;
    int review_requests = 0;  // reviews, and corrections a review sent back
    int review_missing = 0;   // ... with no recorded reply
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
  ReviewReplies* review_replies_ = nullptr;
};

}  // namespace querypilot::eval
