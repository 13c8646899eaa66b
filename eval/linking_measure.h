// What the linking evaluations (eval/linking_eval.h) share: reading a gold
// query's tables and literals, reading a connection's knowledge, linking one
// question at every budget, and the figures' arithmetic.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/base/status.h"
#include "agent/knowledge/schema.h"
#include "agent/knowledge/value_index.h"
#include "eval/linking_eval.h"

namespace querypilot::eval {

// Runs `sql` on `db`; the error names the SQL's start.
Status ExecScript(sqlite3* db, const std::string& sql);

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

// The tables the gold SQL reads and the literals it compares that the
// question names and the column holds; false when it does not prepare.
bool ReadGold(sqlite3* db, const Schema& schema, const std::string& question,
              const std::string& gold_sql, GoldQuestion* out);

// The connection's schema (as SchemaCache fills it) and its value index, read
// whole.
struct Knowledge {
  std::shared_ptr<const Schema> schema;
  ValueIndexCache cache;
  std::shared_ptr<const ValueLookup> lookup;
};

Status Know(sqlite3* db, Knowledge* k);

// One question linked at every budget: figures[b] gains it. `tokens[b]`
// is its prompt size. With `show` above zero, a question that lost a gold
// table or a hint at the last budget is printed on stderr and counts it down.
void Measure(const Knowledge& k, const GoldQuestion& g, const std::vector<size_t>& budgets,
             std::vector<LinkingFigures*> figures, std::vector<double>* tokens,
             size_t* show = nullptr);

double LinkMedian(std::vector<double> v);
double LinkPercentile(std::vector<double> v, double p);
// "part/whole pp.p%"
std::string LinkShare(size_t part, size_t whole);

// The database at `path`, read-only; nullptr when it does not open.
sqlite3* OpenLinked(const std::string& path);

}  // namespace querypilot::eval
