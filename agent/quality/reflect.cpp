#include "agent/quality/reflect.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace querypilot {

ReflectionIssue ReflectionIssue::Note(Finding f, std::string msg) {
  ReflectionIssue issue(f, std::move(msg));
  if (RowOf(f).also_note && issue.tier == Tier::kCritical) issue.tier = Tier::kNote;
  return issue;
}

ReflectionIssue ReflectionIssue::Error(ErrorKind kind, std::string msg) {
  ReflectionIssue issue;
  issue.error = kind;
  issue.message = std::move(msg);
  return issue;
}

std::string_view ReflectionIssue::kind() const {
  return finding ? RowOf(*finding).name : ErrorKindName(error);
}

std::string Reflection::ToJson() const {
  nlohmann::ordered_json j;
  j["is_acceptable"] = is_acceptable;
  j["should_refine"] = should_refine;
  j["issues"] = nlohmann::ordered_json::array();
  for (const auto& i : issues) {
    nlohmann::ordered_json issue = {
        {"kind", i.kind()}, {"severity", i.severity()}, {"message", i.message}};
    if (!i.literal.empty()) issue["literal"] = i.literal;
    if (!i.column.empty()) issue["column"] = i.column;
    if (!i.values.empty()) issue["values"] = i.values;
    j["issues"].push_back(std::move(issue));
  }
  if (!strategy.empty()) j["strategy"] = strategy;
  j["reasoning"] = reasoning;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

size_t Reflection::critical() const {
  size_t n = 0;
  for (const auto& i : issues) n += i.critical();
  return n;
}

size_t ConfidenceNotes(const std::vector<ReflectionIssue>& issues) {
  size_t n = 0;
  for (const ReflectionIssue& i : issues) {
    n += i.tier == Tier::kNote && i.finding && RowOf(*i.finding).counts_toward_confidence;
  }
  return n;
}

namespace {

// The strongest critical result finding (the first in findings.cpp's
// order), or nullptr.
const ReflectionIssue* Strongest(const std::vector<ReflectionIssue>& issues) {
  const ReflectionIssue* why = nullptr;
  for (const auto& i : issues) {
    if (i.critical() && i.finding && (!why || *i.finding < *why->finding)) why = &i;
  }
  return why;
}

}  // namespace

Reflection Reflect(const AttemptOutcome& outcome) {
  Reflection r;
  const Status& e = outcome.error;
  if (!e.ok()) {
    r.is_acceptable = false;
    r.issues.push_back(ReflectionIssue::Error(e.kind(), e.message()));
    if (IsRetryableSqlError(e.kind())) {
      r.should_refine = true;
      r.reasoning = fmt::format("the query failed with {}; a corrected query may fix it",
                                ErrorKindName(e.kind()));
    } else if (e.kind() == ErrorKind::kRefused && outcome.refusals_before == 0) {
      r.should_refine = true;
      r.reasoning =
          "the query was refused before it ran; the model gets one chance to answer "
          "with a read-only query";
    } else if (e.kind() == ErrorKind::kRefused) {
      r.reasoning = "a query was refused again; stopping";
    } else if (e.kind() == ErrorKind::kNeedsClarification) {
      r.reasoning =
          "the model asked the user to clarify the question; the questions go to the user";
    } else if (e.kind() == ErrorKind::kUnchangedSql) {
      r.reasoning = "the model repeated a query that had already failed; stopping";
    } else if (IsDatabaseFault(e.kind())) {
      r.reasoning = fmt::format(
          "SQLite reported {}: a fact about the database or the machine, which no new "
          "query can fix; stopping without another model call",
          ErrorKindName(e.kind()));
    } else if (IsProviderError(e.kind()) || e.kind() == ErrorKind::kNotConfigured) {
      r.reasoning = "the model could not be reached or answered badly; stopping";
    } else {
      r.reasoning =
          fmt::format("{} is not something a new query can fix; stopping", ErrorKindName(e.kind()));
    }
    return r;
  }
  r.issues = outcome.result_issues;
  if (outcome.truncated) r.issues.push_back({Finding::kTruncated, "max_rows cut the result"});
  if (const ReflectionIssue* why = Strongest(r.issues)) {
    r.strategy = RowOf(*why->finding).strategy;
    r.is_acceptable = false;
    r.should_refine = true;
    r.reasoning = fmt::format("the query ran, but {}; strategy {}", why->message, r.strategy);
    return r;
  }
  r.is_acceptable = true;
  if (outcome.complete && outcome.rows_seen == 0) {
    r.reasoning =
        "the query ran without error and returned no rows; accepted, as an empty "
        "answer can be right";
  } else if (outcome.complete) {
    r.reasoning = fmt::format("the query ran without error and returned {} row{}",
                              outcome.rows_seen, outcome.rows_seen == 1 ? "" : "s");
  } else {
    r.reasoning = fmt::format(
        "the query ran without error; its first {} rows were checked and "
        "the rest stream to the caller",
        outcome.rows_seen);
  }
  return r;
}

}  // namespace querypilot
