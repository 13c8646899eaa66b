#include "agent/knowledge/linking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "agent/base/text.h"
#include "agent/base/thread_annotations.h"
#include "agent/knowledge/vocabulary.h"
#include "agent/sql/sqlrefs.h"

namespace querypilot {
namespace {

using vocab::Alike;
using vocab::Term;
using vocab::Terms;
using vocab::Vocabulary;
using vocab::VocabularyOf;

// What ties each table of a schema to a question: the question's terms
// against each table's vocabulary (name, columns, descriptions), weighted by
// how few tables carry them, plus the values hinted in it, plus a share of
// its foreign-key neighbours' ties.
class Relevance {
 public:
  Relevance(const Schema& schema, std::string_view question, const std::vector<ValueHint>& hints)
      : vocabulary_(VocabularyOf(schema)) {
    const size_t n = schema.tables.size();
    const std::vector<Term> question_terms = Terms(question);
    const std::vector<Term>& words = vocabulary_->words;
    const std::vector<double>& rarity = vocabulary_->rarity;
    const std::vector<Vocabulary::TableTerms>& table_terms = vocabulary_->tables;
    // Each question term against the vocabulary: how alike, and how rare.
    // weight[q][v]: what vocabulary term v says of question term q; most are
    // 0, and `hit` marks the terms that say anything.
    const size_t terms = question_terms.size(), vocabulary = words.size();
    std::vector<double> weights(terms * vocabulary, 0.0);
    std::vector<bool> hit(vocabulary, false);
    for (size_t q = 0; q < terms; ++q) {
      for (size_t v = 0; v < vocabulary; ++v) {
        const double w = Alike(question_terms[q], words[v]) * rarity[v];
        weights[q * vocabulary + v] = w;
        if (w > 0) hit[v] = true;
      }
    }
    auto weight = [&](size_t q, size_t v) { return weights[q * vocabulary + v]; };
    auto best = [&](size_t q, const std::vector<size_t>& of) {
      double b = 0;
      for (size_t v : of) b = std::max(b, weight(q, v));
      return b;
    };
    // A name's last word is what its rows are ("hotel_guests" lists
    // guests): the question naming it says more than naming another word.
    auto best_in_name = [&](size_t q, const std::vector<size_t>& of) {
      double b = 0;
      for (size_t k = 0; k < of.size(); ++k) {
        b = std::max(b, weight(q, of[k]) * (k + 1 == of.size() ? 1.0 : 0.75));
      }
      return b;
    };
    auto any_hit = [&](const std::vector<size_t>& of) {
      return std::any_of(of.begin(), of.end(), [&](size_t v) { return hit[v]; });
    };
    own_.assign(n, 0.0);
    column_.assign(vocabulary_->first_column.back(), 0.0);
    std::map<std::string, std::vector<double>> per_term;  // database -> best tie per question term
    // Only the tables that carry a term the question ties to: a schema of
    // thousands of tables has few.
    std::vector<size_t> tied;
    for (size_t v = 0; v < vocabulary; ++v) {
      if (hit[v])
        tied.insert(tied.end(), vocabulary_->carried_by[v].begin(),
                    vocabulary_->carried_by[v].end());
    }
    std::sort(tied.begin(), tied.end());
    tied.erase(std::unique(tied.begin(), tied.end()), tied.end());
    std::vector<bool> column_hit;
    for (size_t i : tied) {
      const Vocabulary::TableTerms& tt = table_terms[i];
      const bool name_hit = any_hit(tt.name) || any_hit(tt.note);
      column_hit.assign(tt.per_column.size(), false);
      for (size_t c = 0; c < tt.per_column.size(); ++c) column_hit[c] = any_hit(tt.per_column[c]);
      double* column = column_.data() + vocabulary_->first_column[i];
      std::vector<double>& covered = per_term[schema.tables[i].database];
      covered.resize(terms, 0.0);
      double named = 0, in_columns = 0;
      for (size_t q = 0; q < terms; ++q) {
        // A term the table's name (or description) carries weighs three
        // times one only a column carries.
        const double in_name = name_hit ? std::max(best_in_name(q, tt.name), best(q, tt.note)) : 0;
        double in_column = 0;
        for (size_t c = 0; c < tt.per_column.size(); ++c) {
          if (!column_hit[c]) continue;
          const double w = best(q, tt.per_column[c]);
          column[c] += w;
          in_column = std::max(in_column, w);
        }
        covered[q] = std::max(covered[q], std::max(3.0 * in_name, in_column));
        if (3.0 * in_name >= in_column) {
          named += in_name;
        } else {
          in_columns += in_column;
        }
      }
      // A name the question says all of ("sales invoices" for
      // sales_invoices) says more than one it says a part of
      // (sales_invoice_lines).
      size_t said = 0;
      for (size_t v : tt.name) said += hit[v];
      const double coverage =
          tt.name.empty() ? 1.0 : static_cast<double>(said) / static_cast<double>(tt.name.size());
      own_[i] = 3.0 * named * (0.5 + 0.5 * coverage) + in_columns;
    }
    for (const auto& [database, best_per_term] : per_term) {
      double& c = coverage_[database];
      for (double b : best_per_term) c += b;
    }
    // The values the question names: each phrase's columns share its weight,
    // so a value found in one table says more than one found in many.
    std::map<std::string, std::set<size_t>> tables_of_value;
    for (const ValueHint& h : hints) {
      if (const TableInfo* t = Find(schema, h)) {
        tables_of_value[ValueIndex::Key(h.value)].insert(
            static_cast<size_t>(t - schema.tables.data()));
      }
    }
    for (const auto& [value, in] : tables_of_value) {
      std::set<std::string> databases;
      for (size_t i : in) {
        own_[i] += 4.0 / static_cast<double>(in.size());
        databases.insert(schema.tables[i].database);
      }
      for (const std::string& d : databases)
        coverage_[d] += 4.0 / static_cast<double>(databases.size());
    }
    // A share of the best neighbour's ties: a lookup or link table is wanted
    // with the tables it joins.
    const auto& graph = vocabulary_->graph;
    score_ = own_;
    for (size_t i = 0; i < n; ++i) {
      double neighbour = 0;
      for (size_t j : graph[i]) neighbour = std::max(neighbour, own_[j]);
      score_[i] += 0.3 * neighbour;
    }
  }

  // The table a hint names, or null.
  static const TableInfo* Find(const Schema& schema, const ValueHint& h) {
    for (const TableInfo& t : schema.tables) {
      if (text::EqualsIgnoreCase(t.name, h.table) &&
          (h.database.empty() || text::EqualsIgnoreCase(h.database, t.database)))
        return &t;
    }
    return nullptr;
  }

  double own(size_t i) const { return own_[i]; }      // its own ties
  double score(size_t i) const { return score_[i]; }  // with its neighbours'
  double column(size_t i, size_t c) const { return column_[vocabulary_->first_column[i] + c]; }
  // How much of the question a database's tables say: per question term, the
  // best tie of any of its tables, summed, and the values found in it.
  const std::map<std::string, double>& coverage() const { return coverage_; }
  const std::vector<std::vector<size_t>>& graph() const { return vocabulary_->graph; }

 private:
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::vector<double> own_, score_;
  std::vector<double> column_;  // per column of every table, at Vocabulary::first_column
  std::map<std::string, double> coverage_;
};

// The tables on a shortest path from `from` to any table in `kept`,
// excluding both ends; empty when none is within `max_hops`.
std::vector<size_t> PathTo(const std::vector<std::vector<size_t>>& g, size_t from,
                           const std::vector<bool>& kept, size_t max_hops) {
  std::vector<long> prev(g.size(), -2);
  std::deque<std::pair<size_t, size_t>> queue{{from, 0}};
  prev[from] = -1;
  while (!queue.empty()) {
    auto [at, hops] = queue.front();
    queue.pop_front();
    if (at != from && kept[at]) {
      std::vector<size_t> path;
      for (long p = prev[at]; p >= 0 && static_cast<size_t>(p) != from; p = prev[p]) {
        path.push_back(static_cast<size_t>(p));
      }
      return path;
    }
    if (hops == max_hops) continue;
    for (size_t next : g[at]) {
      if (prev[next] != -2) continue;
      prev[next] = static_cast<long>(at);
      queue.push_back({next, hops + 1});
    }
  }
  return {};
}

// A table's columns in the order a cut keeps them: its keys (primary key and
// foreign-key columns) first, then the columns the question names (by their
// words or their descriptions'), then the rest, each group in table order.
std::vector<size_t> ColumnPriority(const TableInfo& t, const Relevance& relevance, size_t table) {
  std::vector<size_t> keys, named, rest;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const ColumnInfo& c = t.columns[i];
    bool key = c.primary_key || std::any_of(t.foreign_keys.begin(), t.foreign_keys.end(),
                                            [&](const ForeignKeyInfo& fk) {
                                              return text::EqualsIgnoreCase(fk.from_column, c.name);
                                            });
    (key ? keys : relevance.column(table, i) > 0 ? named : rest).push_back(i);
  }
  // The columns the question names most closely first.
  std::stable_sort(named.begin(), named.end(), [&](size_t a, size_t b) {
    return relevance.column(table, a) > relevance.column(table, b);
  });
  keys.insert(keys.end(), named.begin(), named.end());
  keys.insert(keys.end(), rest.begin(), rest.end());
  return keys;
}

// `t` with the first `count` columns of `order`, in table order; its foreign
// keys and sample rows cut to match.
TableInfo WithColumns(const TableInfo& t, const std::vector<size_t>& order, size_t count) {
  std::vector<size_t> keep(order.begin(), order.begin() + static_cast<long>(count));
  std::sort(keep.begin(), keep.end());
  TableInfo out = t;
  out.columns.clear();
  for (size_t i : keep) out.columns.push_back(t.columns[i]);
  std::erase_if(out.foreign_keys,
                [&](const ForeignKeyInfo& fk) { return !out.FindColumn(fk.from_column); });
  for (size_t r = 0; r < out.sample_rows.size(); ++r) {
    std::vector<std::string> row;
    for (size_t i : keep) {
      if (i < t.sample_rows[r].size()) row.push_back(t.sample_rows[r][i]);
    }
    out.sample_rows[r] = std::move(row);
  }
  return out;
}

// `t` rendered with as many columns as fit `budget` tokens, in
// ColumnPriority order, and a comment saying how many are not shown; at
// least one column, whatever the budget.
std::string RenderCut(const TableInfo& t, const Relevance& relevance, size_t table, size_t budget) {
  const std::vector<size_t> order = ColumnPriority(t, relevance, table);
  auto render = [&](size_t count) {
    std::string out = RenderTable(WithColumns(t, order, count));
    if (count < order.size()) {
      out += fmt::format(
          "/* {} more columns of {} are not shown: its keys and the columns the question names "
          "come "
          "first */\n",
          order.size() - count, t.DisplayName());
    }
    return out;
  };
  if (order.empty()) return RenderTable(t);
  // The largest count that fits: a rendering grows with its columns.
  size_t lo = 1, hi = order.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (EstimateTokens(render(mid)) <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return render(lo);
}

}  // namespace

size_t EstimateTokens(std::string_view text) {
  return (text.size() + 3) / 4;
}

void RenderInto(Schema* schema) {
  schema->rendered.clear();
  schema->table_tokens.clear();
  for (const TableInfo& t : schema->tables) {
    std::string table = RenderTable(t);
    schema->table_tokens.push_back(EstimateTokens(table));
    schema->rendered += table;
  }
}

std::vector<TableScore> RankTables(const Schema& schema, std::string_view question,
                                   const std::vector<ValueHint>& hints) {
  const Relevance relevance(schema, question, hints);
  std::vector<TableScore> out;
  for (size_t i = 0; i < schema.tables.size(); ++i) {
    out.push_back({&schema.tables[i], relevance.score(i)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const TableScore& a, const TableScore& b) { return a.score > b.score; });
  return out;
}

HintRelevance RankHintsFor(const Schema& schema, std::string_view question) {
  const Relevance relevance(schema, question, {});
  // What the function needs of each table anything ties to the question,
  // by its lower-case name: its database, its score, its columns' scores.
  struct Tied {
    std::string database;
    double score = 0;
    std::vector<std::pair<std::string, double>> columns;  // those the question names
  };
  auto tied = std::make_shared<std::unordered_multimap<std::string, Tied>>();
  for (size_t i = 0; i < schema.tables.size(); ++i) {
    if (relevance.score(i) <= 0) continue;
    const TableInfo& t = schema.tables[i];
    Tied entry{t.database, relevance.score(i), {}};
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (relevance.column(i, c) > 0)
        entry.columns.emplace_back(t.columns[c].name, relevance.column(i, c));
    }
    tied->emplace(text::Lower(t.name), std::move(entry));
  }
  return [tied](const ValueHint& h) {
    double best = 0;
    auto [from, to] = tied->equal_range(text::Lower(h.table));
    for (auto it = from; it != to; ++it) {
      const Tied& t = it->second;
      if (!h.database.empty() && !text::EqualsIgnoreCase(h.database, t.database)) continue;
      // The table's ties first; among a table's columns, the one the
      // question names.
      double column = 0;
      for (const auto& [name, score] : t.columns) {
        if (text::EqualsIgnoreCase(name, h.column)) column = score;
      }
      best = std::max(best, t.score + 0.5 * column);
    }
    return best;
  };
}

LinkedSchema LinkSchema(const Schema& schema, std::string_view full_rendered,
                        std::string_view question, const std::vector<ValueHint>& hints,
                        size_t budget_tokens) {
  LinkedSchema out;
  out.full_tokens = EstimateTokens(full_rendered);
  if (budget_tokens == 0 || out.full_tokens <= budget_tokens) {
    for (const TableInfo& t : schema.tables) out.kept.push_back(&t);
    out.rendered = std::string(full_rendered);
    out.tokens = out.full_tokens;
    return out;
  }
  const size_t n = schema.tables.size();
  std::vector<size_t> cost = schema.table_tokens;
  if (cost.size() != n) {  // a Schema that SchemaCache did not fill
    cost.resize(n);
    for (size_t i = 0; i < n; ++i) cost[i] = EstimateTokens(RenderTable(schema.tables[i]));
  }
  const Relevance relevance(schema, question, hints);
  const auto& graph = relevance.graph();
  // Most relevant first; ties keep schema order.
  std::vector<size_t> ranked(n);
  for (size_t i = 0; i < n; ++i) ranked[i] = i;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return relevance.score(a) > relevance.score(b); });
  std::vector<bool> kept(n, false);
  std::vector<size_t> order;  // kept tables, in the order they were chosen
  size_t used = 0;
  auto not_shown = [&](size_t count) {
    return fmt::format(
        "/* {} more tables are not shown; ask for what you need by name if these are not enough "
        "*/\n",
        count);
  };
  const size_t trailer = EstimateTokens(not_shown(n));
  const size_t budget = budget_tokens > trailer ? budget_tokens - trailer : 1;
  auto try_add = [&](const std::vector<size_t>& group) {
    size_t extra = 0;
    for (size_t i : group) extra += kept[i] ? 0 : cost[i];
    if (used + extra > budget) return false;
    for (size_t i : group) {
      if (kept[i]) continue;
      used += cost[i];
      kept[i] = true;
      order.push_back(i);
    }
    return true;
  };
  // Tables shown cut to their columns that fit, by index.
  std::map<size_t, std::string> cut;
  auto add_cut = [&](size_t i) {
    cut[i] = RenderCut(schema.tables[i], relevance, i, budget);
    kept[i] = true;
    order.push_back(i);
    used = EstimateTokens(cut[i]);
  };
  double top = 0;  // the best table's own ties
  for (size_t i = 0; i < n; ++i) top = std::max(top, relevance.own(i));
  // Measured on Spider's train databases, each with nine others attached
  // (querypilot-eval linking --attach 9, eval/README.md): a database whose
  // coverage is within 75% of the best one's is as likely meant; a table of
  // the databases shown whole is named at 30% of the best table's ties, one
  // of another database at 50% (below that, what it shares with the question
  // is a word every database has).
  constexpr double kCloseDatabase = 0.75, kNamed = 0.3, kNamedElsewhere = 0.5;
  // 1. The database the question points at, whole, when the schema spans
  //    several: its words and values cover the question's best. A
  //    database's tables are made to be read together, whether or not its
  //    keys are declared.
  std::set<std::string> focus;  // databases shown whole
  std::map<std::string, double> coverage = relevance.coverage();
  const std::string* database = nullptr;  // every database, once for each run of its tables
  for (const TableInfo& t : schema.tables) {
    if (!database || *database != t.database) coverage[t.database] += 0;
    database = &t.database;
  }
  if (coverage.size() > 1 && top > 0) {
    std::vector<std::pair<double, std::string>> databases;
    for (const auto& [database, c] : coverage) databases.emplace_back(-c, database);
    std::sort(databases.begin(), databases.end());
    const double best = -databases[0].first;
    for (const auto& [c, database] : databases) {
      if (-c < kCloseDatabase * best) break;
      std::vector<size_t> group;
      for (size_t i : ranked) {
        if (schema.tables[i].database == database) group.push_back(i);
      }
      if (try_add(group)) focus.insert(database);
    }
  }
  // 2. The tables the question names, best first, each joined to those kept
  //    along the shortest foreign-key path. A table whose ties are a small
  //    share of the best one's (a common column word, a value found in many
  //    tables) is not named.
  for (size_t i : ranked) {
    const bool in_focus = focus.empty() || focus.count(schema.tables[i].database);
    if (relevance.own(i) <= 0 || relevance.own(i) < (in_focus ? kNamed : kNamedElsewhere) * top)
      continue;
    if (kept[i]) continue;
    std::vector<size_t> group{i};
    for (size_t p : PathTo(graph, i, kept, 3)) group.push_back(p);
    if (!try_add(group) && !try_add({i}) && used == 0) add_cut(i);
  }
  // 2b. A question that names no table's words ("what is in here?") still
  //     gets tables: in schema order while they fit, and the first one at
  //     least, cut to fit. A prompt with no table could only be answered by
  //     guessing.
  if (used == 0) {
    for (size_t i = 0; i < n; ++i) {
      if (!try_add({i}) && used == 0) add_cut(i);
    }
  }
  // 3. Direct neighbours of the tables named (lookup tables, link tables),
  //    best ranked first; of the databases shown whole, when there are any.
  const std::vector<size_t> named = order;
  for (size_t i : ranked) {
    if (kept[i]) continue;
    if (!focus.empty() && !focus.count(schema.tables[i].database)) continue;
    bool next_to_named = std::any_of(graph[i].begin(), graph[i].end(), [&](size_t j) {
      return std::find(named.begin(), named.end(), j) != named.end();
    });
    if (next_to_named) try_add({i});
  }
  // Shown most relevant first.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return relevance.score(a) > relevance.score(b); });
  for (size_t i : order) {
    out.kept.push_back(&schema.tables[i]);
    auto c = cut.find(i);
    out.rendered += c != cut.end() ? c->second : RenderTable(schema.tables[i]);
  }
  out.pruned = true;
  if (out.kept.size() < n) out.rendered += not_shown(n - out.kept.size());
  out.tokens = EstimateTokens(out.rendered);
  return out;
}

// Whether `q` may be Alike() a term of a number that ReadsAsNumber accepts
// (as NoteNumbersAsText shows one, '1e5'). Such a term is a run of the
// number's letters and digits: digits and at most one e (what splits it is
// a sign or a point), and of three characters or more, so two of them or
// more are digits; its stem is the same but for a last e. A term alike to
// one holds a digit and: is made of digits and e (same word); has a stem so
// made (same stem); begins with five such characters (a long shared
// beginning); or has one character of another kind, with the shared
// beginning, which ends there, half of it or more (one edit). Where none of
// these holds, it is alike to no such term.
bool MayBeAlikeToANumber(const Term& q) {
  auto numeric = [](char c) { return c == 'e' || std::isdigit(static_cast<unsigned char>(c)); };
  const std::string& w = q.word;
  if (std::none_of(w.begin(), w.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return false;
  if (std::all_of(q.stem.begin(), q.stem.end(), numeric)) return true;
  if (w.size() >= 5 && std::all_of(w.begin(), w.begin() + 5, numeric)) return true;
  const size_t other =
      static_cast<size_t>(std::count_if(w.begin(), w.end(), [&](char c) { return !numeric(c); }));
  if (other == 0) return true;
  if (other == 1) {
    const size_t at = static_cast<size_t>(
        std::find_if(w.begin(), w.end(), [&](char c) { return !numeric(c); }) - w.begin());
    // Alike's one edit: words of five or more, sizes one apart at most, a
    // shared beginning (at most `at` long) of half the shorter.
    if (w.size() + 1 >= 5 && 2 * (at + 1) + 1 >= w.size()) return true;
  }
  return false;
}

bool QuestionMayTieToSampleNotes(std::string_view question) {
  // The words of the notes NoteNumbersAsText writes, both kinds, taken from
  // its own output. The column is named "x" and the number is "1" or
  // "1.5": neither gives a term (Terms keeps no word under three letters,
  // no number).
  static const std::vector<Term> kNoteTerms = [] {
    std::vector<Term> out;
    for (const char* literal : {"'1'", "'1.5'"}) {
      TableInfo t;
      ColumnInfo x;
      x.name = "x";
      x.type = "TEXT";
      t.columns.push_back(x);
      t.sample_rows = {{literal}};
      NoteNumbersAsText(&t);
      for (Term& term : Terms(t.columns[0].note)) out.push_back(std::move(term));
    }
    return out;
  }();
  for (const Term& q : Terms(question)) {
    if (MayBeAlikeToANumber(q)) return true;
    for (const Term& v : kNoteTerms) {
      if (Alike(q, v) > 0) return true;
    }
  }
  return false;
}

std::shared_ptr<const Schema> WithAskTablesQualified(std::shared_ptr<const Schema> schema,
                                                     std::string* note) {
  note->clear();
  if (!schema) return schema;
  // A bare ask is temp.ask, QueryPilot's own (which generated SQL may not
  // read); a user's table of that name is read by its database's name.
  auto named_ask = [](const TableInfo& t) { return text::EqualsIgnoreCase(t.name, "ask"); };
  if (std::none_of(schema->tables.begin(), schema->tables.end(), named_ask)) return schema;
  Schema copy = *schema;
  std::vector<std::string> names;
  for (TableInfo& t : copy.tables) {
    if (!named_ask(t)) continue;
    t.qualified = true;
    names.push_back(PromptIdentifier(t.database) + "." + PromptIdentifier(t.name));
  }
  RenderInto(&copy);
  *note = fmt::format(
      "/* Write {} with {} database name, as shown: a bare ask is QueryPilot's own ask() function, "
      "which SQL "
      "written here may not read. */\n",
      fmt::join(names, ", "), names.size() == 1 ? "its" : "their");
  return std::make_shared<const Schema>(std::move(copy));
}

std::vector<const TableInfo*> TablesToWiden(const Schema& schema,
                                            const std::vector<const TableInfo*>& kept,
                                            std::string_view missing, size_t limit) {
  std::vector<const TableInfo*> out;
  if (missing.empty()) return out;
  auto is_kept = [&](const TableInfo* t) {
    return std::find(kept.begin(), kept.end(), t) != kept.end();
  };
  std::vector<std::string> names;
  for (const TableInfo& t : schema.tables) {
    if (!is_kept(&t)) names.push_back(t.name);
  }
  for (const std::string& name : ClosestNames(missing, names, limit)) {
    if (const TableInfo* t = schema.FindTable(name)) out.push_back(t);
  }
  for (const TableInfo& t : schema.tables) {
    if (out.size() >= limit) break;
    if (!is_kept(&t) && t.FindColumn(missing) &&
        std::find(out.begin(), out.end(), &t) == out.end()) {
      out.push_back(&t);
    }
  }
  return out;
}

}  // namespace querypilot
