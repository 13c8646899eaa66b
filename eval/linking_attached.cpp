// EvaluateAttached (eval/linking_eval.h): each database alone, then with
// others attached as distractors.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>

#include "eval/linking_eval.h"
#include "eval/linking_measure.h"

namespace querypilot::eval {

Result<AttachedReport> EvaluateAttached(const std::vector<Question>& questions,
                                        const LinkingSpec& spec) {
  std::map<std::string, std::string> paths;  // db_id -> file
  std::map<std::string, std::vector<const Question*>> by_database;
  for (const Question& q : questions) {
    paths[q.db_id] = q.db_path;
    if (spec.half.empty() || DatabaseHalf(q.db_id) == spec.half) by_database[q.db_id].push_back(&q);
  }
  // Distractors: the databases that follow by CRC-32, a fixed choice that
  // no rule can depend on.
  std::vector<std::pair<uint32_t, std::string>> ring;
  for (const auto& [id, path] : paths) ring.emplace_back(Crc32(id), id);
  std::sort(ring.begin(), ring.end());
  AttachedReport report;
  size_t show = spec.show;
  report.points.resize(spec.budgets.size());
  for (size_t b = 0; b < spec.budgets.size(); ++b) report.points[b].budget = spec.budgets[b];
  for (const auto& [id, qs] : by_database) {
    sqlite3* db = OpenLinked(paths[id]);
    if (!db) return Status::Internal("cannot open " + paths[id]);
    std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
    ++report.databases;
    Knowledge alone;
    if (Status st = Know(db, &alone); !st.ok()) return st;
    std::vector<GoldQuestion> gold;
    for (const Question* q : qs) {
      GoldQuestion g;
      if (!ReadGold(db, *alone.schema, q->AskText(), q->gold_sql, &g)) {
        ++report.gold_unreadable;
        continue;
      }
      gold.push_back(std::move(g));
    }
    std::vector<std::vector<double>> alone_tokens(gold.size());
    for (size_t i = 0; i < gold.size(); ++i) {
      std::vector<LinkingFigures*> f;
      for (AttachedPoint& p : report.points) f.push_back(&p.alone);
      Measure(alone, gold[i], spec.budgets, f, &alone_tokens[i]);
    }
    size_t at = 0;
    while (ring[at].second != id) ++at;
    for (size_t k = 1; k <= spec.attach && k < ring.size(); ++k) {
      const std::string& other = ring[(at + k) % ring.size()].second;
      char* sql = sqlite3_mprintf("ATTACH %Q AS %Q", ("file:" + paths[other] + "?mode=ro").c_str(),
                                  other.c_str());
      Status st = ExecScript(db, sql);
      sqlite3_free(sql);
      if (!st.ok()) return st;
    }
    Knowledge attached;
    if (Status st = Know(db, &attached); !st.ok()) return st;
    for (size_t i = 0; i < gold.size(); ++i) {
      std::vector<LinkingFigures*> f;
      for (AttachedPoint& p : report.points) f.push_back(&p.attached);
      std::vector<double> tokens;
      Measure(attached, gold[i], spec.budgets, f, &tokens, &show);
      for (size_t b = 0; b < tokens.size(); ++b) {
        report.points[b].ratio.push_back(tokens[b] / std::max(1.0, alone_tokens[i][b]));
      }
    }
  }
  return report;
}

void PrintAttached(std::ostream& out, const AttachedReport& r, const LinkingSpec& spec) {
  fmt::print(out, "{} databases{}, each alone and with {} others attached\n", r.databases,
             spec.half.empty() ? "" : " of half " + spec.half, spec.attach);
  if (r.gold_unreadable)
    fmt::print(out, "gold SQL that did not prepare (not counted): {}\n", r.gold_unreadable);
  fmt::print(
      out,
      "| budget | setting | questions | gold tables kept | literals hinted in their column | "
      "of them matchable | median prompt tok | p90 prompt tok | median x alone | p90 x alone | "
      "median link us | p95 link us |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const AttachedPoint& p : r.points) {
    for (const auto& [name, f] : {std::pair<const char*, const LinkingFigures*>{"alone", &p.alone},
                                  {"attached", &p.attached}}) {
      const bool attached = std::string_view(name) == "attached";
      fmt::print(out,
                 "| {} | {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {} | {} | {:.0f} | {:.0f} |\n",
                 p.budget, name, f->questions, LinkShare(f->gold_kept, f->questions),
                 LinkShare(f->literals_hinted, f->naming_literals),
                 LinkShare(f->matchable_hinted, f->matchable_literals), LinkMedian(f->tokens),
                 LinkPercentile(f->tokens, 0.9),
                 attached ? fmt::format("{:.2f}", LinkMedian(p.ratio)) : "",
                 attached ? fmt::format("{:.2f}", LinkPercentile(p.ratio, 0.9)) : "",
                 LinkMedian(f->link_us), LinkPercentile(f->link_us, 0.95));
    }
  }
  fmt::print(
      out,
      "gold tables kept: every table the gold SQL reads is in the prompt; literals hinted: of "
      "the questions whose gold SQL compares a column with a value the question names (and "
      "the column holds), those with every such value hinted in that column; matchable: those "
      "whose values are of two letters or more and not a stop word alone ('F', 'yes'), which the "
      "value lookup never matches; prompt tok: the "
      "schema part and the value hints (characters / 4); x alone: per question, against the "
      "same question on its database alone (median x alone: the median of these ratios); link "
      "us: ranking the hints and linking (RankHintsFor and LinkSchema), microseconds\n");
}

}  // namespace querypilot::eval
