#include "eval/linking_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "agent/base/text.h"
#include "agent/knowledge/linking.h"
#include "agent/prompt/prompts.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/statement.h"

namespace querypilot::eval {
namespace {

using LinkClock = std::chrono::steady_clock;

int RecordReadIn(void* user, int action, const char* table, const char*, const char* database,
                 const char*) noexcept {
  if (action == SQLITE_READ && table && std::string_view(table).rfind("sqlite_", 0) != 0) {
    static_cast<std::set<std::pair<std::string, std::string>>*>(user)->insert(
        {database ? database : "main", text::Lower(table)});
  }
  return SQLITE_OK;
}

}  // namespace

Status ExecScript(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    return Status::Internal(fmt::format("{}: {}", sql.substr(0, 120), msg));
  }
  return Status::Ok();
}

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

void Measure(const Knowledge& k, const GoldQuestion& g, const std::vector<size_t>& budgets,
             std::vector<LinkingFigures*> figures, std::vector<double>* tokens, size_t* show) {
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

}  // namespace querypilot::eval
