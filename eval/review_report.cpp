#include "eval/review_report.h"

#include <fmt/format.h>

namespace querypilot::eval {
namespace {

std::string HalfOf(const std::string& question_id) {
  return Crc32(question_id) % 2 == 0 ? "A" : "B";
}

std::string ModeOf(const RunSpec& spec) {
  std::string review = "0";
  for (const auto& [key, value] : spec.settings) {
    if (key == "review") review = value;
  }
  return review == "0" ? "review off" : "review on";
}

std::string BandOf(int confidence) {
  std::string band = "none";
  if (confidence < 0) return band;
  for (const auto& [name, from] : ReviewBands()) {
    if (confidence >= from) band = name;
  }
  return band;
}

void Add(ReviewGroup& g, const QuestionResult& q) {
  ++g.questions;
  g.llm_calls += static_cast<size_t>(std::max(0, q.llm_calls));
  g.tokens += std::max<int64_t>(0, q.prompt_tokens) + std::max<int64_t>(0, q.completion_tokens);
  g.review_requests += static_cast<size_t>(q.review_requests);
  g.review_missing += static_cast<size_t>(q.review_missing);
  ++g.outcomes[q.review.empty() ? "none" : q.review];
  const bool final_ok = q.FinalOk();
  const bool doubted = q.confidence >= 0 && q.confidence < 50;
  if (q.status == "ok") {
    ReviewGroup::Band& b = g.bands[BandOf(q.confidence)];
    ++b.n;
    b.right += final_ok;
  }
  if (q.attempt_scores.empty() || !q.attempt_scores.front().error_type.empty()) return;
  ++g.first_ran;
  if (q.FirstOk()) {
    ++g.right;
    g.flagged += doubted;
    g.replaced += !final_ok;
  } else {
    ++g.wrong;
    g.caught += final_ok || doubted;
    g.fixed += final_ok;
  }
}

double Pct(size_t a, size_t b) {
  return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0;
}

}  // namespace

const std::vector<std::pair<std::string, int>>& ReviewBands() {
  static const std::vector<std::pair<std::string, int>> bands = {
      {"0-24", 0}, {"25-49", 25}, {"50-74", 50}, {"75-89", 75}, {"90-100", 90}};
  return bands;
}

ReviewReport BuildReviewReport(const std::vector<RunOutput>& runs) {
  ReviewReport report;
  for (const RunOutput& run : runs) {
    auto& groups = report.modes[ModeOf(run.spec)];
    for (const QuestionResult& q : run.questions) {
      if (q.gold_failed) continue;
      Add(groups[q.dataset + " " + HalfOf(q.id)], q);
      Add(groups[q.dataset], q);
      Add(groups["all"], q);
    }
  }
  return report;
}

void PrintReviewReport(std::ostream& out, const ReviewReport& report) {
  if (report.modes.empty()) return;
  out << "\nReview: first answers that ran, wrong ones caught (returned right, or below 50) and "
         "fixed, right ones flagged (below 50) and replaced by a wrong one; calls and tokens "
         "per question; review requests without a recorded reply:\n";
  out << fmt::format(
      "{:<11} {:<16} {:>5} {:>6} {:>13} {:>6} {:>6} {:>13} {:>8} {:>6} {:>8} {:>8}\n", "mode",
      "group", "n", "wrong", "caught", "fixed", "right", "flagged", "replaced", "calls", "tokens",
      "missing");
  for (const auto& [mode, groups] : report.modes) {
    for (const auto& [name, g] : groups) {
      const double n = g.questions ? static_cast<double>(g.questions) : 1;
      out << fmt::format(
          "{:<11} {:<16} {:>5} {:>6} {:>13} {:>6} {:>6} {:>13} {:>8} {:>6.2f} {:>8.0f} {:>8}\n",
          mode, name.substr(0, 16), g.questions, g.wrong,
          fmt::format("{} ({:.0f}%)", g.caught, Pct(g.caught, g.wrong)), g.fixed, g.right,
          fmt::format("{} ({:.0f}%)", g.flagged, Pct(g.flagged, g.right)), g.replaced,
          static_cast<double>(g.llm_calls) / n, static_cast<double>(g.tokens) / n,
          g.review_missing);
    }
  }
  out << "\nReview calibration: per confidence band, answers returned and the share right:\n";
  out << fmt::format("{:<11} {:<16}", "mode", "group");
  for (const auto& [band, from] : ReviewBands()) out << fmt::format(" {:>14}", band);
  out << "\n";
  for (const auto& [mode, groups] : report.modes) {
    for (const auto& [name, g] : groups) {
      out << fmt::format("{:<11} {:<16}", mode, name.substr(0, 16));
      for (const auto& [band, from] : ReviewBands()) {
        auto it = g.bands.find(band);
        if (it == g.bands.end() || it->second.n == 0) {
          out << fmt::format(" {:>14}", "-");
        } else {
          out << fmt::format(
              " {:>14}",
              fmt::format("{:.0f}% of {}", Pct(it->second.right, it->second.n), it->second.n));
        }
      }
      out << "\n";
    }
  }
}

nlohmann::ordered_json ReviewReportJson(const ReviewReport& report) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [mode, groups] : report.modes) {
    for (const auto& [name, g] : groups) {
      nlohmann::ordered_json e;
      e["questions"] = g.questions;
      e["first_ran"] = g.first_ran;
      e["wrong"] = g.wrong;
      e["caught"] = g.caught;
      e["fixed"] = g.fixed;
      e["right"] = g.right;
      e["flagged"] = g.flagged;
      e["replaced"] = g.replaced;
      e["llm_calls_per_question"] =
          g.questions ? static_cast<double>(g.llm_calls) / static_cast<double>(g.questions) : 0;
      e["tokens_per_question"] =
          g.questions ? static_cast<double>(g.tokens) / static_cast<double>(g.questions) : 0;
      e["review_requests"] = g.review_requests;
      e["review_missing"] = g.review_missing;
      e["outcomes"] = g.outcomes;
      nlohmann::ordered_json bands = nlohmann::ordered_json::object();
      for (const auto& [band, from] : ReviewBands()) {
        auto it = g.bands.find(band);
        const ReviewGroup::Band b = it == g.bands.end() ? ReviewGroup::Band{} : it->second;
        bands[band] = {{"n", b.n}, {"right", b.right}};
      }
      e["calibration"] = bands;
      j[mode][name] = e;
    }
  }
  return j;
}

}  // namespace querypilot::eval
