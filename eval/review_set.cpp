#include "eval/review_set.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/base/schema_model.h"
#include "eval/mutants.h"
#include "eval/runner.h"
#include "eval/score.h"

namespace querypilot::eval {
namespace {

struct Chosen {
  const Question* q;
  std::string sql;
  bool right;
  std::string source;
};

bool Right(const Verdict& v, const std::string& scoring) {
  return scoring == "bag" ? v.bag_ok : v.set_ok;
}

// Questions in the order of the CRC-32 of their id and `salt`.
std::vector<const Question*> Ordered(std::vector<const Question*> qs, const std::string& salt) {
  std::stable_sort(qs.begin(), qs.end(), [&](const Question* a, const Question* b) {
    return Crc32(a->id + salt) < Crc32(b->id + salt);
  });
  return qs;
}

Status Write(const std::string& dir, const std::string& name, const std::vector<Chosen>& chosen,
             std::ostream& log) {
  const std::string path = (std::filesystem::path(dir) / (name + ".jsonl")).string();
  std::ofstream f(path);
  for (const Chosen& c : chosen) {
    nlohmann::ordered_json j;
    j["id"] = c.q->id;
    j["db_id"] = c.q->db_id;
    j["question"] = c.q->question;
    j["pred_sql"] = c.sql;
    j["is_right"] = c.right;
    j["source"] = c.source;
    f << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (!f) return Status::InvalidArgument(fmt::format("cannot write {}", path));
  fmt::print(log, "{}: {} answers\n", path, chosen.size());
  return Status::Ok();
}

}  // namespace

Status WriteReviewSet(const std::vector<Question>& questions, const ReviewSetSpec& spec,
                      std::ostream& log) {
  std::error_code ec;
  std::filesystem::create_directories(spec.out_dir, ec);
  if (ec) return Status::InvalidArgument(fmt::format("cannot create {}", spec.out_dir));
  std::map<std::string, std::vector<const Question*>> by_dataset;
  for (const Question& q : questions) by_dataset[q.dataset].push_back(&q);
  ResultCache cache;
  for (const auto& entry : by_dataset) {
    // Named, not structured bindings: a lambda below reads `qs`.
    const std::string& dataset = entry.first;
    const std::vector<const Question*>& qs = entry.second;
    auto count_it = spec.counts.find(dataset);
    const size_t count = count_it == spec.counts.end() ? spec.default_count : count_it->second;
    bool predicted = false;
    for (const Question* q : qs) {
      for (const PredictionFile& f : spec.systems) predicted = predicted || f.Find(*q);
    }
    if (predicted) {
      std::vector<Chosen> wrong, right;
      for (const Question* q : Ordered(qs, "")) {
        if (wrong.size() >= count && right.size() >= count) break;
        const QueryResult& gold = cache.Get(q->db_path, q->gold_sql, spec.timeout_ms);
        if (!gold.ok) continue;
        const bool ordered = HasOrderBy(q->gold_sql);
        std::optional<Chosen> w, r;
        for (const PredictionFile& f : spec.systems) {
          const Prediction* p = f.Find(*q);
          if (!p || p->pred_sql.empty()) continue;
          const QueryResult& pred = cache.Get(q->db_path, p->pred_sql, spec.timeout_ms);
          if (!pred.ok) continue;
          const bool ok = Right(Compare(gold, pred, ordered), q->scoring);
          std::optional<Chosen>& slot = ok ? r : w;
          if (!slot || Crc32(p->pred_sql) < Crc32(slot->sql))
            slot = Chosen{q, p->pred_sql, ok, f.name};
        }
        if (w && wrong.size() < count) wrong.push_back(*w);
        if (r && right.size() < count) right.push_back(*r);
      }
      // Balanced: as many right answers as wrong ones where fewer are wrong.
      if (right.size() > wrong.size()) right.resize(wrong.size());
      if (Status st = Write(spec.out_dir, dataset + "-wrong", wrong, log); !st.ok()) return st;
      if (Status st = Write(spec.out_dir, dataset + "-right", right, log); !st.ok()) return st;
      continue;
    }
    const std::map<std::string, Schema> schemas = SchemasOf([&] {
      std::vector<Question> copy;
      std::set<std::string> seen;
      for (const Question* q : qs) {
        if (seen.insert(q->db_path).second) copy.push_back(*q);
      }
      return copy;
    }());
    const std::vector<std::string>& kinds = MutationKinds();
    for (const std::string half : {"A", "B"}) {
      std::vector<const Question*> in_half;
      for (const Question* q : qs) {
        if ((Crc32(q->id) % 2 == 0 ? "A" : "B") == half) in_half.push_back(q);
      }
      std::vector<Chosen> gold_answers, mutants;
      std::set<std::pair<std::string, std::string>> asked;  // one answer per (db, question)
      for (const Question* q : Ordered(in_half, "/review")) {
        if (gold_answers.size() >= count && mutants.size() >= count) break;
        if (!asked.insert({q->db_id, q->question}).second) continue;
        const QueryResult& gold = cache.Get(q->db_path, q->gold_sql, spec.timeout_ms);
        if (!gold.ok) continue;
        const uint32_t crc = Crc32(q->id + "/review");
        const bool want_gold = (crc >> 8) % 2 == 0;
        if (want_gold && gold_answers.size() < count) {
          gold_answers.push_back(Chosen{q, q->gold_sql, true, "gold"});
          continue;
        }
        if (mutants.size() >= count) {
          if (gold_answers.size() < count)
            gold_answers.push_back(Chosen{q, q->gold_sql, true, "gold"});
          continue;
        }
        auto schema = schemas.find(q->db_path);
        if (schema == schemas.end()) continue;
        const bool ordered = HasOrderBy(q->gold_sql);
        for (size_t k = 0; k < kinds.size(); ++k) {
          const std::string& kind = kinds[(crc + k) % kinds.size()];
          std::optional<std::string> sql = Mutate(kind, q->gold_sql, schema->second);
          if (!sql) continue;
          const QueryResult& pred = cache.Get(q->db_path, *sql, spec.timeout_ms);
          if (!pred.ok || Right(Compare(gold, pred, ordered), q->scoring)) continue;
          mutants.push_back(Chosen{q, *sql, false, "mutant:" + kind});
          break;
        }
      }
      if (Status st = Write(spec.out_dir, dataset + "-" + half + "-gold", gold_answers, log);
          !st.ok())
        return st;
      if (Status st = Write(spec.out_dir, dataset + "-" + half + "-mutant", mutants, log); !st.ok())
        return st;
    }
  }
  return Status::Ok();
}

}  // namespace querypilot::eval
