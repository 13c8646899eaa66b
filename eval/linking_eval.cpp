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

namespace querypilot::eval {
namespace {

Status ExecScript(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    return Status::Internal(fmt::format("{}: {}", sql.substr(0, 120), msg));
  }
  return Status::Ok();
}

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
  static const std::vector<std::pair<const char*, std::vector<const char*>>> kDomains = {
      {"hr",
       {"employees", "departments", "positions", "salaries", "benefits", "leave_requests",
        "reviews", "trainings", "job_postings", "applicants"}},
      {"sales",
       {"customers", "orders", "order_items", "products", "invoices", "payments", "discounts",
        "sales_reps", "territories", "quotes"}},
      {"inventory",
       {"warehouses", "stock_levels", "suppliers", "purchase_orders", "shipments", "bins",
        "stock_movements", "categories", "reorder_rules", "audits"}},
      {"finance",
       {"accounts", "transactions", "ledgers", "budgets", "cost_centers", "currencies",
        "exchange_rates", "tax_rates", "expense_reports", "vendors"}},
      {"school",
       {"students", "courses", "enrollments", "teachers", "classrooms", "grades", "semesters",
        "assignments", "attendance", "clubs"}},
      {"clinic",
       {"patients", "doctors", "appointments", "prescriptions", "medications", "diagnoses", "wards",
        "nurses", "lab_results", "insurers"}},
      {"sports",
       {"teams", "players", "matches", "seasons", "stadiums", "coaches", "goals", "injuries",
        "transfers", "leagues"}},
      {"music",
       {"artists", "albums", "tracks", "playlists", "genres", "labels", "concerts", "venues",
        "tours", "awards"}},
      {"film",
       {"movies", "actors", "directors", "studios", "screenings", "cinemas", "ratings", "reviews",
        "genres", "box_office"}},
      {"library",
       {"books", "authors", "publishers", "loans", "members", "branches", "copies", "reservations",
        "fines", "categories"}},
      {"comics",
       {"series", "issues", "characters", "creators", "story_arcs", "imprints", "covers",
        "variants", "collections", "appearances"}},
      {"travel",
       {"flights", "airports", "airlines", "bookings", "passengers", "hotels", "rooms",
        "itineraries", "loyalty_accounts", "baggage"}},
      {"logistics",
       {"vehicles", "drivers", "routes", "deliveries", "depots", "fuel_logs", "maintenance",
        "parcels", "tracking_events", "carriers"}},
      {"property",
       {"properties", "agents", "listings", "viewings", "offers", "leases", "tenants", "landlords",
        "inspections", "neighbourhoods"}},
      {"it",
       {"servers", "incidents", "tickets", "users", "user_groups", "deployments", "services",
        "alerts", "changes", "assets"}},
      {"marketing",
       {"campaigns", "leads", "channels", "ad_spend", "email_sends", "landing_pages", "conversions",
        "segments", "surveys", "survey_answers"}},
      {"restaurant",
       {"menus", "dishes", "ingredients", "dining_tables", "reservations", "shifts", "staff",
        "suppliers", "reviews", "tabs"}},
      {"energy",
       {"meters", "readings", "tariffs", "sites", "outages", "substations", "contracts", "bills",
        "generators", "forecasts"}},
      {"farm",
       {"fields", "crops", "harvests", "livestock", "feed", "weather_logs", "equipment", "workers",
        "sales", "soil_tests"}},
      {"gaming",
       {"games", "gamers", "sessions", "achievements", "items", "guilds", "matches", "leaderboards",
        "purchases", "servers"}},
      {"news",
       {"articles", "journalists", "sections", "comments", "subscribers", "tags", "article_tags",
        "editions", "sources", "corrections"}},
      {"events",
       {"events", "attendees", "tickets", "sponsors", "speakers", "sessions", "rooms", "check_ins",
        "feedback", "vendors"}},
      {"research",
       {"projects", "grants", "researchers", "publications", "experiments", "samples",
        "instruments", "labs", "datasets", "citations"}},
      {"retail",
       {"stores", "store_staff", "registers", "receipts", "receipt_lines", "loyalty_cards",
        "promotions", "returns", "suppliers", "planograms"}},
      {"city",
       {"citizens", "permits", "inspections", "departments", "requests", "fines", "parcels",
        "elections", "ballots", "districts"}},
      {"charity",
       {"donors", "donations", "campaigns", "volunteers", "beneficiaries", "grants", "events",
        "pledges", "expenses", "programs"}},
      {"fitness",
       {"gyms", "memberships", "classes", "trainers", "bookings", "workouts", "exercises",
        "body_metrics", "payments", "check_ins"}},
      {"museum",
       {"exhibits", "artworks", "painters", "galleries", "loans", "visitors", "tours",
        "acquisitions", "conservators", "catalog_entries"}},
      {"theatre",
       {"productions", "cast_members", "shows", "tickets", "seats", "directors", "rehearsals",
        "reviews", "costumes", "stages"}},
      {"aviation",
       {"aircraft", "pilots", "crews", "maintenance_logs", "parts", "hangars", "flights_flown",
        "certifications", "inspections", "incidents"}},
  };
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

namespace querypilot::eval {
namespace {

using LinkClock = std::chrono::steady_clock;

// A comparison of the gold SQL that a value hint should have prepared: a
// column of `table` equal to a value the question names.
struct GoldLiteral {
  std::string table, column, literal;
};

struct GoldQuestion {
  std::string question;
  std::set<std::pair<std::string, std::string>> tables;  // (database, lower-case table) read
  std::vector<GoldLiteral> literals;
};

int RecordReadIn(void* user, int action, const char* table, const char*, const char* database,
                 const char*) noexcept {
  if (action == SQLITE_READ && table && std::string_view(table).rfind("sqlite_", 0) != 0) {
    static_cast<std::set<std::pair<std::string, std::string>>*>(user)->insert(
        {database ? database : "main", text::Lower(table)});
  }
  return SQLITE_OK;
}

// The tables the gold SQL reads and the literals it compares that the
// question names and the column holds; false when it does not prepare.
bool ReadGold(sqlite3* db, const Schema& schema, const std::string& question,
              const std::string& gold_sql, GoldQuestion* out) {
  out->question = question;
  sqlite3_set_authorizer(db, RecordReadIn, &out->tables);
  Result<Statement> stmt = Statement::Prepare(db, gold_sql);
  sqlite3_set_authorizer(db, nullptr, nullptr);
  if (!stmt.ok() || out->tables.empty()) return false;
  const std::string lower = text::Lower(question);
  for (const LiteralComparison& c : FindLiteralComparisons(gold_sql, schema)) {
    if (c.op != "=" && c.op != "in") continue;
    if (std::none_of(c.literal.begin(), c.literal.end(),
                     [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); }))
      continue;
    // Named as words of the question ('F' is not named by "female").
    const std::string literal = text::Lower(c.literal);
    bool named = false;
    for (size_t at = lower.find(literal); at != std::string::npos && !named;
         at = lower.find(literal, at + 1)) {
      auto word = [&](size_t i) {
        return i < lower.size() && std::isalnum(static_cast<unsigned char>(lower[i]));
      };
      named = (at == 0 || !word(at - 1)) && !word(at + literal.size());
    }
    if (!named) continue;
    Result<Statement> held =
        Statement::Prepare(db, fmt::format("SELECT 1 FROM {} WHERE {} = ?1 LIMIT 1",
                                           c.table->SqlName(), QuoteIdentifier(c.column)));
    if (!held.ok()) continue;
    held->Bind(1, c.literal);
    if (held->Step() != SQLITE_ROW) continue;  // not stored: nothing to hint
    out->literals.push_back({c.table->name, c.column, c.literal});
  }
  return true;
}

// The connection's schema (as SchemaCache fills it) and its value index, read
// whole.
struct Knowledge {
  std::shared_ptr<const Schema> schema;
  ValueIndexCache cache;
  std::shared_ptr<const ValueLookup> lookup;
};

Status Know(sqlite3* db, Knowledge* k) {
  Result<Schema> s = IntrospectSchema(db, 3);
  if (!s.ok()) return s.status();
  Schema schema = std::move(s).value();
  RenderInto(&schema);
  k->schema = std::make_shared<const Schema>(std::move(schema));
  ValueIndexOptions options;
  options.background = false;
  if (auto built = k->cache.Build(db, options, ""); !built.ok()) return built.status();
  k->lookup = k->cache.Get(db, options);
  return Status::Ok();
}

// One question linked at every budget: figures[b] gains it. `tokens[b]`
// is its prompt size.
void Measure(const Knowledge& k, const GoldQuestion& g, const std::vector<size_t>& budgets,
             std::vector<LinkingFigures*> figures, std::vector<double>* tokens,
             size_t* show = nullptr) {
  LinkClock::time_point start = LinkClock::now();
  HintRelevance relevance = RankHintsFor(*k.schema, g.question);
  const double rank_us =
      std::chrono::duration<double, std::micro>(LinkClock::now() - start).count();
  std::vector<ValueHint> hints = k.lookup->Lookup(g.question, 12, relevance);
  bool all_hinted = true;
  for (const GoldLiteral& l : g.literals) {
    all_hinted &= std::any_of(hints.begin(), hints.end(), [&](const ValueHint& h) {
      return (h.database.empty() || h.database == "main") &&
             text::EqualsIgnoreCase(h.table, l.table) &&
             text::EqualsIgnoreCase(h.column, l.column) &&
             ValueIndex::Key(h.value) == ValueIndex::Key(l.literal);
    });
  }
  const std::string hint_text = QuestionPrompt(g.question, hints);
  tokens->assign(budgets.size(), 0);
  for (size_t b = 0; b < budgets.size(); ++b) {
    start = LinkClock::now();
    LinkedSchema linked = LinkSchema(*k.schema, k.schema->rendered, g.question, hints, budgets[b]);
    const double link_us =
        std::chrono::duration<double, std::micro>(LinkClock::now() - start).count() + rank_us;
    std::set<std::pair<std::string, std::string>> kept;
    for (const TableInfo* t : linked.kept) kept.insert({t->database, text::Lower(t->name)});
    LinkingFigures& f = *figures[b];
    ++f.questions;
    f.gold_kept += std::includes(kept.begin(), kept.end(), g.tables.begin(), g.tables.end());
    if (!g.literals.empty()) {
      ++f.naming_literals;
      f.literals_hinted += all_hinted;
      const bool matchable =
          std::all_of(g.literals.begin(), g.literals.end(), [](const GoldLiteral& l) {
            const std::string key = ValueIndex::Key(l.literal);
            return key.size() >= 2 && !text::IsStopWord(key);
          });
      f.matchable_literals += matchable;
      f.matchable_hinted += matchable && all_hinted;
    }
    const bool lost = !std::includes(kept.begin(), kept.end(), g.tables.begin(), g.tables.end()) ||
                      (!g.literals.empty() && !all_hinted);
    if (show && *show > 0 && b + 1 == budgets.size() && lost) {
      --*show;
      std::string gold, got;
      for (const auto& [d, t] : g.tables) gold += " " + d + "." + t;
      for (const TableInfo* t : linked.kept) got += " " + t->database + "." + t->name;
      for (const GoldLiteral& l : g.literals)
        gold += fmt::format(" {}.{}='{}'", l.table, l.column, l.literal);
      fmt::print(stderr, "Q: {}\n  gold:{}\n  kept:{}\n  {}\n", g.question, gold, got, hint_text);
    }
    (*tokens)[b] = static_cast<double>(linked.tokens + EstimateTokens(hint_text));
    f.tokens.push_back((*tokens)[b]);
    f.link_us.push_back(link_us);
  }
}

double LinkMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double LinkPercentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string LinkShare(size_t part, size_t whole) {
  return fmt::format("{}/{} {:.1f}%", part, whole, whole ? 100.0 * part / whole : 0.0);
}

sqlite3* OpenLinked(const std::string& path) {
  sqlite3* db = nullptr;
  const std::string uri = "file:" + path + "?mode=ro";
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

}  // namespace

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

namespace {

// Business domains of ten tables each: the first is the one the nine others
// refer to.
const std::vector<std::pair<const char*, std::vector<const char*>>>& WideDomains() {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> kDomains = {
      {"sales",
       {"customers", "orders", "order_items", "products", "invoices", "payments", "discounts",
        "sales_reps", "territories", "quotes"}},
      {"hr",
       {"employees", "departments", "positions", "salaries", "benefits", "leave_requests",
        "reviews", "trainings", "job_postings", "applicants"}},
      {"finance",
       {"accounts", "transactions", "ledgers", "budgets", "cost_centers", "currencies",
        "exchange_rates", "tax_rates", "expense_reports", "vendors"}},
      {"property",
       {"properties", "agents", "listings", "viewings", "offers", "leases", "tenants", "landlords",
        "inspections", "neighbourhoods"}},
      {"it",
       {"servers", "incidents", "tickets", "users", "user_groups", "deployments", "services",
        "alerts", "changes", "assets"}},
      {"inventory",
       {"warehouses", "stock_levels", "suppliers", "purchase_orders", "shipments", "bins",
        "stock_movements", "categories", "reorder_rules", "audits"}},
      {"school",
       {"students", "courses", "enrollments", "teachers", "classrooms", "grades", "semesters",
        "assignments", "attendance", "clubs"}},
      {"clinic",
       {"patients", "doctors", "appointments", "prescriptions", "medications", "diagnoses", "wards",
        "nurses", "lab_results", "insurers"}},
      {"sports",
       {"teams", "players", "matches", "seasons", "stadiums", "coaches", "goals", "injuries",
        "transfers", "leagues"}},
      {"music",
       {"artists", "albums", "tracks", "playlists", "genres", "labels", "concerts", "venues",
        "tours", "awards"}},
      {"film",
       {"movies", "actors", "directors", "studios", "screenings", "cinemas", "ratings",
        "film_reviews", "film_genres", "box_office"}},
      {"library",
       {"books", "authors", "publishers", "loans", "members", "branches", "copies", "reservations",
        "fines", "shelves"}},
      {"comics",
       {"series", "issues", "characters", "creators", "story_arcs", "imprints", "covers",
        "variants", "collections", "appearances"}},
      {"travel",
       {"flights", "airports", "airlines", "bookings", "passengers", "hotels", "rooms",
        "itineraries", "loyalty_accounts", "baggage"}},
      {"logistics",
       {"vehicles", "drivers", "routes", "deliveries", "depots", "fuel_logs", "maintenance",
        "parcels", "tracking_events", "carriers"}},
      {"marketing",
       {"campaigns", "leads", "channels", "ad_spend", "email_sends", "landing_pages", "conversions",
        "segments", "surveys", "survey_answers"}},
      {"restaurant",
       {"menus", "dishes", "ingredients", "dining_tables", "table_bookings", "shifts", "staff",
        "food_suppliers", "guest_reviews", "tabs"}},
      {"energy",
       {"meters", "readings", "tariffs", "sites", "outages", "substations", "contracts", "bills",
        "generators", "forecasts"}},
      {"farm",
       {"fields", "crops", "harvests", "livestock", "feed", "weather_logs", "equipment", "workers",
        "produce_sales", "soil_tests"}},
      {"gaming",
       {"games", "gamers", "game_sessions", "achievements", "items", "guilds", "game_matches",
        "leaderboards", "purchases", "game_servers"}},
      {"news",
       {"articles", "journalists", "sections", "comments", "subscribers", "tags", "article_tags",
        "editions", "sources", "corrections"}},
      {"events",
       {"events", "attendees", "event_tickets", "sponsors", "speakers", "talks", "event_rooms",
        "check_ins", "feedback", "event_vendors"}},
      {"research",
       {"projects", "grants", "researchers", "publications", "experiments", "samples",
        "instruments", "labs", "datasets", "citations"}},
      {"retail",
       {"stores", "store_staff", "registers", "receipts", "receipt_lines", "loyalty_cards",
        "promotions", "returns", "retail_suppliers", "planograms"}},
      {"city",
       {"citizens", "permits", "city_inspections", "city_departments", "requests", "city_fines",
        "land_parcels", "elections", "ballots", "districts"}},
      {"charity",
       {"donors", "donations", "appeals", "volunteers", "beneficiaries", "charity_grants",
        "charity_events", "pledges", "expenses", "programs"}},
      {"fitness",
       {"gyms", "memberships", "classes", "trainers", "class_bookings", "workouts", "exercises",
        "body_metrics", "gym_payments", "gym_check_ins"}},
      {"museum",
       {"exhibits", "artworks", "painters", "galleries", "art_loans", "visitors", "guided_tours",
        "acquisitions", "conservators", "catalog_entries"}},
      {"theatre",
       {"productions", "cast_members", "shows", "show_tickets", "seats", "stage_directors",
        "rehearsals", "critic_reviews", "costumes", "stages"}},
      {"aviation",
       {"aircraft", "pilots", "crews", "maintenance_logs", "parts", "hangars", "flights_flown",
        "certifications", "aircraft_inspections", "aircraft_incidents"}},
      {"insurance",
       {"policies", "claims", "policyholders", "premiums", "adjusters", "coverages",
        "claim_payments", "underwriters", "brokers", "risk_scores"}},
      {"banking",
       {"branch_offices", "bank_accounts", "loans_issued", "cards", "card_transactions", "atms",
        "deposits", "withdrawals", "overdrafts", "statements"}},
      {"telecom",
       {"subscriptions", "phone_lines", "call_records", "data_plans", "handsets", "cell_towers",
        "roaming_charges", "porting_requests", "sim_cards", "outage_reports"}},
      {"hotel",
       {"hotel_guests", "stays", "suites", "housekeeping_tasks", "minibar_charges", "room_rates",
        "concierge_requests", "spa_treatments", "hotel_invoices", "lost_items"}},
      {"legal",
       {"cases", "lawyers", "clients", "hearings", "court_filings", "judges", "verdicts",
        "billable_hours", "retainers", "witnesses"}},
      {"construction",
       {"sites_under_work", "contractors", "building_permits", "materials", "site_inspections",
        "work_orders", "cranes", "safety_incidents", "subcontracts", "blueprints"}},
      {"automotive",
       {"car_models", "dealerships", "test_drives", "car_sales", "service_visits", "spare_parts",
        "recalls", "warranties", "trade_ins", "car_colours"}},
      {"publishing",
       {"manuscripts", "editors", "print_runs", "royalties", "translations", "book_launches",
        "isbn_records", "literary_agents", "cover_designs", "print_shops"}},
      {"veterinary",
       {"pets", "owners", "vet_visits", "vaccinations", "vets", "kennels", "pet_insurance",
        "treatments", "pet_prescriptions", "grooming_sessions"}},
      {"shipping",
       {"vessels", "ports", "voyages", "containers", "crew_members", "cargo_manifests",
        "port_calls", "berths", "customs_declarations", "freight_rates"}},
      {"mining",
       {"mines", "ore_samples", "drill_holes", "extraction_runs", "haul_trucks", "mine_shifts",
        "assay_results", "tailings", "blasts", "mineral_claims"}},
      {"education_online",
       {"online_courses", "lessons", "quizzes", "quiz_attempts", "learners", "instructors",
        "certificates", "forum_posts", "course_reviews", "video_views"}},
      {"software",
       {"repositories", "commits", "pull_requests", "code_reviews", "builds", "releases",
        "bug_reports", "feature_flags", "sprints", "developers"}},
      {"agriculture_coop",
       {"cooperatives", "coop_members", "grain_deliveries", "silos", "price_contracts",
        "quality_grades", "coop_loans", "machinery", "coop_meetings", "dividends"}},
      {"water",
       {"reservoirs", "pumps", "pipes", "water_meters", "water_bills", "leaks",
        "water_quality_tests", "treatment_plants", "service_areas", "usage_alerts"}},
      {"wildlife",
       {"species", "sightings", "habitats", "rangers", "tagging_events", "camera_traps",
        "population_counts", "poaching_reports", "reserves", "migrations"}},
      {"parking",
       {"car_parks", "parking_spaces", "parking_permits", "parking_tickets", "parking_sessions",
        "parking_meters", "towing_events", "parking_zones", "parking_rates",
        "enforcement_officers"}},
      {"recruiting",
       {"recruiters", "job_openings", "candidates", "interviews", "offers_made", "referrals",
        "background_checks", "hiring_managers", "pipelines", "onboarding_tasks"}},
      {"subscription_box",
       {"boxes", "box_subscribers", "box_items", "box_shipments", "box_returns", "box_surveys",
        "box_themes", "box_coupons", "box_plans", "box_skips"}},
      {"space",
       {"missions", "astronauts", "spacecraft", "launches", "launch_sites", "payloads", "orbits",
        "mission_experiments", "ground_stations", "telemetry_logs"}},
  };
  return kDomains;
}

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
