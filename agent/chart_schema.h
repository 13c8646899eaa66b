// ChartSchema: a small JSON Schema validator, enough for Vega-Lite's own
// schema (npm's vega-lite, build/vega-lite-schema.json), which a chart a
// model proposed must pass (agent/chart.h).
//
// The keywords read: $ref (a JSON pointer into the schema, "#/definitions/..."),
// type, enum, const, properties, additionalProperties, required, items,
// anyOf, allOf, oneOf, minimum and maximum; any other keyword is ignored.
// Both the nesting of checks and their number are bounded, so neither a
// schema that refers to itself nor a spec built to be slow can hang it.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/base/status.h"

namespace querypilot {

// The most checks one validation makes, and the deepest nesting of them.
inline constexpr size_t kSchemaMaxSteps = 2000000;
inline constexpr size_t kSchemaMaxDepth = 200;

// Ok when `doc` is valid under `schema`; else InvalidArgument naming the
// path in `doc` that failed ("/encoding/x/type") and why. Where anyOf or
// oneOf fails, the reason is the deepest one among its branches. Past
// `max_steps` checks or `max_depth` nesting, InvalidArgument saying so.
Status ValidateAgainstSchema(const nlohmann::json& schema, const nlohmann::json& doc,
                             size_t max_steps = kSchemaMaxSteps,
                             size_t max_depth = kSchemaMaxDepth);

}  // namespace querypilot
