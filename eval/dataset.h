// Datasets and prediction files in the Spider/BIRD shape.
//
// A dataset is a folder holding `questions.jsonl` (one JSON object per line:
// `db_id`, `question`, `gold_sql`, optional `id`, `evidence`, `difficulty`)
// and its databases, found by `db_id` as `<db_id>.sqlite`,
// `<db_id>/<db_id>.sqlite` or `database/<db_id>/<db_id>.sqlite` (Spider's
// layout). A folder of such folders (like ../shared/datasets) is several
// datasets. A prediction file is JSONL with `db_id`, `question`, `pred_sql`
// and optional `repaired_sql`, one line per question.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/status.h"

namespace querypilot::eval {

struct Question {
  std::string id;
  std::string dataset;  // the folder's name ("bird", "spider", ...)
  std::string db_id;
  std::string db_path;
  std::string question;
  std::string evidence;  // "" when the dataset has none
  std::string gold_sql;
  std::string difficulty;  // "" when the dataset has none
  // How the dataset's own benchmark scores: "set" (BIRD) or "bag" (Spider).
  std::string scoring;

  // The text asked of QueryPilot: the question, and BIRD's evidence as a hint.
  std::string AskText() const;
};

// The CRC-32 (IEEE, as zlib's crc32) of `s`: a fixed split of databases or
// questions that no rule can depend on.
uint32_t Crc32(std::string_view s);

// "A" or "B": the half a database belongs to, by the parity of the CRC-32 of
// its db_id. Split by database, not by question, so tuning on one half never
// sees the other half's data.
std::string DatabaseHalf(std::string_view db_id);

// Loads every dataset under `path`: a questions.jsonl file, a folder holding
// one, or a folder of such folders. Fails, naming the file and line, on bad
// JSON, a missing field or a database that cannot be found.
Result<std::vector<Question>> LoadQuestionsAt(const std::string& path);

// LoadQuestionsAt() for each of a comma-separated list of paths, in order
// ("datasets/spider,datasets/bird").
Result<std::vector<Question>> LoadQuestions(const std::string& paths);

struct Prediction {
  std::string pred_sql;
  std::string repaired_sql;  // "" when the file has none
  // Other systems' SQL for the same question (--alternatives), sent after
  // pred_sql in the first reply as the model's alternative readings.
  std::vector<std::string> alternatives;
  // A recording's replies (LoadRecording): when not empty, the replay model
  // answers with these texts as written, not with pred_sql: a first prompt
  // with replies[0], a request for n choices with the first n in turn.
  std::vector<std::string> replies;
  // The first prompt the replies answered, as recorded ("" for SQL files).
  std::string recorded_request;
  // Other systems' SQL for the same question (--samples), served as the
  // further choices of a first prompt asking for n (the `samples` setting):
  // independent replies, not readings of one.
  std::vector<std::string> samples;
};

struct PredictionFile {
  std::string path;
  std::string name;  // the file name without .jsonl
  // Keyed by (db_id, question with white space collapsed).
  std::map<std::pair<std::string, std::string>, Prediction> by_question;
  size_t lines = 0;

  const Prediction* Find(const Question& q) const;
};

Result<PredictionFile> LoadPredictions(const std::string& path);

// A recording of a model's replies (shared/tools/merge_replies.py's output:
// a JSON array of {db_id, question, request, replies[]}) as `count` prediction
// files, the k-th answering each first prompt with reply k, then the next ones
// in turn (so one run per independent reply). `count` is the fewest replies
// any entry has. Fails, naming the entry, on a malformed one.
Result<std::vector<PredictionFile>> LoadRecording(const std::string& path);

// Every question's gold SQL as its prediction: replayed, each is a right
// answer the checks must never send back. Questions asked twice on one
// database keep the first one's gold SQL.
PredictionFile GoldAsPredictions(const std::vector<Question>& questions, const std::string& name);

// Every *.jsonl under `path` (a file or a folder), sorted by name.
Result<std::vector<std::string>> ListPredictionFiles(const std::string& path);

}  // namespace querypilot::eval
