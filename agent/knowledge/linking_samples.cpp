// Linking with the sample rows of the tables a prompt shows alone
// (SamplesToRead, agent/knowledge/linking.h): why it links as with every
// table's.
#include <string_view>
#include <utility>
#include <vector>

#include "agent/knowledge/linking.h"  // what this file defines

namespace querypilot {

// Why linking with the samples of the kept tables alone is linking with
// every sample (SamplesToRead). Let C be each table's cost with every sample
// read, and L the costs the last round linked with: C where a table's samples
// are read, a lower bound of C where they are pending (a pending table's
// rendering lacks its sample rows and the notes they add, and is no longer).
//  - Pruning: the last round is pruned only when the whole schema's
//    rendering, a lower bound of the real one, is over the budget (else
//    every sample is read first); the real one is then over it too.
//  - Relevance: the question cannot tie to what samples add
//    (QuestionMayTieToSampleNotes, else every sample is read first): every
//    term of a note's that a question term is alike to, and so every weight
//    and every table's and column's score, is the same with the samples
//    read or not (a term no question term is alike to weighs 0, whatever
//    its rarity). The ranking, the databases' coverage and the tables named
//    are those with every sample read.
//  - The choices: LinkSchema makes them in an order that depends on the
//    ranking alone, and each is try_add(group) (keep the group when the
//    tables of it not kept yet fit what is left of the budget) or add_cut(i)
//    (keep one table cut to fit). By induction over the choices, both runs
//    are in the same state before each: a group kept in the last round is
//    kept for good, so its tables' samples are read (the round returned
//    none to read) and its cost under L is its cost under C, and it is kept
//    with C too; a group refused under L costs at least as much under C
//    and is refused too. A table cut is kept, so read, and cut alike. The
//    state after the last choice, and the rendering of the tables kept
//    (all read), are those with every sample read.
std::vector<size_t> SamplesToRead(const Schema& schema, std::string_view full_rendered,
                                  std::string_view question, const std::vector<ValueHint>& hints,
                                  size_t budget_tokens, LinkedSchema* linked) {
  std::vector<size_t> pending;
  for (size_t i = 0; i < schema.tables.size(); ++i) {
    if (schema.tables[i].samples_pending) pending.push_back(i);
  }
  if (!pending.empty() && (budget_tokens == 0 || EstimateTokens(full_rendered) <= budget_tokens ||
                           QuestionMayTieToSampleNotes(question))) {
    return pending;
  }
  LinkedSchema out = LinkSchema(schema, full_rendered, question, hints, budget_tokens);
  std::vector<size_t> to_read;
  for (const TableInfo* t : out.kept) {
    if (t->samples_pending) to_read.push_back(static_cast<size_t>(t - schema.tables.data()));
  }
  if (to_read.empty()) *linked = std::move(out);
  return to_read;
}

}  // namespace querypilot
