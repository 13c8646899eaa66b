#include "eval/gold_eval.h"

#include <fmt/format.h>

#include <algorithm>

namespace querypilot::eval {

std::vector<Question> SelectGold(const std::vector<Question>& questions, const GoldSpec& spec) {
  std::vector<Question> out;
  for (const Question& q : questions) {
    if (spec.half.empty() || DatabaseHalf(q.db_id) == spec.half) out.push_back(q);
  }
  if (spec.sample > 0 && out.size() > spec.sample) {
    // A fixed sample, spread over every database: the questions whose ids
    // have the smallest CRC-32, kept in their own order.
    std::vector<uint32_t> keys;
    for (const Question& q : out) keys.push_back(Crc32(q.id));
    std::vector<uint32_t> sorted = keys;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(spec.sample - 1),
                     sorted.end());
    const uint32_t cut = sorted[spec.sample - 1];
    std::vector<Question> sampled;
    for (size_t i = 0; i < out.size() && sampled.size() < spec.sample; ++i) {
      if (keys[i] <= cut) sampled.push_back(out[i]);
    }
    out = std::move(sampled);
  }
  return out;
}

Result<GoldReport> EvaluateGold(const std::vector<Question>& questions, const GoldSpec& spec,
                                const Progress& progress) {
  const PredictionFile gold = GoldAsPredictions(questions, "gold");
  RunSpec run;
  run.name = "gold";
  run.extension_path = spec.extension_path;
  run.max_attempts = 1;
  run.timeout_ms = spec.timeout_ms;
  run.replay = &gold;
  ResultCache cache;
  Result<RunOutput> out = RunEvaluation(questions, run, cache, progress);
  if (!out.ok()) return out.status();
  GoldReport r;
  for (const QuestionResult& q : out->questions) {
    ++r.questions;
    if (q.gold_failed) {
      ++r.gold_failed;
      continue;
    }
    if (q.attempt_scores.empty() || !q.attempt_scores[0].error_type.empty()) continue;
    const AttemptScore& a = q.attempt_scores[0];
    const std::string half = DatabaseHalf(q.db_id);
    GoldReport::Database& db = r.by_database[q.db_id];
    db.half = half;
    ++r.ran;
    ++db.ran;
    ++r.by_half[half].ran;
    if (!a.flagged) continue;
    ++r.sent_back;
    ++db.sent_back;
    ++r.by_half[half].sent_back;
    for (const std::string& kind : a.critical) ++r.by_finding[kind];
    std::string detail;
    for (const GroundingFinding& g : a.grounding) {
      detail += fmt::format("{}'{}' in {} -> {}", detail.empty() ? "" : "; ", g.literal, g.column,
                            fmt::join(g.values, " | "));
    }
    r.examples.push_back(
        {q.id, q.db_id, a.critical.empty() ? "" : a.critical.front(), a.sql, detail});
  }
  return r;
}

namespace {

std::string Share(size_t n, size_t of) {
  return of ? fmt::format("{:.2f}%", 100.0 * n / of) : "-";
}

}  // namespace

void PrintGold(std::ostream& out, const GoldReport& r, size_t examples_shown) {
  out << fmt::format(
      "gold queries replayed: {} ({} whose gold SQL failed to run, not counted); ran: {}\n",
      r.questions, r.gold_failed, r.ran);
  out << fmt::format("sent back: {} of {} ({})\n\n", r.sent_back, r.ran, Share(r.sent_back, r.ran));
  out << "| half | databases | gold ran | sent back | share |\n|---|---|---|---|---|\n";
  for (const auto& [half, h] : r.by_half) {
    size_t databases = 0;
    for (const auto& [name, db] : r.by_database) databases += db.half == half;
    out << fmt::format("| {} | {} | {} | {} | {} |\n", half, databases, h.ran, h.sent_back,
                       Share(h.sent_back, h.ran));
  }
  out << "\n| finding | gold queries sent back | share of gold that ran |\n|---|---|---|\n";
  std::vector<std::pair<std::string, size_t>> findings(r.by_finding.begin(), r.by_finding.end());
  std::sort(findings.begin(), findings.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [kind, n] : findings)
    out << fmt::format("| {} | {} | {} |\n", kind, n, Share(n, r.ran));
  std::vector<std::pair<std::string, GoldReport::Database>> dbs(r.by_database.begin(),
                                                                r.by_database.end());
  std::sort(dbs.begin(), dbs.end(),
            [](const auto& a, const auto& b) { return a.second.sent_back > b.second.sent_back; });
  out << "\n| database | half | gold ran | sent back |\n|---|---|---|---|\n";
  for (const auto& [name, db] : dbs) {
    if (db.sent_back == 0) break;
    out << fmt::format("| {} | {} | {} | {} |\n", name, db.half, db.ran, db.sent_back);
  }
  if (examples_shown > 0 && !r.examples.empty()) {
    out << "\ngold queries sent back:\n";
    for (size_t i = 0; i < r.examples.size() && i < examples_shown; ++i) {
      const auto& e = r.examples[i];
      out << fmt::format("  {} [{}] {}: {}{}\n", e.id, e.db_id, e.finding, e.sql,
                         e.detail.empty() ? "" : "  {" + e.detail + "}");
    }
  }
}

}  // namespace querypilot::eval
