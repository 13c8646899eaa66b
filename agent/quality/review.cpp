#include "agent/quality/review.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>

#include "agent/base/enum_names.h"
#include "agent/base/text.h"

namespace querypilot {
namespace {

// The JSON object `text` holds, if any: bare, fenced, or its first {...}.
std::optional<nlohmann::json> FindObject(std::string_view text) {
  auto parse = [](std::string_view s) -> std::optional<nlohmann::json> {
    nlohmann::json j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
  };
  if (auto j = parse(text)) return j;
  // A fenced block: the text between the first ``` line and the next ```.
  if (size_t fence = text.find("```"); fence != std::string_view::npos) {
    size_t body = text.find('\n', fence);
    size_t end = body == std::string_view::npos ? body : text.find("```", body);
    if (end != std::string_view::npos) {
      if (auto j = parse(text.substr(body + 1, end - body - 1))) return j;
    }
  }
  size_t open = text.find('{');
  size_t close = text.rfind('}');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
    return parse(text.substr(open, close - open + 1));
  }
  return std::nullopt;
}

}  // namespace

namespace {

// One name an outcome, in ReviewOutcome's order.
constexpr std::array<std::string_view, 4> kReviewOutcomeNames = {"not reviewed", "accepted",
                                                                 "not accepted", "unreadable"};
static_assert(kReviewOutcomeNames.size() == static_cast<size_t>(ReviewOutcome::kUnreadable) + 1);

}  // namespace

std::string_view ReviewOutcomeName(ReviewOutcome outcome) {
  return EnumName(kReviewOutcomeNames, outcome, "not reviewed");
}

std::optional<ModelReview> ParseReview(std::string_view reply) {
  std::optional<nlohmann::json> j = FindObject(reply);
  if (!j) return std::nullopt;
  const auto acceptable = j->find("is_acceptable");
  const auto refine = j->find("should_refine");
  const auto issues = j->find("issues");
  const auto reasoning = j->find("reasoning");
  if (acceptable == j->end() || !acceptable->is_boolean()) return std::nullopt;
  if (refine == j->end() || !refine->is_boolean()) return std::nullopt;
  if (issues != j->end() && !issues->is_array() && !issues->is_null()) return std::nullopt;
  if (reasoning != j->end() && !reasoning->is_string() && !reasoning->is_null()) {
    return std::nullopt;
  }
  ModelReview r;
  r.is_acceptable = acceptable->get<bool>();
  r.should_refine = refine->get<bool>();
  if (issues != j->end() && issues->is_array()) {
    for (const nlohmann::json& i : *issues) {
      r.issues.push_back(text::ToValidUtf8(
          i.is_string() ? i.get<std::string>()
                        : i.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
  }
  if (reasoning != j->end() && reasoning->is_string()) {
    r.reasoning = text::ToValidUtf8(reasoning->get<std::string>());
  }
  return r;
}

std::string ReviewPrompt(const ReviewSubject& subject) {
  std::string out = fmt::format("Question: {}\n\n", subject.question);
  if (!subject.tables.empty()) {
    out += "The tables the query reads:\n";
    // Their columns, keys and notes, without sample rows: the rows a review
    // sends are the result's first review_rows, and none with 0.
    for (const TableInfo* t : subject.tables) {
      TableInfo shown = *t;
      shown.sample_rows.clear();
      out += RenderTable(shown);
    }
    out += "\n";
  }
  out += fmt::format("The query:\n```sql\n{}\n```\n\n", subject.sql);
  static const std::vector<std::string> no_columns;
  static const std::deque<Row> no_rows;
  const std::vector<std::string>& columns = subject.columns ? *subject.columns : no_columns;
  const std::deque<Row>& rows = subject.rows ? *subject.rows : no_rows;
  std::string names;
  for (const std::string& c : columns) names += (names.empty() ? "" : ", ") + c;
  out += fmt::format("Its result's columns: {}\n", names);
  out += fmt::format("Its rows: {}{}\n", subject.complete ? "" : "more than ", rows.size());
  const size_t shown = std::min(rows.size(), static_cast<size_t>(std::max(0, subject.review_rows)));
  if (shown > 0) {
    out += fmt::format("Its first {} row{}:\n", shown, shown == 1 ? "" : "s");
    const std::vector<std::string> keys = UniqueColumnNames(columns);
    for (size_t i = 0; i < shown; ++i) out += RowToJson(keys, rows[i]) + "\n";
  }
  out +=
      "\nReply with one JSON object only: {\"is_acceptable\": true or false, \"should_refine\": "
      "true or false, \"issues\": [\"...\"], \"reasoning\": \"...\"}";
  return out;
}

std::string ReviewRecordJson(const std::optional<ModelReview>& review, std::string_view model,
                             std::string_view reply, std::string_view error) {
  nlohmann::ordered_json j;
  j["source"] = "review";
  j["model"] = std::string(model);
  if (!error.empty()) {
    j["error"] = std::string(error);
  } else if (!review) {
    j["unreadable"] = true;
    j["reply"] = text::Truncate(std::string(reply), 500);
  } else {
    j["is_acceptable"] = review->is_acceptable;
    j["should_refine"] = review->should_refine;
    j["issues"] = review->issues;
    j["reasoning"] = review->reasoning;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ReviewCorrectionPrompt(const ModelReview& review, std::string_view correction_text,
                                   std::string_view stand_by_text) {
  std::string out = "A review of that query's result found it does not answer the question:\n";
  for (const std::string& i : review.issues) out += fmt::format("- {}\n", i);
  if (!review.reasoning.empty()) out += fmt::format("Reasoning: {}\n", review.reasoning);
  out += fmt::format("{}\n{}\nReply with the query only, in a ```sql block.", correction_text,
                     stand_by_text);
  return out;
}

std::string EmptyAnswerDoubt(const std::vector<std::string>& critical_messages,
                             ReviewOutcome review, std::string_view review_reasoning) {
  if (!critical_messages.empty()) return critical_messages.front();
  if (review != ReviewOutcome::kNotAccepted) return "";
  return review_reasoning.empty()
             ? std::string("its review did not accept it")
             : "its review did not accept it: " + std::string(review_reasoning);
}

}  // namespace querypilot
