#include "agent/quality/samples.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace querypilot {

const SampleRow& RowOf(SampleVerdict verdict) {
  for (const SampleRow& row : kSampleRows) {
    if (row.verdict == verdict) return row;
  }
  return kSampleRows[0];
}

SampleTally TallySamples(const std::vector<SampleOutcome>& samples) {
  SampleTally t;
  t.asked = static_cast<int>(samples.size());
  for (const SampleOutcome& o : samples) {
    if (!o.ran || o.agreement == Agreement::kUnknown) continue;
    ++t.compared;
    t.agreeing += o.agreement == Agreement::kSame;
  }
  if (t.compared < 2) {
    t.verdict = SampleVerdict::kNone;
  } else if (t.agreeing == t.compared) {
    t.verdict = SampleVerdict::kEvery;
  } else if (2 * t.agreeing > t.compared) {
    t.verdict = SampleVerdict::kMost;
  } else if (t.agreeing >= 2) {
    t.verdict = SampleVerdict::kFew;
  } else {
    t.verdict = SampleVerdict::kNoOther;
  }
  return t;
}

std::string SampleReason(const SampleTally& t, const std::vector<SampleOutcome>& samples) {
  if (t.asked < 2) return "";
  if (t.compared < 2) return fmt::format("{} samples could not be compared", t.asked - t.compared);
  if (t.agreeing == t.compared) return fmt::format("{0} of {0} samples give it", t.compared);
  const int differ = t.compared - t.agreeing;
  // What the others give instead, by their row counts where known.
  std::vector<std::string> counts;
  for (const SampleOutcome& o : samples) {
    if (!o.ran || o.agreement != Agreement::kDifferent) continue;
    counts.push_back(o.rows >= 0 ? fmt::format("{} row{}", o.rows, o.rows == 1 ? "" : "s")
                                 : std::string("other rows"));
  }
  return fmt::format("{} of {} samples {}: {} {}", differ, t.compared,
                     differ == 1 ? "disagrees" : "disagree", differ == 1 ? "it gives" : "they give",
                     fmt::join(counts, ", "));
}

std::string SamplesJson(const SampleTally& t, const std::vector<SampleOutcome>& samples) {
  nlohmann::ordered_json out;
  out["asked"] = t.asked;
  out["compared"] = t.compared;
  out["agreeing"] = t.agreeing;
  out["verdict"] = RowOf(t.verdict).name;
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
    }
    list.push_back(std::move(j));
  }
  out["samples"] = std::move(list);
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace querypilot
