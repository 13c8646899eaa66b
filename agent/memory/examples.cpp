#include "agent/memory/examples.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "agent/base/text.h"
#include "agent/memory/answer_cache.h"

namespace querypilot {
namespace {

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  std::string w;
  auto flush = [&] {
    if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
    if (!w.empty() && !text::IsStopWord(w)) out.push_back(w);
    w.clear();
  };
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || (c & 0x80)) {
      w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

}  // namespace

std::vector<Example> TeachingRuns(const std::vector<RunRecord>& history, bool learn_from_success) {
  std::vector<Example> out;
  std::set<std::string> seen;  // one example per question, the latest
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    const RunRecord& r = *it;
    if (r.feedback == "bad" || r.sql.empty() || r.status != RunStatus::kOk) continue;
    const bool first_time = r.answer_attempt == 1 && r.cached_from == 0;
    if (r.feedback != "good" && !(learn_from_success && first_time)) continue;
    if (!seen.insert(NormaliseQuestion(r.question)).second) continue;
    out.push_back({r.id, r.question, r.sql, 0});
  }
  // A question marked bad in any run never teaches, even from another run.
  std::set<std::string> bad;
  for (const RunRecord& r : history) {
    if (r.feedback == "bad") bad.insert(NormaliseQuestion(r.question) + "\n" + r.sql);
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Example& e) {
                             return bad.count(NormaliseQuestion(e.question) + "\n" + e.sql) > 0;
                           }),
            out.end());
  return out;
}

std::vector<Example> SessionTurns(const std::vector<RunRecord>& history, const std::string& session,
                                  size_t k) {
  std::vector<Example> out;
  if (session.empty()) return out;
  for (auto it = history.rbegin(); it != history.rend() && out.size() < k; ++it) {
    if (it->session != session || it->status != RunStatus::kOk || it->sql.empty()) continue;
    out.push_back({it->id, it->standalone.empty() ? it->question : it->standalone, it->sql, 0});
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<Example> PickExamples(std::string_view question, const std::vector<Example>& candidates,
                                  size_t k) {
  if (k == 0 || candidates.empty()) return {};
  constexpr double kK1 = 1.2, kB = 0.75;
  std::vector<std::vector<std::string>> docs;
  std::map<std::string, int> df;
  double total_len = 0;
  for (const Example& c : candidates) {
    docs.push_back(Words(c.question));
    total_len += static_cast<double>(docs.back().size());
    for (const std::string& w : std::set<std::string>(docs.back().begin(), docs.back().end()))
      ++df[w];
  }
  const double n = static_cast<double>(candidates.size());
  const double avg_len = std::max(1.0, total_len / n);
  std::set<std::string> query;
  for (std::string& w : Words(question)) query.insert(std::move(w));
  std::vector<Example> scored;
  for (size_t i = 0; i < candidates.size(); ++i) {
    double score = 0;
    const double len = static_cast<double>(docs[i].size());
    for (const std::string& q : query) {
      double tf = static_cast<double>(std::count(docs[i].begin(), docs[i].end(), q));
      if (tf == 0) continue;
      double idf = std::log(1.0 + (n - df[q] + 0.5) / (df[q] + 0.5));
      score += idf * tf * (kK1 + 1) / (tf + kK1 * (1 - kB + kB * len / avg_len));
    }
    if (score > 0) {
      scored.push_back(candidates[i]);
      scored.back().score = score;
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Example& a, const Example& b) { return a.score > b.score; });
  if (scored.size() > k) scored.resize(k);
  return scored;
}

}  // namespace querypilot
