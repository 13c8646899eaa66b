// BarLayout: how a bar chart (agent/chart/chart.h) lays its categories out
// along x: the chart's width and whether the labels lie flat or angled,
// from the number of categories and the length of their labels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "agent/chart/chart.h"

namespace querypilot {

struct BarLayout {
  int64_t width_px = 0;  // the chart's width
  int label_angle = 0;   // 0: flat labels
};

// The layout of bars whose categories are column `column` of `data`, each
// band holding `bars_per_band` bars (grouped bars hold several).
BarLayout LayOutBars(const ChartData& data, size_t column, size_t bars_per_band);

// The x axis of bars laid out as `layout` says.
nlohmann::json BarAxis(const BarLayout& layout);

}  // namespace querypilot
