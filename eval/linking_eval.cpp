#include "eval/linking_eval.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <set>

#include "agent/base/text.h"
#include "agent/knowledge/descriptions.h"
#include "agent/knowledge/linking.h"
#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "agent/prompt/prompts.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/statement.h"
#include "eval/descriptions.h"
#include "eval/linking_domains.h"
#include "eval/linking_measure.h"

namespace querypilot::eval {
namespace {

// Copies every table (definition and rows) of a dataset database into main.
Status CopyDatabase(sqlite3* db, const std::string& path, size_t* tables) {
  std::string uri = "file:" + path + "?mode=ro";
  char* q = sqlite3_mprintf("ATTACH %Q AS src", uri.c_str());
  Status st = ExecScript(db, q);
  sqlite3_free(q);
  if (!st.ok()) return st;
  std::vector<std::pair<std::string, std::string>> defs;
  {
    Result<Statement> s = Statement::Prepare(db,
                                             "SELECT name, sql FROM src.sqlite_master WHERE type = "
                                             "'table' AND name NOT LIKE 'sqlite_%'");
    if (!s.ok()) return s.status();
    while (s->Step() == SQLITE_ROW) defs.emplace_back(s->ColumnText(0), s->ColumnText(1));
  }
  for (const auto& [name, sql] : defs) {
    if (!ExecScript(db, sql).ok()) continue;  // a name two datasets share: the first one stays
    ++*tables;
    if (st = ExecScript(
            db, fmt::format("INSERT INTO main.{0} SELECT * FROM src.{0}", QuoteIdentifier(name)));
        !st.ok()) {
      return st;
    }
  }
  return ExecScript(db, "DETACH src");
}

// Distractor tables: business domains, ten tables each, linked by foreign
// keys, five rows each, some with labels (colours, genders, countries) that
// also occur in the datasets.
Status AddDistractors(sqlite3* db, size_t count) {
  const DomainTables& kDomains = DistractorDomains();
  static const char* kColours[] = {"Blue", "Green", "Red", "Black", "White", "Gold"};
  static const char* kGenders[] = {"Male", "Female"};
  static const char* kCountries[] = {"USA", "Canada", "United Kingdom", "France", "Japan"};
  static const char* kStatuses[] = {"active", "inactive", "pending", "closed", "archived"};
  size_t made = 0;
  for (size_t round = 0; made < count; ++round) {
    for (const auto& [domain, entities] : kDomains) {
      for (size_t e = 0; e < entities.size() && made < count; ++e) {
        std::string name = round == 0 ? fmt::format("{}_{}", domain, entities[e])
                                      : fmt::format("{}{}_{}", domain, round + 1, entities[e]);
        std::string cols =
            "id INTEGER PRIMARY KEY, name TEXT NOT NULL, code TEXT, status TEXT, "
            "created_at TEXT, amount REAL, notes TEXT";
        const bool colour = made % 3 == 0, gender = made % 4 == 1, country = made % 5 == 2;
        if (colour) cols += ", colour TEXT";
        if (gender) cols += ", gender TEXT";
        if (country) cols += ", country TEXT";
        std::string parent;
        if (e > 0) {
          parent = round == 0 ? fmt::format("{}_{}", domain, entities[0])
                              : fmt::format("{}{}_{}", domain, round + 1, entities[0]);
          cols += fmt::format(", {0}_id INTEGER REFERENCES {0}(id)", parent);
        }
        if (Status st = ExecScript(db, fmt::format("CREATE TABLE {} ({})", name, cols)); !st.ok())
          return st;
        for (int r = 1; r <= 5; ++r) {
          std::string values = fmt::format(
              "{}, '{} {}', '{}-{:04}', '{}', '2024-0{}-1{}', {}.5, NULL", r, entities[e], r,
              domain, r * 7 + made, kStatuses[(r + made) % 5], r, r, r * 100 + made);
          if (colour) values += fmt::format(", '{}'", kColours[(r + made) % 6]);
          if (gender) values += fmt::format(", '{}'", kGenders[r % 2]);
          if (country) values += fmt::format(", '{}'", kCountries[(r + made) % 5]);
          if (e > 0) values += fmt::format(", {}", (r % 5) + 1);
          if (Status st = ExecScript(db, fmt::format("INSERT INTO {} VALUES ({})", name, values));
              !st.ok())
            return st;
        }
        ++made;
      }
    }
  }
  return Status::Ok();
}

int RecordRead(void* user, int action, const char* table, const char*, const char*,
               const char*) noexcept {
  if (action == SQLITE_READ && table && std::string_view(table).rfind("sqlite_", 0) != 0) {
    static_cast<std::set<std::string>*>(user)->insert(text::Lower(table));
  }
  return SQLITE_OK;
}

}  // namespace

Result<LinkingReport> EvaluateLinking(const std::vector<Question>& questions,
                                      const LinkingSpec& spec) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, nullptr) !=
      SQLITE_OK) {
    return Status::Internal("cannot open an in-memory database");
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
  LinkingReport report;
  std::set<std::string> copied;
  for (const Question& q : questions) {
    if (!copied.insert(q.db_path).second) continue;
    if (Status st = CopyDatabase(db, q.db_path, &report.dataset_tables); !st.ok()) return st;
  }
  if (Status st = AddDistractors(db, spec.distractors); !st.ok()) return st;
  if (!spec.db_out.empty()) {
    char* sql = sqlite3_mprintf("VACUUM INTO %Q", spec.db_out.c_str());
    Status st = ExecScript(db, sql);
    sqlite3_free(sql);
    if (!st.ok()) return st;
  }
  Result<Schema> introspected = IntrospectSchema(db, 3);
  if (!introspected.ok()) return introspected.status();
  std::shared_ptr<const Schema> schema =
      std::make_shared<const Schema>(std::move(introspected).value());
  if (spec.descriptions) {
    std::vector<Description> all;
    for (const std::string& path : copied) {
      for (Description& d : LoadDescriptions(path)) all.push_back(std::move(d));
    }
    report.descriptions = all.size();
    schema = WithDescriptions(schema, all);
  }
  const std::string full = RenderSchema(*schema);
  report.tables = schema->tables.size();
  report.full_tokens = EstimateTokens(full);
  // Complete, whatever the machine's speed: a measure of linking, not of
  // how fast values are read (bench/values.py measures that). Read as
  // agent_index() reads it, looked up as an ask looks it up.
  ValueIndexCache values;
  Result<nlohmann::json> built = values.Build(db, {}, "main");
  if (!built.ok()) return built.status();
  for (const nlohmann::json& part : built.value())
    report.value_index_size += part["values"].get<size_t>();
  const std::shared_ptr<const ValueLookup> index = values.Get(db);

  std::vector<LinkingPoint> points(spec.budgets.size());
  std::vector<double> tokens(spec.budgets.size(), 0);
  for (const Question& q : questions) {
    std::set<std::string> gold;
    sqlite3_set_authorizer(db, RecordRead, &gold);
    Result<Statement> stmt = Statement::Prepare(db, q.gold_sql);
    sqlite3_set_authorizer(db, nullptr, nullptr);
    if (!stmt.ok() || gold.empty()) {
      ++report.gold_unreadable;
      continue;
    }
    const std::string with_evidence = q.AskText();
    const std::vector<ValueHint> hints = index->Lookup(with_evidence);
    const std::vector<ValueHint> question_hints = index->Lookup(q.question);
    for (size_t b = 0; b < spec.budgets.size(); ++b) {
      auto covers = [&](const LinkedSchema& linked) {
        std::set<std::string> kept;
        for (const TableInfo* t : linked.kept) kept.insert(text::Lower(t->name));
        return std::includes(kept.begin(), kept.end(), gold.begin(), gold.end());
      };
      LinkedSchema linked = LinkSchema(*schema, full, with_evidence, hints, spec.budgets[b]);
      LinkedSchema alone = LinkSchema(*schema, full, q.question, question_hints, spec.budgets[b]);
      LinkingPoint& p = points[b];
      p.budget = spec.budgets[b];
      ++p.questions;
      p.kept_all_gold += covers(linked);
      p.kept_all_gold_question += covers(alone);
      tokens[b] += static_cast<double>(linked.tokens);
    }
  }
  for (size_t b = 0; b < points.size(); ++b) {
    if (points[b].questions == 0) continue;
    points[b].mean_tokens = tokens[b] / points[b].questions;
    points[b].cut = 1.0 - points[b].mean_tokens / static_cast<double>(report.full_tokens);
  }
  report.points = std::move(points);
  return report;
}

void PrintLinking(std::ostream& out, const LinkingReport& r) {
  fmt::print(out,
             "combined database: {} tables ({} from the datasets, {} distractors); full schema "
             "~{} tokens; value index {} values\n",
             r.tables, r.dataset_tables, r.tables - r.dataset_tables, r.full_tokens,
             r.value_index_size);
  if (r.descriptions > 0)
    fmt::print(out, "with the datasets' own descriptions of {} columns\n", r.descriptions);
  if (r.gold_unreadable)
    fmt::print(out, "gold SQL that did not prepare (not counted): {}\n", r.gold_unreadable);
  fmt::print(out, "{:>8}  {:>9}  {:>12}  {:>8}  {:>22}  {:>22}\n", "budget", "questions",
             "schema tok", "cut", "gold tables kept", "kept (question alone)");
  for (const LinkingPoint& p : r.points) {
    fmt::print(out, "{:>8}  {:>9}  {:>12.0f}  {:>7.1f}%  {:>14} {:>6.1f}%  {:>14} {:>6.1f}%\n",
               p.budget, p.questions, p.mean_tokens, 100.0 * p.cut,
               fmt::format("{}/{}", p.kept_all_gold, p.questions),
               p.questions ? 100.0 * p.kept_all_gold / p.questions : 0.0,
               fmt::format("{}/{}", p.kept_all_gold_question, p.questions),
               p.questions ? 100.0 * p.kept_all_gold_question / p.questions : 0.0);
  }
  fmt::print(
      out,
      "schema tok: mean tokens (characters / 4) of the schema part of the first prompt; cut: "
      "against the full schema; gold tables kept: every table the gold SQL reads survives "
      "pruning (asked with the dataset's evidence, then without it)\n");
}

}  // namespace querypilot::eval
