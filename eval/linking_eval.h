// Schema linking, measured where it matters: one database holding every
// dataset schema at once (tables and data copied from each dataset database)
// plus a few hundred distractor tables from other business domains, some of
// them near the datasets' own (comics, music, libraries). For each question
// and each token budget, it records whether every table the gold SQL reads
// survives pruning, and how much smaller the schema part of the prompt gets.
//
// The gold SQL's tables come from SQLite itself: the SQL is prepared on the
// combined database under an authorizer that records each table read.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "agent/base/status.h"
#include "eval/dataset.h"

namespace querypilot::eval {

struct LinkingSpec {
  std::vector<size_t> budgets = {1000, 1500, 2000, 3000, 4000, 6000};  // tokens
  size_t distractors = 300;
  std::string db_out;  // when set, the combined database is also written here
  bool descriptions = false;  // the datasets' own column descriptions in the schema
};

struct LinkingPoint {
  size_t budget = 0;
  size_t questions = 0;
  size_t kept_all_gold = 0;           // the question asked with its evidence
  size_t kept_all_gold_question = 0;  // the question alone
  double mean_tokens = 0;             // schema part of the prompt
  double cut = 0;                     // 1 - mean_tokens / full_tokens
};

struct LinkingReport {
  size_t tables = 0, dataset_tables = 0;
  size_t full_tokens = 0;
  size_t value_index_size = 0;
  size_t gold_unreadable = 0;  // gold SQL that did not prepare on the combined database
  size_t descriptions = 0;     // columns described
  std::vector<LinkingPoint> points;
};

// Builds the combined database and measures every budget.
Result<LinkingReport> EvaluateLinking(const std::vector<Question>& questions, const LinkingSpec& spec);

void PrintLinking(std::ostream& out, const LinkingReport& report);

}  // namespace querypilot::eval
