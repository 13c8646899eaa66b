// What linking reads of words (agent/knowledge/linking.h): each word's
// forms (Term), how alike two words are (Alike), the words of a text worth
// matching (Terms), and a schema's vocabulary, made once for the schemas
// linked last (VocabularyOf).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"

namespace querypilot::vocab {

// A word as linking compares it: its singular ("witnesses" -> witness,
// "categories" -> category) and its stem, the singular with a common suffix
// off ("manufacturer", "manufacture" -> manufactur; "teaching", "teacher" ->
// teach), never shorter than three letters.
struct Term {
  std::string word, stem;
};
Term MakeTerm(std::string w);

// How alike two terms are: 1 the same word, 0.8 the same stem, 0.6 one
// spelling of the other (a long shared beginning, "nation"/"nationality";
// one edit between long words, "colour"/"color"), else 0.
double Alike(const Term& a, const Term& b);

// The terms of the words of a text worth matching, each once, in order:
// words split as IdentifierWords() splits them ("customerName",
// "customer_name"), no stop words, no numbers, no one- or two-letter codes
// ('T', 'F').
std::vector<Term> Terms(std::string_view s);

// What a schema says, as linking reads it: every term once, with how many
// tables carry it, each table's terms, and the foreign-key graph. It depends
// on the schema alone, so it is kept for the schemas linked last (see
// VocabularyOf).
struct Vocabulary {
  struct TableTerms {
    std::vector<size_t> name, note;
    std::vector<std::vector<size_t>> per_column;
  };
  std::vector<Term> words;
  std::vector<double> rarity;                   // per term: log(1 + tables / tables carrying it)
  std::vector<std::vector<size_t>> carried_by;  // per term: the tables carrying it, in order
  std::vector<TableTerms> tables;
  // Per table, its first column's place among all tables' columns; then the total.
  std::vector<size_t> first_column;
  std::vector<std::vector<size_t>> graph;

  explicit Vocabulary(const Schema& schema);
};

// The Vocabulary of `schema`, kept for the four schemas linked last (see
// vocabulary.cpp): a big schema is read once and not at every ask.
std::shared_ptr<const Vocabulary> VocabularyOf(const Schema& schema);

}  // namespace querypilot::vocab
