#include "eval/mutants.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/schema.h"
#include "agent/sql/sqlrefs.h"
#include "agent/sql/sqltokens.h"
#include "eval/report.h"

namespace querypilot::eval {
namespace {

std::string Join(const std::vector<Token>& t) {
  std::string out;
  for (const Token& x : t) {
    if (!out.empty()) out += ' ';
    out += x.text;
  }
  return out;
}

std::string Lower(const Token& t) {
  return text::Lower(t.text);
}

bool IsKeyword(const Token& t, std::string_view word) {
  return t.kind == TokenKind::kWord && text::EqualsIgnoreCase(t.text, word);
}

// The index of each token's parenthesis depth.
std::vector<int> Depths(const std::vector<Token>& t) {
  std::vector<int> d(t.size());
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].text == ")") --depth;
    d[i] = depth;
    if (t[i].text == "(") ++depth;
  }
  return d;
}

// A literal's value, without its quotes.
std::string ValueOf(const Token& t) {
  return t.kind == TokenKind::kString ? text::UnquoteSqlString(t.text) : t.name();
}

// A compared literal: a string (or a double-quoted word, which SQLite reads
// as one when it names no column) right after =, !=, <>, LIKE or IN's "(".
std::optional<size_t> ComparedLiteral(const std::vector<Token>& t, size_t min_length) {
  for (size_t i = 1; i < t.size(); ++i) {
    const bool literal =
        t[i].kind == TokenKind::kString || t[i].kind == TokenKind::kQuotedIdentifier;
    if (!literal || ValueOf(t[i]).size() < min_length) continue;
    const std::string before = Lower(t[i - 1]);
    if (before == "=" || before == "!=" || before == "<>" || before == "like" || before == "(")
      return i;
  }
  return std::nullopt;
}

std::string Requote(const Token& t, const std::string& value) {
  const char q = t.text.empty() ? '\'' : t.text.front();
  std::string out(1, q);
  for (char c : value) {
    if (c == q) out.push_back(q);
    out.push_back(c);
  }
  return out + q;
}

std::optional<std::string> LiteralCase(std::vector<Token> t) {
  auto at = ComparedLiteral(t, 2);
  if (!at) return std::nullopt;
  std::string v = ValueOf(t[*at]);
  const bool has_upper =
      std::any_of(v.begin(), v.end(), [](unsigned char c) { return std::isupper(c); });
  if (has_upper) {
    v = text::Lower(v);
  } else {
    bool changed = false;
    for (char& c : v) {
      if (std::islower(static_cast<unsigned char>(c))) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        changed = true;
        break;
      }
    }
    if (!changed) return std::nullopt;
  }
  t[*at].text = Requote(t[*at], v);
  return Join(t);
}

std::optional<std::string> LiteralTypo(std::vector<Token> t) {
  auto at = ComparedLiteral(t, 5);
  if (!at) return std::nullopt;
  std::string v = ValueOf(t[*at]);
  if (v.find('%') != std::string::npos) return std::nullopt;  // a pattern, not a value
  v.erase(v.size() / 2, 1);
  t[*at].text = Requote(t[*at], v);
  return Join(t);
}

bool EndsClause(const Token& t) {
  for (const char* w :
       {"group", "order", "limit", "having", "union", "intersect", "except", "window"}) {
    if (IsKeyword(t, w)) return true;
  }
  return t.text == ";";
}

std::optional<std::string> DroppedFilter(std::vector<Token> t) {
  const std::vector<int> d = Depths(t);
  size_t where = t.size();
  for (size_t i = 0; i < t.size(); ++i) {
    if (d[i] == 0 && IsKeyword(t[i], "where")) {
      where = i;
      break;
    }
  }
  if (where == t.size()) return std::nullopt;
  size_t end = where + 1;
  while (end < t.size() && !(d[end] == 0 && EndsClause(t[end])) && !(d[end] < 0)) ++end;
  // The top-level ANDs of the clause, not BETWEEN's.
  std::vector<size_t> ands;
  bool between = false;
  for (size_t i = where + 1; i < end; ++i) {
    if (d[i] != 0) continue;
    if (IsKeyword(t[i], "between")) between = true;
    if (IsKeyword(t[i], "and")) {
      if (between) {
        between = false;
      } else {
        ands.push_back(i);
      }
    }
    if (IsKeyword(t[i], "or"))
      return std::nullopt;  // dropping half an OR changes its meaning wholesale
  }
  if (ands.empty()) {
    t.erase(t.begin() + static_cast<long>(where), t.begin() + static_cast<long>(end));
  } else {
    t.erase(t.begin() + static_cast<long>(ands.back()), t.begin() + static_cast<long>(end));
  }
  return Join(t);
}

std::optional<std::string> MissingLimit(std::vector<Token> t) {
  const std::vector<int> d = Depths(t);
  bool ordered = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (d[i] == 0 && IsKeyword(t[i], "order")) ordered = true;
    if (ordered && d[i] == 0 && IsKeyword(t[i], "limit") && i + 1 < t.size() &&
        t[i + 1].kind == TokenKind::kNumber) {
      size_t end = i + 2;
      if (end + 1 < t.size() && (IsKeyword(t[end], "offset") || t[end].text == ",")) end += 2;
      t.erase(t.begin() + static_cast<long>(i), t.begin() + static_cast<long>(end));
      return Join(t);
    }
  }
  return std::nullopt;
}

std::optional<std::string> WrongAggregate(std::vector<Token> t) {
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::kWord || t[i + 1].text != "(") continue;
    const std::string w = Lower(t[i]);
    const char* swap = w == "max"   ? "min"
                       : w == "min" ? "max"
                       : w == "avg" ? "sum"
                       : w == "sum" ? "avg"
                                    : nullptr;
    if (!swap) continue;
    t[i].text = swap;
    return Join(t);
  }
  return std::nullopt;
}

const TableInfo* TableOf(const QueryTables& q, const Token& qualifier) {
  auto it = q.by_alias.find(text::Lower(qualifier.name()));
  return it == q.by_alias.end() ? nullptr : it->second;
}

std::optional<std::string> WrongJoinKey(std::vector<Token> t, const Schema& schema) {
  const QueryTables q = FindQueryTables(Join(t), schema);
  // ON a.x = b.y: b.y becomes another key-like column of b's table.
  for (size_t i = 0; i + 7 < t.size(); ++i) {
    if (!IsKeyword(t[i], "on") || t[i + 2].text != "." || t[i + 4].text != "=" ||
        t[i + 6].text != ".")
      continue;
    const TableInfo* right = TableOf(q, t[i + 5]);
    if (!right) continue;
    const std::string column = t[i + 7].name();
    for (const ColumnInfo& c : right->columns) {
      if (text::EqualsIgnoreCase(c.name, column)) continue;
      const std::string type = text::Lower(c.type);
      const bool key_like = c.primary_key || type.find("int") != std::string::npos;
      if (!key_like) continue;
      t[i + 7].text = QuoteIdentifier(c.name);
      return Join(t);
    }
  }
  return std::nullopt;
}

std::optional<std::string> IdsForNames(std::vector<Token> t, const Schema& schema) {
  const QueryTables q = FindQueryTables(Join(t), schema);
  // The first selected `alias.column` of a table P that another table of the
  // query refers to: it becomes that table's foreign key.
  if (t.empty() || !IsKeyword(t[0], "select")) return std::nullopt;
  for (size_t i = 1; i + 2 < t.size() && !IsKeyword(t[i], "from"); ++i) {
    if (t[i + 1].text != ".") continue;
    const TableInfo* parent = TableOf(q, t[i]);
    if (!parent) continue;
    const ColumnInfo* selected = parent->FindColumn(t[i + 2].name());
    if (!selected || selected->primary_key || !selected->HoldsText()) continue;
    for (const auto& [alias, child] : q.by_alias) {
      // Only a name the query itself qualifies columns with.
      // Captured under a name of its own: clang before 16 cannot capture a
      // structured binding.
      const bool used =
          std::any_of(t.begin(), t.end() - 1, [&, &qualifier = alias](const Token& x) {
            return text::EqualsIgnoreCase(x.name(), qualifier) && (&x + 1)->text == ".";
          });
      if (child == parent || !used) continue;
      for (const ForeignKeyInfo& fk : child->foreign_keys) {
        if (!text::EqualsIgnoreCase(fk.to_table, parent->name)) continue;
        t[i].text = QuoteIdentifier(alias);
        t[i + 2].text = QuoteIdentifier(fk.from_column);
        return Join(t);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// Read-only.
std::map<std::string, Schema> SchemasOf(const std::vector<Question>& questions) {
  std::map<std::string, Schema> schemas;
  for (const Question& q : questions) {
    if (schemas.count(q.db_path)) continue;
    sqlite3* db = nullptr;
    const std::string uri = "file:" + q.db_path + "?mode=ro";
    Schema schema;
    if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) ==
        SQLITE_OK) {
      if (Result<Schema> s = IntrospectSchema(db, 0); s.ok()) schema = std::move(s).value();
    }
    sqlite3_close(db);
    schemas.emplace(q.db_path, std::move(schema));
  }
  return schemas;
}

const std::vector<std::string>& MutationKinds() {
  static const std::vector<std::string> kinds = {
      "literal_case",    "literal_typo",   "dropped_filter", "missing_limit",
      "wrong_aggregate", "wrong_join_key", "ids_for_names"};
  return kinds;
}

std::optional<std::string> Mutate(const std::string& kind, const std::string& gold_sql,
                                  const Schema& schema) {
  std::vector<Token> t = TokenizeSql(gold_sql);
  if (t.empty()) return std::nullopt;
  if (kind == "literal_case") return LiteralCase(std::move(t));
  if (kind == "literal_typo") return LiteralTypo(std::move(t));
  if (kind == "dropped_filter") return DroppedFilter(std::move(t));
  if (kind == "missing_limit") return MissingLimit(std::move(t));
  if (kind == "wrong_aggregate") return WrongAggregate(std::move(t));
  if (kind == "wrong_join_key") return WrongJoinKey(std::move(t), schema);
  if (kind == "ids_for_names") return IdsForNames(std::move(t), schema);
  return std::nullopt;
}

Result<MutantReport> EvaluateMutants(const std::vector<Question>& questions, const GoldSpec& spec) {
  std::map<std::string, Schema> schemas = SchemasOf(questions);
  MutantReport report;
  ResultCache cache;
  for (const std::string& kind : MutationKinds()) {
    PredictionFile file;
    file.name = "mutant:" + kind;
    std::vector<Question> asked;
    for (const Question& q : questions) {
      std::optional<std::string> sql = Mutate(kind, q.gold_sql, schemas[q.db_path]);
      if (!sql || NormaliseSql(*sql) == NormaliseSql(q.gold_sql)) continue;
      // One prediction per (database, question): a question asked twice keeps its first mutant.
      PredictionFile one = GoldAsPredictions({q}, "");
      auto [it, inserted] = file.by_question.try_emplace(one.by_question.begin()->first,
                                                         Prediction{*sql, "", {}, {}, "", {}});
      if (!inserted) continue;
      ++file.lines;
      asked.push_back(q);
    }
    MutantReport::Kind& k = report.kinds[kind];
    k.made = asked.size();
    if (asked.empty()) continue;
    RunSpec run;
    run.name = file.name;
    run.extension_path = spec.extension_path;
    run.max_attempts = 1;
    run.timeout_ms = spec.timeout_ms;
    run.replay = &file;
    Result<RunOutput> out = RunEvaluation(asked, run, cache, nullptr);
    if (!out.ok()) return out.status();
    for (const QuestionResult& q : out->questions) {
      if (q.gold_failed || q.attempt_scores.empty()) continue;
      const AttemptScore& a = q.attempt_scores[0];
      if (!a.error_type.empty() || a.verdict.set_ok) continue;  // an error, or no mistake after all
      ++k.wrong;
      if (a.flagged) {
        ++k.sent_back;
      } else if (!a.notes.empty()) {
        ++k.noted;
      }
    }
  }
  return report;
}

Result<std::vector<RunOutput>> EvaluateMutantCandidates(const std::vector<Question>& questions,
                                                        const GoldSpec& spec) {
  const std::map<std::string, Schema> schemas = SchemasOf(questions);
  const std::vector<std::string>& kinds = MutationKinds();
  PredictionFile agreeing, with_mutants, mutant_first;
  agreeing.name = "gold+agreeing";
  with_mutants.name = "gold+mutants";
  mutant_first.name = "mutant+gold";
  std::vector<Question> all, mutated;
  for (size_t n = 0; n < questions.size(); ++n) {
    const Question& q = questions[n];
    const auto key = GoldAsPredictions({q}, "").by_question.begin()->first;
    if (agreeing.by_question.count(key)) continue;  // a question asked twice keeps its first
    // Gold written another way: the same rows, so every reading agrees.
    agreeing.by_question.emplace(
        key, Prediction{q.gold_sql, "", {"SELECT * FROM (" + q.gold_sql + ")"}, {}, "", {}});
    ++agreeing.lines;
    all.push_back(q);
    // Its mutants, kinds taken in turn from a place that moves with the
    // question, so that every kind comes first as often.
    std::vector<std::string> mutants;
    for (size_t k = 0; k < kinds.size() && mutants.size() < 2; ++k) {
      std::optional<std::string> sql =
          Mutate(kinds[(n + k) % kinds.size()], q.gold_sql, schemas.at(q.db_path));
      if (sql && NormaliseSql(*sql) != NormaliseSql(q.gold_sql)) mutants.push_back(*sql);
    }
    if (mutants.empty()) continue;
    with_mutants.by_question.emplace(key, Prediction{q.gold_sql, "", mutants, {}, "", {}});
    std::vector<std::string> others = {q.gold_sql};
    if (mutants.size() > 1) others.push_back(mutants[1]);
    mutant_first.by_question.emplace(key, Prediction{mutants[0], "", others, {}, "", {}});
    ++with_mutants.lines;
    ++mutant_first.lines;
    mutated.push_back(q);
  }
  std::vector<RunOutput> runs;
  ResultCache cache;
  for (const auto& [file, asked] : {std::pair{&agreeing, &all}, std::pair{&with_mutants, &mutated},
                                    std::pair{&mutant_first, &mutated}}) {
    RunSpec run;
    run.name = file->name;
    run.extension_path = spec.extension_path;
    run.max_attempts = 3;
    run.timeout_ms = spec.timeout_ms;
    run.replay = file;
    Result<RunOutput> out = RunEvaluation(*asked, run, cache, nullptr);
    if (!out.ok()) return out.status();
    out->spec.replay = nullptr;  // made here, gone on return
    runs.push_back(std::move(out).value());
  }
  return runs;
}

void PrintMutantCandidates(std::ostream& out, const std::vector<RunOutput>& runs,
                           size_t examples_shown) {
  out << "| readings | questions | first reading right | answer returned right | right as a user "
         "compares | "
         "first reading sent back | right first reading not returned "
         "|\n|---|---|---|---|---|---|---|\n";
  std::vector<Summary> summaries;
  for (const RunOutput& run : runs) {
    size_t n = 0, first = 0, returned = 0, user = 0, sent_back = 0, replaced = 0;
    for (const QuestionResult& q : run.questions) {
      if (q.gold_failed) continue;
      ++n;
      first += q.FirstOk();
      returned += q.FinalOk();
      user += q.FinalVerdict().user_ok;
      sent_back += !q.attempt_scores.empty() && q.attempt_scores[0].flagged;
      replaced += q.FirstOk() && !q.FinalOk();
    }
    auto share = [&](size_t k) { return n ? fmt::format("{} ({:.2f}%)", k, 100.0 * k / n) : "-"; };
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", run.spec.name, n, share(first),
                       share(returned), share(user), share(sent_back), share(replaced));
    summaries.push_back(Summarise(run));
  }
  PrintCalibration(out, summaries);
  if (examples_shown == 0) return;
  out << "\nright first readings not returned:\n";
  size_t shown = 0;
  for (const RunOutput& run : runs) {
    for (const QuestionResult& q : run.questions) {
      if (q.gold_failed || !q.FirstOk() || q.FinalOk() || shown++ >= examples_shown) continue;
      out << fmt::format("  {} [{}] {} (confidence {}): {}\n    returned: {}\n", q.id, q.db_id,
                         run.spec.name, q.confidence,
                         q.attempt_scores.empty() ? "" : q.attempt_scores[0].sql, q.answer_sql);
    }
  }
}

void PrintMutants(std::ostream& out, const MutantReport& r) {
  out << "| mistake | mutants made | wrong (ran, result differs from gold) | sent back | recall | "
         "noted only |\n"
         "|---|---|---|---|---|---|\n";
  size_t wrong = 0, sent = 0, noted = 0, made = 0;
  for (const std::string& kind : MutationKinds()) {
    auto it = r.kinds.find(kind);
    if (it == r.kinds.end()) continue;
    const MutantReport::Kind& k = it->second;
    out << fmt::format("| {} | {} | {} | {} | {} | {} |\n", kind, k.made, k.wrong, k.sent_back,
                       k.wrong ? fmt::format("{:.1f}%", 100.0 * k.sent_back / k.wrong) : "-",
                       k.noted);
    wrong += k.wrong;
    sent += k.sent_back;
    noted += k.noted;
    made += k.made;
  }
  out << fmt::format("| all | {} | {} | {} | {} | {} |\n", made, wrong, sent,
                     wrong ? fmt::format("{:.1f}%", 100.0 * sent / wrong) : "-", noted);
}

}  // namespace querypilot::eval
