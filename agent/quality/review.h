// Review: a model reads an answer that ran before the user does (the
// `review` setting).
//
// After an answer runs and the rule checks (reflect.h) accept it, one model
// call is shown the question, the tables and columns its SQL reads, the SQL,
// the result's column names, its row count and its first `review_rows` rows
// (all read already: nothing new runs), and answers with the record
// {"is_acceptable": bool, "should_refine": bool, "issues": [...],
// "reasoning": "..."}. The agent (agent.cpp's Review node) decides what a
// review changes: never a right answer for a doubtful one. Here are only
// pure functions: the request's text, the reply's parsing, the record kept.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"
#include "agent/base/value.h"

namespace querypilot {

// What agent_runs.review says of a run.
enum class ReviewOutcome {
  kNotReviewed,  // review 0, no answer, a cached answer or no model here
  kAccepted,     // the answer returned was accepted by its review
  kNotAccepted,  // no review accepted an answer: the first is returned, below 50
  kUnreadable,   // the review's reply was not the record: it changed nothing
};

// "not reviewed", "accepted", "not accepted", "unreadable".
std::string_view ReviewOutcomeName(ReviewOutcome outcome);

// A review reply read as its record.
struct ModelReview {
  bool is_acceptable = false;
  bool should_refine = false;
  std::vector<std::string> issues;
  std::string reasoning;
};

// The record in `reply`: a JSON object, bare, in a ```json (or any) fenced
// block, or the first {...} of the text, with "is_acceptable" and
// "should_refine" booleans, "issues" an array (each member a string, or any
// other JSON value written as JSON text) and "reasoning" a string (missing:
// ""). nullopt for anything else; never throws.
std::optional<ModelReview> ParseReview(std::string_view reply);

// What a review is shown of an answer.
struct ReviewSubject {
  std::string_view question;  // as asked, its "Hint:" line included
  std::string_view sql;
  // The tables the SQL reads (FindQueryTables), as CREATE TABLE text
  // without their sample rows.
  std::vector<const TableInfo*> tables;
  const std::vector<std::string>* columns = nullptr;
  const std::deque<Row>* rows = nullptr;  // the rows read so far
  bool complete = false;                  // every row was read: rows->size() is the count
  int review_rows = 10;                   // rows shown at most; 0: none
};

// The review's user message: the question, the schema part, the SQL, the
// column names, the row count ("more than N" when not every row was read)
// and the first `review_rows` rows as JSON objects, then the reply's form.
std::string ReviewPrompt(const ReviewSubject& subject);

// agent_attempts.reflection's "review" member: {"source":"review","model":..,
// "is_acceptable","should_refine","issues","reasoning"}, or for a reply that
// is not the record {"source":"review","model":..,"unreadable":true,
// "reply": its first 500 bytes}; a failed call {"source":"review",
// "model":..,"error":..}.
std::string ReviewRecordJson(const std::optional<ModelReview>& review, std::string_view model,
                             std::string_view reply, std::string_view error = {});

// Why QueryPilot doubts an answer with no rows: the first critical finding
// still standing on it (its message), else a review that did not accept it
// (`review_reasoning`). "" when nothing doubts it.
std::string EmptyAnswerDoubt(const std::vector<std::string>& critical_messages,
                             ReviewOutcome review, std::string_view review_reasoning);

// The correction a review not accepting an answer sends back: its issues,
// its reasoning, the editable "review.correction" text (`correction_text`)
// and leave to stand by the query.
std::string ReviewCorrectionPrompt(const ModelReview& review, std::string_view correction_text,
                                   std::string_view stand_by_text);

}  // namespace querypilot
