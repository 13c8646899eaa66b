#include "eval/examples_eval.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "agent/memory/examples.h"
#include "agent/sql/sqltokens.h"

namespace querypilot::eval {

std::vector<ExamplesRow> EvaluateExamples(const std::vector<Question>& questions, size_t k) {
  std::vector<ExamplesRow> rows;
  ExamplesRow total;
  total.dataset = "total";
  auto row_for = [&](const std::string& dataset) -> ExamplesRow& {
    for (auto& r : rows) {
      if (r.dataset == dataset) return r;
    }
    rows.push_back({dataset});
    return rows.back();
  };
  for (size_t i = 0; i < questions.size(); ++i) {
    const Question& q = questions[i];
    const std::string gold = NormaliseSql(q.gold_sql);
    std::vector<Example> memory;
    bool has_twin = false;
    for (size_t j = 0; j < questions.size(); ++j) {
      const Question& other = questions[j];
      if (j == i || other.dataset != q.dataset || other.db_id != q.db_id) continue;
      memory.push_back({static_cast<int64_t>(j), other.question, NormaliseSql(other.gold_sql), 0});
      has_twin = has_twin || memory.back().sql == gold;
    }
    std::vector<Example> shown = PickExamples(q.question, memory, k);
    ExamplesRow& row = row_for(q.dataset);
    for (ExamplesRow* r : {&row, &total}) {
      ++r->questions;
      r->shown += shown.size();
      if (!has_twin) continue;
      ++r->with_twin;
      r->twin_top1 += !shown.empty() && shown[0].sql == gold;
      for (const Example& e : shown) {
        if (e.sql == gold) {
          ++r->twin_topk;
          break;
        }
      }
    }
  }
  rows.push_back(total);
  return rows;
}

void PrintExamples(std::ostream& out, const std::vector<ExamplesRow>& rows, size_t k) {
  auto pct = [](size_t a, size_t b) {
    return b ? fmt::format("{:.1f}%", 100.0 * a / b) : std::string("-");
  };
  fmt::print(out, "{:<10} {:>9} {:>9} {:>12} {:>12} {:>14}\n", "dataset", "questions", "with twin",
             "twin first", fmt::format("twin in {}", k), "examples/ask");
  for (const auto& r : rows) {
    fmt::print(out, "{:<10} {:>9} {:>9} {:>12} {:>12} {:>14.2f}\n", r.dataset, r.questions,
               r.with_twin, pct(r.twin_top1, r.with_twin), pct(r.twin_topk, r.with_twin),
               r.questions ? static_cast<double>(r.shown) / r.questions : 0.0);
  }
}

}  // namespace querypilot::eval
