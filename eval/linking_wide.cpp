// EvaluateWide (eval/linking_eval.h): generated wide schemas whose tables
// share column names and values.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>

#include "eval/linking_domains.h"
#include "eval/linking_eval.h"
#include "eval/linking_measure.h"

namespace querypilot::eval {
namespace {

// "order_items" -> "order items"; singular when `one` ("order item").
std::string Spoken(std::string name, bool one) {
  std::replace(name.begin(), name.end(), '_', ' ');
  if (one && name.size() > 3) {
    if (name.ends_with("ies")) {
      name = name.substr(0, name.size() - 3) + "y";
    } else if (name.ends_with("ches") || name.ends_with("shes") || name.ends_with("sses") ||
               name.ends_with("xes")) {
      name.resize(name.size() - 2);
    } else if (name.ends_with("s") && !name.ends_with("ss")) {
      name.pop_back();
    }
  }
  return name;
}

}  // namespace

Result<std::vector<WidePoint>> EvaluateWide(const LinkingSpec& spec) {
  static const char* kStatuses[] = {"paid",   "open",      "active",  "pending",
                                    "closed", "cancelled", "overdue", "draft"};
  std::vector<WidePoint> points;
  size_t show = spec.show;
  for (size_t tables : spec.wide) {
    sqlite3* db = nullptr;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
      return Status::Internal("cannot open a memory database");
    std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
    struct Made {
      std::string table, domain, entity, hub;
      std::vector<std::string> statuses;
    };
    std::vector<Made> made;
    std::map<std::string, int> entity_uses;
    for (size_t d = 0; made.size() < tables; ++d) {
      if (d == WideDomains().size())
        return Status::InvalidArgument(fmt::format("at most {} tables", 10 * d));
      const auto& [domain, entities] = WideDomains()[d];
      for (size_t e = 0; e < entities.size() && made.size() < tables; ++e) {
        Made m{fmt::format("{}_{}", domain, entities[e]),
               domain,
               entities[e],
               e > 0 ? fmt::format("{}_{}", domain, entities[0]) : "",
               {}};
        ++entity_uses[entities[e]];
        // Three or four statuses each, 'paid' among them in about half of the tables.
        for (size_t s = 0; s < 8; ++s) {
          if ((made.size() * 7 + s * 3) % 8 < 4) m.statuses.push_back(kStatuses[s]);
        }
        std::string cols =
            "id INTEGER PRIMARY KEY, name TEXT NOT NULL, code TEXT, status TEXT, amount REAL, "
            "created_at TEXT, notes TEXT";
        if (!m.hub.empty()) cols += fmt::format(", {0}_id INTEGER REFERENCES {0}(id)", m.hub);
        if (Status st = ExecScript(db, fmt::format("CREATE TABLE {} ({})", m.table, cols));
            !st.ok())
          return st;
        for (int r = 1; r <= 12; ++r) {
          std::string values = fmt::format(
              "{}, '{} {}', '{}-{:04}', '{}', {}.5, '2024-0{}-1{}', NULL", r,
              Spoken(entities[e], true), r, domain, r * 7, m.statuses[r % m.statuses.size()],
              r * 100 + made.size(), r % 9 + 1, r % 10);
          if (!m.hub.empty()) values += fmt::format(", {}", r % 5 + 1);
          if (Status st =
                  ExecScript(db, fmt::format("INSERT INTO {} VALUES ({})", m.table, values));
              !st.ok())
            return st;
        }
        made.push_back(std::move(m));
      }
    }
    Knowledge k;
    if (Status st = Know(db, &k); !st.ok()) return st;
    std::vector<WidePoint> here(spec.budgets.size());
    for (size_t b = 0; b < here.size(); ++b) {
      here[b].tables = tables;
      here[b].budget = spec.budgets[b];
      here[b].full_tokens = EstimateTokens(k.schema->rendered);
    }
    for (size_t i = 0; i < made.size(); ++i) {
      const Made& m = made[i];
      const std::string status = m.statuses[i % m.statuses.size()];
      // The domain's word where the entity alone is not one table's.
      const std::string many =
          (entity_uses[m.entity] > 1 ? std::string(m.domain) + " " : "") + Spoken(m.entity, false);
      const std::string one =
          (entity_uses[m.entity] > 1 ? std::string(m.domain) + " " : "") + Spoken(m.entity, true);
      std::string question, sql;
      switch (i % 3) {
        case 0:
          question = fmt::format("What is the total amount of {} {}?", status, many);
          sql = fmt::format("SELECT sum(amount) FROM {} WHERE status = '{}'", m.table, status);
          break;
        case 1:
          question = fmt::format("How many {} has status {}?", one, status);
          sql = fmt::format("SELECT count(*) FROM {} WHERE status = '{}'", m.table, status);
          break;
        default:
          if (!m.hub.empty()) {
            question = fmt::format("List the codes of {} {} with the name of their {}.", status,
                                   many, Spoken(m.hub.substr(m.domain.size() + 1), true));
            sql = fmt::format(
                "SELECT t.code, h.name FROM {} AS t JOIN {} AS h ON t.{}_id = h.id WHERE t.status "
                "= '{}'",
                m.table, m.hub, m.hub, status);
          } else {
            question = fmt::format("List the codes of the {} {}.", status, many);
            sql = fmt::format("SELECT code FROM {} WHERE status = '{}'", m.table, status);
          }
      }
      GoldQuestion g;
      if (!ReadGold(db, *k.schema, question, sql, &g))
        return Status::Internal("generated gold did not prepare: " + sql);
      std::vector<LinkingFigures*> f;
      for (WidePoint& p : here) f.push_back(&p.figures);
      std::vector<double> tokens;
      Measure(k, g, spec.budgets, f, &tokens, &show);
      for (size_t b = 0; b < tokens.size(); ++b)
        here[b].within_half += tokens[b] * 2 <= here[b].full_tokens;
    }
    points.insert(points.end(), here.begin(), here.end());
  }
  return points;
}

void PrintWide(std::ostream& out, const std::vector<WidePoint>& points) {
  fmt::print(
      out,
      "| tables | budget | questions | gold tables kept | value hinted in the question's table | "
      "whole schema tok | median prompt tok | max prompt tok | prompts within half | median link "
      "us | p95 link us |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const WidePoint& p : points) {
    const LinkingFigures& f = p.figures;
    fmt::print(out, "| {} | {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {} | {:.0f} | {:.0f} |\n",
               p.tables, p.budget, f.questions, LinkShare(f.gold_kept, f.questions),
               LinkShare(f.literals_hinted, f.naming_literals), p.full_tokens, LinkMedian(f.tokens),
               LinkPercentile(f.tokens, 1.0), LinkShare(p.within_half, f.questions),
               LinkMedian(f.link_us), LinkPercentile(f.link_us, 0.95));
  }
  fmt::print(
      out,
      "generated schemas: domains of ten tables (nine referring to the first), every table with "
      "id, name, code, status, amount, created_at, notes; 'paid' a status of about half of them; "
      "one question per table naming it and a status\n");
}

}  // namespace querypilot::eval
