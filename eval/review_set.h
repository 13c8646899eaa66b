// The answers the review is measured on (`querypilot-eval review-set`): a
// fixed, deterministic selection of right and silently wrong answers whose
// rightness is known, written as prediction files the replay answers with.
//
// A data set with published systems' predictions (spider_dev6, bird): per
// question, the systems' answers that run without error; of those whose
// result differs from gold's, one (the least CRC-32 of its SQL), and of the
// right ones, one the same way. Questions are taken in the order of the
// CRC-32 of their id until `count` wrong and `count` right answers are
// chosen (as many right as wrong where fewer are wrong). A data set without predictions
// (spider_train): per half of its questions (eval/halves.py's split, CRC-32 of the id), `count`
// gold answers and `count` mutants (eval/mutants.h, one per question, of a kind chosen by the
// question's CRC-32, that run and give another result than gold's), from different questions.
//
// Files: OUT/<data set>-wrong.jsonl and -right.jsonl, or
// OUT/<data set>-<half>-gold.jsonl and -mutant.jsonl; each line
// {"id","db_id","question","pred_sql","is_right","source"}.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "agent/base/status.h"
#include "eval/dataset.h"

namespace querypilot::eval {

struct ReviewSetSpec {
  std::vector<PredictionFile> systems;   // the published systems' predictions
  std::map<std::string, size_t> counts;  // data set -> answers of each kind (per half)
  size_t default_count = 50;             // for a data set not in `counts`
  std::string out_dir;
  int timeout_ms = 30000;
};

// Selects and writes the files; says on `log` what each holds. Fails when
// `out_dir` cannot be written.
Status WriteReviewSet(const std::vector<Question>& questions, const ReviewSetSpec& spec,
                      std::ostream& log);

}  // namespace querypilot::eval
