#include "agent/chart/bar_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "agent/base/text.h"

namespace querypilot {
namespace {

using nlohmann::json;

// How bars are laid out along x: a band per category, each at least
// kBarMinBandPx per bar it holds, the chart at least kBarMinWidthPx wide.
// Labels lie flat where the longest fits its band (a band is widened for
// them while the chart stays within kBarFlatLabelsMaxWidthPx), and are
// angled otherwise. A label's width is estimated from its characters, as
// Vega does where it cannot measure text.
constexpr int kBarMinBandPx = 24;              // a 21 px bar and its gap (Vega-Lite's 0.1 padding)
constexpr int kBarMinWidthPx = 300;            // a chart of few bars
constexpr int kBarFlatLabelsMaxWidthPx = 800;  // widest a chart grows for flat labels
constexpr int kAxisLabelFontPx = 10;           // Vega-Lite's labelFontSize
constexpr double kAxisLabelCharEm = 0.6;       // a sans-serif character at most, on average
constexpr int kAxisLabelGapPx = 6;             // between two flat labels
constexpr int kBarAngledLabelDegrees = -45;    // rises from left to right, read bottom-up
constexpr int kBarAngledLabelLimitPx = 150;    // longer angled labels end in an ellipsis

// The text Vega draws as a category's label.
std::string LabelText(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return text::ToValidUtf8(*s);
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return "null";
}

size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

BarLayout LayOutBars(const ChartData& data, size_t column, size_t bars_per_band) {
  std::set<std::string> labels;
  size_t longest = 0;
  for (const Row& row : data.rows) {
    std::string label = column < row.size() ? LabelText(row[column]) : "null";
    longest = std::max(longest, CodePoints(label));
    labels.insert(std::move(label));
  }
  BarLayout out;
  const int bands = static_cast<int>(std::clamp<size_t>(labels.size(), 1, 1'000'000));
  const int min_band = kBarMinBandPx * static_cast<int>(std::max<size_t>(bars_per_band, 1));
  const int flat_band =
      static_cast<int>(std::ceil(static_cast<double>(std::min<size_t>(longest, 10'000)) *
                                 kAxisLabelFontPx * kAxisLabelCharEm)) +
      kAxisLabelGapPx;
  // The chart at its narrowest: min_band a category, kBarMinWidthPx in all.
  const int64_t narrowest = std::max<int64_t>(kBarMinWidthPx, int64_t{min_band} * bands);
  if (int64_t{flat_band} * bands <= narrowest) {
    out.width_px = narrowest;
  } else if (int64_t{flat_band} * bands <= kBarFlatLabelsMaxWidthPx) {
    out.width_px = int64_t{flat_band} * bands;
  } else {
    out.width_px = narrowest;
    out.label_angle = kBarAngledLabelDegrees;
  }
  return out;
}

json BarAxis(const BarLayout& layout) {
  json axis = {{"labelAngle", layout.label_angle}};
  if (layout.label_angle != 0) axis["labelLimit"] = kBarAngledLabelLimitPx;
  return axis;
}

}  // namespace querypilot
