// Wrong answers on many schemas, for recall: each gold query rewritten the
// way a real model goes wrong, by generic rules over the SQL's tokens and
// the schema (never per database). A mutant is replayed as the model's answer
// like any prediction; only mutants that run and return a result other than
// gold's count, so every one counted is a wrong answer, and recall per kind
// of mistake is the share the result checks send back.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "eval/gold_eval.h"

namespace querypilot {
struct Schema;
}

namespace querypilot::eval {

// Each database's schema (by db_path) of `questions`, read once per
// database; an empty schema for one that cannot be read.
std::map<std::string, Schema> SchemasOf(const std::vector<Question>& questions);

// The kinds of mistake, in report order.
const std::vector<std::string>& MutationKinds();

// `gold_sql` with one mistake of `kind`, or nullopt when the rule does not
// apply to it. `schema` is the database's (for the rules that need keys).
//   literal_case:    a compared text literal in another case ('france')
//   literal_typo:    a compared text literal missing a letter ('Frnce')
//   dropped_filter:  the last condition of the WHERE clause dropped
//   missing_limit:   the LIMIT of an ordered query dropped (a top item)
//   wrong_aggregate: MAX for MIN, MIN for MAX, SUM for AVG, AVG for SUM
//   wrong_join_key:  a join's right-hand column replaced by another key of
//                    its table
//   ids_for_names:   a selected column of a table replaced by the foreign
//                    key that refers to that table (ids where names were asked)
std::optional<std::string> Mutate(const std::string& kind, const std::string& gold_sql,
                                  const Schema& schema);

struct MutantReport {
  struct Kind {
    size_t made = 0;       // mutants the rule produced
    size_t wrong = 0;      // ... that ran and returned another result than gold's
    size_t sent_back = 0;  // ... that a result check sent back
    size_t noted = 0;      // ... not sent back, but with a note in the reflection
  };
  std::map<std::string, Kind> kinds;
};

Result<MutantReport> EvaluateMutants(const std::vector<Question>& questions, const GoldSpec& spec);

void PrintMutants(std::ostream& out, const MutantReport& report);

// Candidates on many schemas (`mutants --candidates`): each question answered
// in one reply by gold and its mutants as the readings, three ways:
//   gold+agreeing  gold first, then gold written another way (the same
//                  answer): what agreement alone does to a right answer;
//   gold+mutants   gold first, then up to two mutants of other kinds;
//   mutant+gold    a mutant first, then gold and another mutant.
// Questions with no mutant are left out of the last two. Each is a run
// scored like any other (first reading against the answer returned, and
// the confidence's calibration).
Result<std::vector<RunOutput>> EvaluateMutantCandidates(const std::vector<Question>& questions,
                                                        const GoldSpec& spec);

// `examples_shown`: at most this many right first readings that were not
// returned, with the answer that was.
void PrintMutantCandidates(std::ostream& out, const std::vector<RunOutput>& runs,
                           size_t examples_shown);

}  // namespace querypilot::eval
