#include "agent/quality/samples.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace querypilot {

SampleTally TallySamples(const std::vector<SampleOutcome>& samples) {
  SampleTally t;
  t.asked = static_cast<int>(samples.size());
  for (const SampleOutcome& o : samples) {
    if (!o.ran || o.agreement == Agreement::kUnknown) continue;
    ++t.compared;
    t.agreeing += o.agreement == Agreement::kSame;
  }
  t.rule = SamplesRule(t.compared, t.agreeing);
  return t;
}

SampleVote VoteSamples(const std::vector<SampleOutcome>& samples,
                       const std::function<Agreement(size_t, size_t)>& agrees) {
  SampleVote vote;
  auto counts = [&](size_t i) {
    return samples[i].ran && samples[i].agreement != Agreement::kUnknown;
  };
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!counts(i)) continue;
    ++vote.compared;
    vote.answer_votes += samples[i].agreement == Agreement::kSame;
  }
  vote.votes = vote.answer_votes;
  if (static_cast<int>(samples.size()) < kSamplesThatVote) return vote;
  std::vector<bool> grouped(samples.size(), false);
  for (size_t lead = 0; lead < samples.size(); ++lead) {
    if (!counts(lead) || grouped[lead] || samples[lead].agreement == Agreement::kSame) continue;
    int votes = 0;
    for (size_t j = lead; j < samples.size(); ++j) {
      if (!counts(j) || grouped[j]) continue;
      if (j == lead || agrees(lead, j) == Agreement::kSame) {
        grouped[j] = true;
        ++votes;
      }
    }
    if (votes > vote.votes) {
      vote.votes = votes;
      vote.winner = lead;
    }
  }
  return vote;
}

void RejudgeAgainst(std::vector<SampleOutcome>* samples, size_t winner,
                    const std::function<Agreement(size_t, size_t)>& agrees) {
  for (size_t i = 0; i < samples->size(); ++i) {
    SampleOutcome& o = (*samples)[i];
    o.returned = i == winner;
    if (!o.ran || o.agreement == Agreement::kUnknown) continue;
    o.agreement = i == winner ? Agreement::kSame : agrees(winner, i);
  }
}

std::string SampleReason(const SampleTally& t, const std::vector<SampleOutcome>& samples) {
  if (t.asked < 2) return "";
  if (t.compared < 2) return fmt::format("{} samples could not be compared", t.asked - t.compared);
  if (t.agreeing == t.compared) return fmt::format("{0} of {0} samples give it", t.compared);
  const int differ = t.compared - t.agreeing;
  // What the others give instead.
  std::vector<std::string> counts;
  for (const SampleOutcome& o : samples) {
    if (!o.ran || o.agreement != Agreement::kDifferent) continue;
    counts.push_back(o.gives);
  }
  return fmt::format("{} of {} samples {}: {} {}", differ, t.compared,
                     differ == 1 ? "disagrees" : "disagree", differ == 1 ? "it gives" : "they give",
                     fmt::join(counts, ", "));
}

std::string SamplesJson(const SampleTally& t, const std::vector<SampleOutcome>& samples,
                        const std::optional<SampleVote>& vote) {
  nlohmann::ordered_json out;
  out["asked"] = t.asked;
  out["compared"] = t.compared;
  out["agreeing"] = t.agreeing;
  out["verdict"] =
      t.rule ? std::string(ConfidenceRowOf(*t.rule).reason) : std::string("no sample to compare");
  out["reason"] = SampleReason(t, samples);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SampleOutcome& o : samples) {
    nlohmann::ordered_json j;
    j["sql"] = o.sql.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.sql);
    j["ran"] = o.ran;
    if (!o.ran) j["error"] = o.failure;
    if (o.ran) {
      j["agrees"] = o.agreement == Agreement::kSame        ? nlohmann::ordered_json(true)
                    : o.agreement == Agreement::kDifferent ? nlohmann::ordered_json(false)
                                                           : nlohmann::ordered_json();
      j["rows"] = o.rows >= 0 ? nlohmann::ordered_json(o.rows) : nlohmann::ordered_json();
      j["gives"] = o.gives;
      j["returned"] = o.returned;
    }
    list.push_back(std::move(j));
  }
  out["samples"] = std::move(list);
  if (vote) {
    out["vote"] = {{"winner", vote->winner ? nlohmann::ordered_json(*vote->winner + 1)
                                           : nlohmann::ordered_json()},
                   {"votes", vote->votes},
                   {"answer_votes", vote->answer_votes},
                   {"compared", vote->compared}};
  }
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace querypilot
