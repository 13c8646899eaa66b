// Few-shot memory, measured on the datasets: for each question, every other
// question of its database (with its gold SQL) is in the memory as a run
// marked good. A question asked again in other words (Spider has two
// wordings of most gold queries) should find its twin's SQL among the
// examples QueryPilot would show; a question with no twin should not be
// shown an example with its own SQL, since there is none.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "eval/dataset.h"

namespace querypilot::eval {

struct ExamplesRow {
  std::string dataset;
  size_t questions = 0;
  size_t with_twin = 0;  // questions whose gold SQL another question shares
  size_t twin_top1 = 0;  // ... whose first example is a twin
  size_t twin_topk = 0;  // ... with a twin among the k examples
  size_t shown = 0;      // examples shown in all
};

// One row per dataset, then a total row.
std::vector<ExamplesRow> EvaluateExamples(const std::vector<Question>& questions, size_t k);
void PrintExamples(std::ostream& out, const std::vector<ExamplesRow>& rows, size_t k);

}  // namespace querypilot::eval
