#include "agent/knowledge/linking.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "agent/base/text.h"
#include "agent/sql/sqlrefs.h"

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

// A table's columns in the order a cut keeps them: its keys (primary key and
// foreign-key columns) first, then the columns the question names (by their
// words or their descriptions'), then the rest, each group in table order.
std::vector<size_t> ColumnPriority(const TableInfo& t, const std::set<std::string>& question) {
  std::vector<size_t> keys, named, rest;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const ColumnInfo& c = t.columns[i];
    bool key = c.primary_key || std::any_of(t.foreign_keys.begin(), t.foreign_keys.end(),
                                            [&](const ForeignKeyInfo& fk) {
                                              return text::EqualsIgnoreCase(fk.from_column, c.name);
                                            });
    std::set<std::string> words;
    for (const auto& w : IdentifierWords(c.name)) words.insert(w);
    for (const auto& w : NoteWords(c.note)) words.insert(w);
    (key ? keys : Shared(words, question) > 0 ? named : rest).push_back(i);
  }
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
std::string RenderCut(const TableInfo& t, const std::set<std::string>& question, size_t budget) {
  const std::vector<size_t> order = ColumnPriority(t, question);
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
      if (text::EqualsIgnoreCase(h.table, t.name) &&
          (h.database.empty() || text::EqualsIgnoreCase(h.database, t.database)))
        score += 4.0;
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
  const std::set<std::string> question_words = QuestionWords(question);
  // Tables shown cut to their columns that fit, by index.
  std::map<size_t, std::string> cut;
  // The best table is shown even when it alone exceeds the budget: cut to the
  // columns that fit.
  auto not_shown = [&](size_t count) {
    return fmt::format(
        "/* {} more tables are not shown; ask for what you need by name if these are not enough "
        "*/\n",
        count);
  };
  const size_t trailer = EstimateTokens(not_shown(n));
  auto add_cut = [&](size_t i) {
    cut[i] = RenderCut(schema.tables[i], question_words,
                       budget_tokens > trailer ? budget_tokens - trailer : 1);
    kept[i] = true;
    used = EstimateTokens(cut[i]);
  };
  for (const TableScore& ts : ranked) {
    if (ts.score <= 0) break;
    size_t i = index_of(ts.table);
    if (kept[i]) continue;
    std::vector<size_t> group{i};
    for (size_t p : PathTo(graph, i, kept, 3)) group.push_back(p);
    if (!try_add(group) && !try_add({i}) && used == 0) add_cut(i);
  }
  // 1b. A question that names no table's words ("what is in here?") still
  //     gets tables: in rank order (schema order, all tied) while they fit,
  //     and the first one at least, cut to fit. A prompt with no table could
  //     only be answered by guessing.
  if (used == 0) {
    for (const TableScore& ts : ranked) {
      size_t i = index_of(ts.table);
      if (!try_add({i}) && used == 0) add_cut(i);
    }
  }
  // 2. Their direct neighbours (lookup tables, link tables), best ranked first.
  std::vector<size_t> neighbours;
  for (const TableScore& ts : ranked) {
    size_t i = index_of(ts.table);
    if (kept[i]) continue;
    bool next_to_kept =
        std::any_of(graph[i].begin(), graph[i].end(), [&](size_t j) { return kept[j]; });
    if (next_to_kept) neighbours.push_back(i);
  }
  for (size_t i : neighbours) try_add({i});
  for (size_t i = 0; i < n; ++i) {
    if (kept[i]) {
      out.kept.push_back(&schema.tables[i]);
      auto c = cut.find(i);
      out.rendered += c != cut.end() ? c->second : RenderTable(schema.tables[i]);
    }
  }
  out.pruned = true;
  if (out.kept.size() < n) out.rendered += not_shown(n - out.kept.size());
  out.tokens = EstimateTokens(out.rendered);
  return out;
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
