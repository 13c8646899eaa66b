#include "agent/knowledge/linking.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include <fmt/format.h>

#include "agent/sql/sqlrefs.h"
#include "agent/base/text.h"

namespace querypilot {
namespace {

std::set<std::string> QuestionWords(std::string_view question) {
  std::set<std::string> out;
  for (const std::string& w : IdentifierWords(question)) {
    if (!text::IsStopWord(w)) out.insert(w);
  }
  return out;
}

// The words of a note worth matching: no stop words, no one- or two-letter
// codes ('T', 'F').
std::set<std::string> NoteWords(std::string_view note) {
  std::set<std::string> out = QuestionWords(note);
  std::erase_if(out, [](const std::string& w) { return w.size() < 3; });
  return out;
}

size_t Shared(const std::set<std::string>& words, const std::set<std::string>& question) {
  size_t n = 0;
  for (const auto& w : words) n += question.count(w) && !text::IsStopWord(w);
  return n;
}

// Undirected foreign-key graph over table indexes.
std::vector<std::vector<size_t>> FkGraph(const Schema& schema) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < schema.tables.size(); ++i) index[text::Lower(schema.tables[i].name)] = i;
  std::vector<std::vector<size_t>> g(schema.tables.size());
  for (size_t i = 0; i < schema.tables.size(); ++i) {
    for (const ForeignKeyInfo& fk : schema.tables[i].foreign_keys) {
      auto it = index.find(text::Lower(fk.to_table));
      if (it == index.end() || it->second == i) continue;
      g[i].push_back(it->second);
      g[it->second].push_back(i);
    }
  }
  return g;
}

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

}  // namespace

size_t EstimateTokens(std::string_view text) { return (text.size() + 3) / 4; }

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
  const std::set<std::string> q = QuestionWords(question);
  std::vector<TableScore> out;
  for (const TableInfo& t : schema.tables) {
    double score = 3.0 * Shared(IdentifierWords(t.name), q);
    std::set<std::string> column_words;
    for (const ColumnInfo& c : t.columns) {
      for (const auto& w : IdentifierWords(c.name)) column_words.insert(w);
      // A user's description of the column ("order status"): its words
      // count as the column's own.
      for (const auto& w : NoteWords(c.note)) column_words.insert(w);
    }
    score += 1.0 * Shared(column_words, q);
    // A description of the table counts like its name, at most twice.
    score += 3.0 * static_cast<double>(std::min<size_t>(Shared(NoteWords(t.note), q), 2));
    for (const ValueHint& h : hints) {
      if (text::EqualsIgnoreCase(h.table, t.name) && (h.database.empty() || text::EqualsIgnoreCase(h.database, t.database))) score += 4.0;
    }
    out.push_back({&t, score});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const TableScore& a, const TableScore& b) { return a.score > b.score; });
  return out;
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
  const auto graph = FkGraph(schema);
  std::vector<bool> kept(n, false);
  size_t used = 0;
  auto index_of = [&](const TableInfo* t) { return static_cast<size_t>(t - schema.tables.data()); };
  auto try_add = [&](std::vector<size_t> group) {
    size_t extra = 0;
    for (size_t i : group) extra += kept[i] ? 0 : cost[i];
    if (used + extra > budget_tokens) return false;
    for (size_t i : group) {
      if (!kept[i]) used += cost[i];
      kept[i] = true;
    }
    return true;
  };
  // 1. Tables the question points at, best first, each joined to those kept
  //    along the shortest foreign-key path.
  const std::vector<TableScore> ranked = RankTables(schema, question, hints);
  for (const TableScore& ts : ranked) {
    if (ts.score <= 0) break;
    size_t i = index_of(ts.table);
    if (kept[i]) continue;
    std::vector<size_t> group{i};
    for (size_t p : PathTo(graph, i, kept, 3)) group.push_back(p);
    if (!try_add(group) && !try_add({i}) && used == 0) {
      kept[i] = true;  // the best table is shown even when it alone exceeds the budget
      used = cost[i];
    }
  }
  // 2. Their direct neighbours (lookup tables, link tables), best ranked first.
  std::vector<size_t> neighbours;
  for (const TableScore& ts : ranked) {
    size_t i = index_of(ts.table);
    if (kept[i]) continue;
    bool next_to_kept = std::any_of(graph[i].begin(), graph[i].end(), [&](size_t j) { return kept[j]; });
    if (next_to_kept) neighbours.push_back(i);
  }
  for (size_t i : neighbours) try_add({i});
  for (size_t i = 0; i < n; ++i) {
    if (kept[i]) {
      out.kept.push_back(&schema.tables[i]);
      out.rendered += RenderTable(schema.tables[i]);
    }
  }
  out.pruned = true;
  out.rendered += fmt::format(
      "/* {} more tables are not shown; ask for what you need by name if these are not enough */\n",
      n - out.kept.size());
  out.tokens = EstimateTokens(out.rendered);
  return out;
}

std::vector<const TableInfo*> TablesToWiden(const Schema& schema,
                                            const std::vector<const TableInfo*>& kept,
                                            std::string_view missing, size_t limit) {
  std::vector<const TableInfo*> out;
  if (missing.empty()) return out;
  auto is_kept = [&](const TableInfo* t) { return std::find(kept.begin(), kept.end(), t) != kept.end(); };
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
