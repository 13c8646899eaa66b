// The business domains the linking evaluation (eval/linking_eval.h) builds
// tables of: the distractors of the combined database and the generated wide
// schemas both read this one table.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace querypilot::eval {

inline constexpr int kNotADistractor = -1;

// Ten tables of one business; the first is the one the nine others refer to.
struct BusinessDomain {
  const char* name;
  // The tables' names as the wide schemas have them: no name in two domains
  // ("film_reviews"), so that a question names one table.
  std::array<const char*, 10> tables;
  // Where the combined database's distractors take this domain (0 first);
  // kNotADistractor: never.
  int distractor_order;
  // The distractors' own names where they differ from `tables` (position,
  // name): distractors share names across domains ("reviews" of hr, film and
  // restaurant), as the datasets' schemas do.
  std::vector<std::pair<size_t, const char*>> shared_names = {};
};

// Every domain, in the order the wide schemas take them.
const std::vector<BusinessDomain>& BusinessDomains();

// A domain's name and its ten tables' names.
using DomainTables = std::vector<std::pair<const char*, std::vector<const char*>>>;
// The distractors' domains, in their order, with their shared names.
const DomainTables& DistractorDomains();
// Every domain, in the table's order, with the wide schemas' names.
const DomainTables& WideDomains();

}  // namespace querypilot::eval
