// Chart: a picture of a run's answer (agent_chart, agent_chart_html).
//
// The chart is chosen from the answer's shape, with no model call: the kind
// of each column is read from its values (SQLite's storage classes), and a
// column of numbers is a date only where SQLite says so (its declared type,
// below). Then
//   a date column with numbers       -> a line (one per number column),
//   a date, a category and a number  -> a line per category,
//   one category and one number      -> bars, sorted by the number,
//   two numbers                      -> a scatter plot,
//   a category and several numbers   -> grouped bars;
// anything else (a single value, no number, two categories...) is an error
// that says why, unless chart_model is 1: then one model call (the run's
// model, or explain_model) gets the question, the columns' names and kinds
// and the first 5 rows, and proposes a specification, which is checked
// (CheckedModelSpec) and refused with the reason when it fails. The rows are embedded in the
// specification (Vega-Lite v5), at most chart_max_rows of them; a capped chart says so in its
// title.
//
// Where the rows come from: a run keeps only its SQL (agent/memory/history.h
// keeps no rows), so the run's verified SQL is checked and run again
// (RunVerified, under the usual limits), and at most chart_max_rows rows and
// kChartMaxBytes of values are read; nothing is kept after the call.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/base/value.h"

struct sqlite3;

namespace querypilot {

struct AgentContext;

// The most bytes of values a chart embeds: past them the rows read so far
// are drawn, and the chart says it was capped.
inline constexpr size_t kChartMaxBytes = 8 << 20;

// How a column's values are dates, when they are.
enum class DateForm {
  kNone,
  kIsoText,    // '2024-03-01', '2024-03-01 10:00:00', '2024-03-01T10:00', '2024-03'
  kJulianDay,  // REAL days since noon in Greenwich on November 24, 4714 B.C.
  kUnixTime,   // INTEGER seconds since 1970-01-01 00:00:00 UTC
};

// What a chart is drawn from: the answer's columns and the rows read.
struct ChartData {
  std::string title;  // the run's question
  std::vector<std::string> columns;
  // Each column's declared type as SQLite gives it (sqlite3_column_decltype:
  // the type of the table column a result column reads directly), "" when
  // it has none (an expression).
  std::vector<std::string> declared_types;
  std::vector<Row> rows;
  bool capped = false;  // the answer had more rows than `rows`
};

// The date form of a column of `values` declared `declared_type`: ISO text
// when every non-NULL value is such text; for numbers, only where the
// declared type names a date or a time (DATE, DATETIME, TIMESTAMP, TIME):
// REAL values are Julian days, INTEGER values Unix times. kNone otherwise,
// and for a column with no value.
DateForm DateFormOf(std::string_view declared_type, const std::vector<const Value*>& values);

// The Vega-Lite v5 specification of `data` as JSON text, or InvalidArgument
// saying why no chart fits its shape (no rows, a single value, no number
// column, ...). Lines and scatter plots are 600 by 300 px; bars are as wide
// as their number needs (24 px a bar at least, 300 px in all at least), their
// labels flat where the longest fits its band and angled otherwise. Pure:
// reads nothing, runs nothing.
Result<std::string> ChartSpec(const ChartData& data);

// agent_chart(run_id): the run's verified SQL run again (checked, under the
// settings' limits), at most chart_max_rows rows read, and ChartSpec of
// them. An error for a run that does not exist, one with no answer (failed,
// refused), SQL that no longer runs, or a shape with no chart.
Result<std::string> ChartRun(const AgentContext& ctx, int64_t run_id);

// Vega-Lite's JSON schema (npm's vega-lite, build/vega-lite-schema.json)
// from the first of `folders` that holds it, or kNotConfigured naming what to
// install and where it looked. Each file is read and parsed once and kept
// while it stays as it is (JsonFileCache, agent/chart/chart_schema.h): the parsed
// schema is shared by every connection and never changed.
Result<std::shared_ptr<const nlohmann::json>> ReadChartSchema(
    const std::vector<std::string>& folders);

// The chart a model proposed in `reply` (chart_model), checked. Only the
// top-level members of Vega-Lite's specifications that draw are kept (an
// allow-list): `usermeta`, which vega-embed reads as its options, `$schema`,
// `data` and `datasets` (any depth) and anything else are dropped. Then it
// is refused when a `field` names no column of `data`, when a `url` or an
// `href` is anywhere (an image or data would be fetched, a mark made a link),
// when any string names a URL (`http:`, `https:`, `ftp:`, `file:`, `data:`,
// ... at its start or as `scheme://`, `//host`, CSS `url(...)`), or when the
// spec is not valid under `schema` (Vega-Lite's); else `data`'s rows are
// embedded as ChartSpec embeds them, under ChartSpec's `$schema`.
// InvalidArgument saying which field is unknown, the JSON path of the url,
// href or string, or which path of the spec failed; kProviderBadResponse for
// a reply with no JSON object. Pure.
Result<std::string> CheckedModelSpec(std::string_view reply, const ChartData& data,
                                     const nlohmann::json& schema);

// The npm packages vega, vega-lite and vega-embed, as script text.
struct ChartScripts {
  std::string folder;  // the node_modules folder they were read from
  std::string vega;
  std::string vega_lite;
  std::string vega_embed;
};

// The folders where the scripts are looked for, in order: `setting`
// (chart_scripts) alone when it is set; else beside the extension (the npm
// package's node_modules, and the one it is installed in), ./node_modules,
// and the global npm folders (/usr/local/lib/node_modules,
// /usr/lib/node_modules, /usr/share/nodejs). `extension_dir` is the folder
// of the loaded library, "" when unknown.
std::vector<std::string> ChartScriptFolders(const std::string& setting,
                                            const std::string& extension_dir);

// The scripts from the first of `folders` that holds all three
// (vega/build/vega.min.js, vega-lite/build/vega-lite.min.js,
// vega-embed/build/vega-embed.min.js), or kNotConfigured naming what to install
// and where it looked.
Result<ChartScripts> FindChartScripts(const std::vector<std::string>& folders);

// The folder of the library this code was loaded from ("" when unknown).
std::string ExtensionDir();

// A page that draws `spec` (ChartSpec's text) offline: the scripts inlined,
// nothing fetched when it is viewed, whatever `spec` says. Its
// Content-Security-Policy (in its head, before any script) allows inline
// scripts and styles and data: images only; Vega's expressions are
// interpreted, never evaluated (vega-embed's `ast`), and its loader refuses
// every load, image and link. Pure.
std::string ChartHtml(std::string_view spec, const ChartScripts& scripts, std::string_view title);

}  // namespace querypilot
