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
  std::string db_out;         // when set, the combined database is also written here
  bool descriptions = false;  // the datasets' own column descriptions in the schema
  // EvaluateAttached: how many other databases of the data are attached to
  // each question's database; "A" or "B" keeps the databases of that half.
  size_t attach = 9;
  std::string half;
  // EvaluateWide: the sizes of the generated schemas, in tables.
  std::vector<size_t> wide;
  // EvaluateAttached, EvaluateWide: the first `show` questions that lost a
  // gold table or a hint at the last budget, with what they got, on stderr.
  size_t show = 0;
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
Result<LinkingReport> EvaluateLinking(const std::vector<Question>& questions,
                                      const LinkingSpec& spec);

void PrintLinking(std::ostream& out, const LinkingReport& report);

// One figure of a set of questions linked at one budget.
struct LinkingFigures {
  size_t questions = 0;
  size_t gold_kept = 0;        // every table the gold SQL reads is in the prompt
  size_t naming_literals = 0;  // the gold SQL compares a column with a value the question names
  size_t literals_hinted = 0;  // ... and every such value is hinted in that very column
  // The same, of the questions whose values are all of two letters or more
  // and not a stop word alone ('F', 'yes'), which value lookups never match.
  size_t matchable_literals = 0, matchable_hinted = 0;
  std::vector<double> tokens;   // per question: the schema part and the value hints
  std::vector<double> link_us;  // per question: ranking the hints and linking, microseconds
};

struct AttachedPoint {
  size_t budget = 0;
  LinkingFigures alone, attached;
  std::vector<double> ratio;  // per question: attached / alone tokens
};

// Each database of the questions alone, then with `spec.attach` other
// databases of the data attached as distractors (the next ones by the CRC-32
// of their db_id, so the choice is fixed), asked every question of it: gold
// tables kept, gold literals hinted in their own column, prompt size.
struct AttachedReport {
  size_t databases = 0;
  size_t gold_unreadable = 0;
  std::vector<AttachedPoint> points;
};
Result<AttachedReport> EvaluateAttached(const std::vector<Question>& questions,
                                        const LinkingSpec& spec);
void PrintAttached(std::ostream& out, const AttachedReport& report, const LinkingSpec& spec);

// Generated wide schemas (spec.wide tables each) of business domains whose
// tables share column names (id, name, code, status, amount, created_at,
// notes) and values ('paid' is a status of many tables), each table with a
// question naming it ("What is the total amount of paid sales invoices?"):
// gold tables kept, the value hinted in the question's table, prompt size
// against the whole schema, linking time.
struct WidePoint {
  size_t tables = 0, budget = 0, full_tokens = 0;
  LinkingFigures figures;
  size_t within_half = 0;  // prompts at most half the whole schema's text
};
Result<std::vector<WidePoint>> EvaluateWide(const LinkingSpec& spec);
void PrintWide(std::ostream& out, const std::vector<WidePoint>& points);

}  // namespace querypilot::eval
