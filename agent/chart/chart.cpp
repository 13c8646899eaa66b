#include "agent/chart/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "agent/agent.h"
#include "agent/base/enum_names.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/chart/bar_layout.h"
#include "agent/chart/chart_schema.h"
#include "agent/config.h"
#include "agent/memory/history.h"
#include "agent/model_calls.h"
#include "agent/prompt/prompts.h"
#include "agent/sql/executor.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

using nlohmann::json;

// The `$schema` of every chart: names Vega-Lite v5 to the tools that read
// the spec; never fetched.
constexpr const char* kVegaLiteSchemaUrl = "https://vega.github.io/schema/vega-lite/v5.json";

// What a column can be in a chart, from its values.
enum class ColumnKind {
  kEmpty,     // NULL in every row
  kBlob,      // holds a BLOB: nothing a chart can show
  kNumber,    // INTEGER and REAL; or text that reads as numbers, where no column is those
  kDate,      // DateFormOf() is not kNone
  kCategory,  // text (or text and numbers mixed)
};

// One name a kind, in ColumnKind's order.
constexpr std::array<std::string_view, 5> kColumnKindNames = {"NULL in every row", "BLOB", "number",
                                                              "date", "category"};
static_assert(kColumnKindNames.size() == static_cast<size_t>(ColumnKind::kCategory) + 1);

std::string_view KindName(ColumnKind kind) {
  return EnumName(kColumnKindNames, kind, "?");
}

bool Digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

// 'YYYY-MM', 'YYYY-MM-DD', then optionally ' HH:MM' or 'THH:MM', ':SS',
// '.fff', and 'Z' or '+HH:MM': the forms SQLite's date functions read.
bool IsIsoDate(std::string_view s) {
  if (!Digits(s, 0, 4) || s.size() < 7 || s[4] != '-' || !Digits(s, 5, 2)) return false;
  size_t at = 7;
  if (at == s.size()) return true;
  if (s[at] != '-' || !Digits(s, at + 1, 2)) return false;
  at += 3;
  if (at == s.size()) return true;
  if ((s[at] != ' ' && s[at] != 'T') || !Digits(s, at + 1, 2) || at + 3 >= s.size() ||
      s[at + 3] != ':' || !Digits(s, at + 4, 2)) {
    return false;
  }
  at += 6;
  if (at < s.size() && s[at] == ':') {
    if (!Digits(s, at + 1, 2)) return false;
    at += 3;
    if (at < s.size() && s[at] == '.') {
      ++at;
      const size_t start = at;
      while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
      if (at == start) return false;
    }
  }
  if (at == s.size()) return true;
  if (s[at] == 'Z') return at + 1 == s.size();
  return (s[at] == '+' || s[at] == '-') && at + 6 == s.size() && Digits(s, at + 1, 2) &&
         s[at + 3] == ':' && Digits(s, at + 4, 2);
}

bool DeclaredDate(std::string_view declared_type) {
  const std::string lower = text::Lower(declared_type);
  return lower.find("date") != std::string::npos || lower.find("time") != std::string::npos;
}

struct Column {
  std::string name;   // unique (UniqueColumnNames)
  std::string field;  // the name as a Vega-Lite field reference
  ColumnKind kind = ColumnKind::kEmpty;
  DateForm date = DateForm::kNone;
  // Text in every row, each value a number (text::ReadsAsNumber): a CSV
  // column imported as TEXT. Drawn as numbers where no column holds
  // INTEGER or REAL values.
  bool numbers_as_text = false;
};

// A Vega-Lite field reference to the key `name`: '.', '[', ']' and '\'
// would otherwise read as a nested access.
std::string FieldRef(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '.' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::vector<Column> Classify(const ChartData& data) {
  const std::vector<std::string> names = UniqueColumnNames(data.columns);
  std::vector<Column> out;
  for (size_t i = 0; i < names.size(); ++i) {
    Column col;
    col.name = names[i];
    col.field = FieldRef(names[i]);
    std::vector<const Value*> values;
    bool blob = false, text = false, all_number_text = true;
    for (const Row& row : data.rows) {
      if (i >= row.size() || std::holds_alternative<std::monostate>(row[i])) continue;
      values.push_back(&row[i]);
      blob = blob || std::holds_alternative<Blob>(row[i]);
      const auto* s = std::get_if<std::string>(&row[i]);
      text = text || s;
      all_number_text = all_number_text && s && text::ReadsAsNumber(*s) != text::TextNumber::kNone;
    }
    const std::string_view declared = i < data.declared_types.size()
                                          ? std::string_view(data.declared_types[i])
                                          : std::string_view();
    col.date = blob ? DateForm::kNone : DateFormOf(declared, values);
    if (values.empty()) {
      col.kind = ColumnKind::kEmpty;
    } else if (blob) {
      col.kind = ColumnKind::kBlob;
    } else if (col.date != DateForm::kNone) {
      col.kind = ColumnKind::kDate;
    } else {
      col.kind = text ? ColumnKind::kCategory : ColumnKind::kNumber;
      col.numbers_as_text = all_number_text;
    }
    out.push_back(std::move(col));
  }
  // No column holds numbers: those whose text all reads as numbers are
  // taken for them (a shell's plain .import leaves every column TEXT).
  if (std::none_of(out.begin(), out.end(),
                   [](const Column& c) { return c.kind == ColumnKind::kNumber; })) {
    for (Column& c : out) {
      if (c.kind == ColumnKind::kCategory && c.numbers_as_text) c.kind = ColumnKind::kNumber;
    }
  }
  return out;
}

// A number written as text, as the chart's data holds it (null where it
// cannot be read as one).
json NumberFromText(const std::string& s) {
  const std::string t = text::Trim(s);
  switch (text::ReadsAsNumber(t)) {
    case text::TextNumber::kWhole: {
      int64_t v = 0;
      const char* begin = t.data() + (t[0] == '+' ? 1 : 0);
      auto [end, ec] = std::from_chars(begin, t.data() + t.size(), v);
      if (ec == std::errc() && end == t.data() + t.size()) return v;
      break;
    }
    case text::TextNumber::kDecimal: {
      const double d = std::strtod(t.c_str(), nullptr);
      if (std::isfinite(d)) return d;
      return nullptr;
    }
    case text::TextNumber::kNone:
      return nullptr;
  }
  return std::strtod(t.c_str(), nullptr);
}

// A cell as the chart's data holds it: dates stored as numbers become
// milliseconds since 1970 (what Vega reads as a time), non-finite numbers
// null.
json Cell(const Column& col, const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (col.date == DateForm::kUnixTime) return static_cast<double>(*i) * 1000.0;
    if (col.date == DateForm::kJulianDay) return (static_cast<double>(*i) - 2440587.5) * 86400000.0;
    return *i;
  }
  if (const auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return nullptr;
    if (col.date == DateForm::kUnixTime) return *d * 1000.0;
    if (col.date == DateForm::kJulianDay) return (*d - 2440587.5) * 86400000.0;
    return *d;
  }
  if (const auto* s = std::get_if<std::string>(&v)) {
    if (col.kind == ColumnKind::kNumber) return NumberFromText(*s);
    return text::ToValidUtf8(*s);
  }
  return nullptr;
}

// The answer's rows as the chart's data: a member per column that can be
// drawn (an empty or BLOB column is left out).
json Values(const ChartData& data, const std::vector<Column>& cols) {
  json values = json::array();
  for (const Row& row : data.rows) {
    json obj = json::object();
    for (size_t i = 0; i < cols.size(); ++i) {
      if (cols[i].kind == ColumnKind::kEmpty || cols[i].kind == ColumnKind::kBlob) continue;
      obj[cols[i].name] = i < row.size() ? Cell(cols[i], row[i]) : json(nullptr);
    }
    values.push_back(std::move(obj));
  }
  return values;
}

// A chart's title: `title` ("QueryPilot" when empty) and, when the rows were
// capped, how many the chart draws.
std::string Title(const ChartData& data, std::string_view title) {
  std::string out = title.empty() ? "QueryPilot" : text::ToValidUtf8(title);
  if (data.capped) out += fmt::format(" (the first {} rows only)", data.rows.size());
  return out;
}

json Axis(const Column& col, std::string_view type) {
  return {{"field", col.field}, {"type", type}, {"title", col.name}};
}

// A name for a folded column that no column of the answer has.
std::string FreeName(const std::vector<Column>& cols, std::string name) {
  while (std::any_of(cols.begin(), cols.end(), [&](const Column& c) { return c.name == name; })) {
    name += "_";
  }
  return name;
}

std::string Join(const std::vector<const Column*>& cols, std::string_view sep) {
  std::string out;
  for (const Column* c : cols) out += (out.empty() ? "" : std::string(sep)) + c->name;
  return out;
}

// Adds the transform that folds several number columns into two, named
// `*series` (which column) and `*value` (its value): names no column of the
// answer has.
void Fold(json& spec, const std::vector<Column>& all, const std::vector<const Column*>& numbers,
          std::string* series, std::string* value) {
  *series = FreeName(all, "column");
  *value = FreeName(all, "value");
  json fields = json::array();
  for (const Column* n : numbers) fields.push_back(n->field);
  spec["transform"] = json::array({{{"fold", fields}, {"as", {*series, *value}}}});
}

}  // namespace

DateForm DateFormOf(std::string_view declared_type, const std::vector<const Value*>& values) {
  if (values.empty()) return DateForm::kNone;
  bool all_text = true, all_int = true, all_number = true;
  for (const Value* v : values) {
    const auto* s = std::get_if<std::string>(v);
    all_text = all_text && s && IsIsoDate(*s);
    all_int = all_int && std::holds_alternative<int64_t>(*v);
    all_number =
        all_number && (std::holds_alternative<int64_t>(*v) || std::holds_alternative<double>(*v));
  }
  if (all_text) return DateForm::kIsoText;
  if (!all_number || !DeclaredDate(declared_type)) return DateForm::kNone;
  return all_int ? DateForm::kUnixTime : DateForm::kJulianDay;
}

Result<std::string> ChartSpec(const ChartData& data) {
  if (data.rows.empty()) {
    return Status::InvalidArgument("the answer has no rows: there is nothing to draw");
  }
  const std::vector<Column> cols = Classify(data);
  std::vector<const Column*> dates, numbers, categories, left_out;
  for (const Column& c : cols) {
    switch (c.kind) {
      case ColumnKind::kDate:
        dates.push_back(&c);
        break;
      case ColumnKind::kNumber:
        numbers.push_back(&c);
        break;
      case ColumnKind::kCategory:
        categories.push_back(&c);
        break;
      case ColumnKind::kEmpty:
      case ColumnKind::kBlob:
        left_out.push_back(&c);
        break;
    }
  }
  std::string shape;
  for (const Column& c : cols) {
    shape += fmt::format("{}{} ({}{})", shape.empty() ? "" : ", ", c.name, KindName(c.kind),
                         c.kind == ColumnKind::kNumber && c.numbers_as_text ? ", as text" : "");
  }
  const size_t used = dates.size() + numbers.size() + categories.size();
  if (data.rows.size() == 1 && used == 1) {
    return Status::InvalidArgument(
        fmt::format("the answer is a single value ({}): a chart needs several rows", shape));
  }
  if (numbers.empty()) {
    return Status::InvalidArgument(
        fmt::format("the answer has no column of numbers to draw (its columns: {})", shape));
  }

  json spec = {{"$schema", kVegaLiteSchemaUrl}};
  spec["title"] = Title(data, data.title);
  spec["data"] = {{"values", Values(data, cols)}};

  std::string kind;           // what the description calls the chart
  bool continuous_x = false;  // a line or a scatter plot: a fixed width
  std::optional<BarLayout> bars;
  json encoding;
  std::string series, value;
  if (dates.size() == 1 && categories.empty()) {
    kind = "a line";
    continuous_x = true;
    spec["mark"] = {{"type", "line"}, {"point", true}};
    encoding["x"] = Axis(*dates[0], "temporal");
    if (numbers.size() == 1) {
      encoding["y"] = Axis(*numbers[0], "quantitative");
    } else {
      kind = "a line per number column";
      Fold(spec, cols, numbers, &series, &value);
      encoding["y"] = {{"field", value}, {"type", "quantitative"}, {"title", Join(numbers, ", ")}};
      encoding["color"] = {{"field", series}, {"type", "nominal"}, {"title", series}};
    }
  } else if (dates.size() == 1 && categories.size() == 1 && numbers.size() == 1) {
    kind = "a line per category";
    continuous_x = true;
    spec["mark"] = {{"type", "line"}, {"point", true}};
    encoding["x"] = Axis(*dates[0], "temporal");
    encoding["y"] = Axis(*numbers[0], "quantitative");
    encoding["color"] = Axis(*categories[0], "nominal");
  } else if (dates.empty() && categories.size() == 1 && numbers.size() == 1) {
    kind = "bars";
    spec["mark"] = "bar";
    encoding["x"] = Axis(*categories[0], "nominal");
    encoding["x"]["sort"] = "-y";
    bars = LayOutBars(data, static_cast<size_t>(categories[0] - cols.data()), 1);
    encoding["y"] = Axis(*numbers[0], "quantitative");
  } else if (dates.empty() && categories.empty() && numbers.size() == 2) {
    kind = "a scatter plot";
    continuous_x = true;
    spec["mark"] = "point";
    encoding["x"] = Axis(*numbers[0], "quantitative");
    encoding["y"] = Axis(*numbers[1], "quantitative");
  } else if (dates.empty() && categories.size() == 1 && numbers.size() >= 2) {
    kind = "grouped bars";
    spec["mark"] = "bar";
    Fold(spec, cols, numbers, &series, &value);
    encoding["x"] = Axis(*categories[0], "nominal");
    bars = LayOutBars(data, static_cast<size_t>(categories[0] - cols.data()), numbers.size());
    encoding["xOffset"] = {{"field", series}, {"type", "nominal"}};
    encoding["y"] = {{"field", value}, {"type", "quantitative"}, {"title", Join(numbers, ", ")}};
    encoding["color"] = {{"field", series}, {"type", "nominal"}, {"title", series}};
  } else {
    return Status::InvalidArgument(fmt::format(
        "no chart fits the answer's columns ({}): agent_chart draws a date with numbers (a line), "
        "a category with one number (bars), two numbers (a scatter plot) or a category with "
        "several numbers (grouped bars)",
        shape));
  }
  if (continuous_x) {
    spec["width"] = 600;
    spec["height"] = 300;
  }
  if (bars) {
    spec["width"] = bars->width_px;
    encoding["x"]["axis"] = BarAxis(*bars);
  }
  spec["encoding"] = std::move(encoding);
  std::string description =
      fmt::format("{} of {} row{}", kind, data.rows.size(), data.rows.size() == 1 ? "" : "s");
  if (!left_out.empty()) {
    description +=
        fmt::format("; left out: {} (NULL in every row, or BLOBs)", Join(left_out, ", "));
  }
  std::vector<const Column*> from_text;
  for (const Column* n : numbers) {
    if (n->numbers_as_text) from_text.push_back(n);
  }
  if (!from_text.empty()) {
    description += fmt::format("; numbers read from text: {}", Join(from_text, ", "));
  }
  spec["description"] = description;
  return spec.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// The JSON object of a model's reply: its first fenced block when it has
// one, else the text from the first '{' to the last '}'.
Result<json> SpecOfReply(std::string_view reply) {
  std::string_view body = reply;
  if (size_t open = reply.find("```"); open != std::string_view::npos) {
    size_t start = reply.find('\n', open);
    size_t close = start == std::string_view::npos ? start : reply.find("```", start);
    if (close != std::string_view::npos) body = reply.substr(start + 1, close - start - 1);
  }
  const size_t first = body.find('{');
  const size_t last = body.rfind('}');
  if (first == std::string_view::npos || last == std::string_view::npos || last < first) {
    return Status(ErrorKind::kProviderBadResponse, "the model's reply held no JSON object");
  }
  json spec = json::parse(body.substr(first, last - first + 1), nullptr, false);
  if (spec.is_discarded() || !spec.is_object()) {
    return Status(ErrorKind::kProviderBadResponse, "the model's reply held no JSON object");
  }
  return spec;
}

// The top-level members of a model's chart that are kept: the properties of
// Vega-Lite's top-level specifications (TopLevelUnitSpec, ...Layer, ...Facet,
// ...Repeat, ...Concat) that draw. Every other member is dropped: `data` and
// `datasets` (the rows are the answer's), `$schema` (QueryPilot's own is
// set), `usermeta` (vega-embed reads its `embedOptions` as options: a
// config, a patch or a loader's baseURL it would fetch) and anything else.
constexpr std::string_view kModelChartMembers[] = {
    "align",  "autosize", "background", "bounds",     "center", "columns", "concat",
    "config", "encoding", "facet",      "hconcat",    "height", "layer",   "mark",
    "name",   "padding",  "params",     "projection", "repeat", "resolve", "spacing",
    "spec",   "title",    "transform",  "vconcat",    "view",   "width",
};

// `spec` without any `data` or `datasets` the model gave, at any depth:
// the rows a chart draws are the answer's, embedded by QueryPilot.
void DropData(json& spec) {
  if (spec.is_object()) {
    spec.erase("data");
    spec.erase("datasets");
    for (auto& [key, value] : spec.items()) DropData(value);
  } else if (spec.is_array()) {
    for (json& v : spec) DropData(v);
  }
}

// The model's chart `spec` with only kModelChartMembers at its top, and
// without data (DropData).
void KeepChartMembers(json& spec) {
  for (auto it = spec.begin(); it != spec.end();) {
    if (std::find(std::begin(kModelChartMembers), std::end(kModelChartMembers), it.key()) ==
        std::end(kModelChartMembers)) {
      it = spec.erase(it);
    } else {
      ++it;
    }
  }
  DropData(spec);
}

// The URL schemes a page could fetch, open or run.
constexpr std::string_view kUrlSchemes[] = {
    "http:", "https:", "ftp:",        "ftps:",       "file:", "data:",
    "blob:", "ws:",    "filesystem:", "javascript:", "wss:",
};

// `s` lowered and without the tabs and line breaks a URL parser skips
// (`ht<TAB>tp:` is `http:`); with `css`, its CSS escapes read as well
// (`\75 rl(` is `url(`).
std::string UrlForm(std::string_view s, bool css) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\t' || c == '\n' || c == '\r') continue;
    if (css && c == '\\' && i + 1 < s.size()) {
      if (hex(s[i + 1]) < 0) {
        out += s[++i];
        continue;
      }
      uint32_t code = 0;
      for (size_t n = 0; n < 6 && i + 1 < s.size() && hex(s[i + 1]) >= 0; ++n) {
        code = code * 16 + static_cast<uint32_t>(hex(s[++i]));
      }
      if (i + 1 < s.size() && s[i + 1] == ' ') ++i;
      // ASCII is all a scheme or a CSS function's name is made of.
      out += code < 0x80 ? static_cast<char>(code) : '?';
      continue;
    }
    out += c;
  }
  return text::Lower(out);
}

bool SchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

bool Slash(std::string_view u, size_t at) {
  return at < u.size() && (u[at] == '/' || u[at] == '\\');
}

// Whether `u` (UrlForm) names a URL: see NamesUrl.
bool NamesUrlIn(std::string_view u) {
  // A URL parser skips the spaces and control characters a URL starts with.
  size_t start = 0;
  while (start < u.size() && static_cast<unsigned char>(u[start]) <= ' ') ++start;
  if (Slash(u, start) && Slash(u, start + 1)) return true;
  for (std::string_view scheme : kUrlSchemes) {
    if (u.substr(start, scheme.size()) == scheme) return true;
    for (size_t at = u.find(scheme); at != std::string_view::npos; at = u.find(scheme, at + 1)) {
      if (at > 0 && SchemeChar(u[at - 1])) continue;
      size_t after = at + scheme.size();
      if (Slash(u, after) && Slash(u, after + 1)) return true;
      if (scheme != "data:") continue;
      // data: and a media type ("data:image/svg+xml,...").
      while (after < u.size() && u[after] == ' ') ++after;
      const size_t type = after;
      while (after < u.size() && SchemeChar(u[after])) ++after;
      if (after > type && Slash(u, after)) return true;
    }
  }
  // CSS's functions that fetch, by name: "curl(1)" calls none.
  for (std::string_view call : {"url(", "image-set(", "-webkit-image-set("}) {
    for (size_t at = u.find(call); at != std::string_view::npos; at = u.find(call, at + 1)) {
      const unsigned char before = at > 0 ? static_cast<unsigned char>(u[at - 1]) : ' ';
      if (!std::isalnum(before) && before != '-' && before != '_' && before < 0x80) return true;
    }
  }
  return false;
}

// Whether the string `s` names a URL a page could fetch or open: one of
// kUrlSchemes at its start, or anywhere as `scheme://` (or `data:` and a
// media type); a host with no scheme at its start (`//host/x`, or with
// backslashes, which a URL parser reads as slashes); or a CSS function that
// fetches (`url(...)`, `image-set(...)`, CSS escapes read). "Sales data: by
// month" names none.
bool NamesUrl(std::string_view s) {
  return NamesUrlIn(UrlForm(s, false)) || NamesUrlIn(UrlForm(s, true));
}

// A string as an error shows it: at most 80 bytes.
std::string Quoted(std::string_view s) {
  return "'" + text::Truncate(text::ToValidUtf8(s), 80) + "'";
}

// Why `spec` is refused, with the path: a `field` (at any depth) that names
// no column of the answer, a `url` (what Vega-Lite fetches: data, an
// image), which would make a page fetch where nothing should be, an
// `href` (a mark's link, followed on a click), which would send the reader
// where the model chose, or any other string that names a URL (NamesUrl: a
// fill of `url(http://...)`); "" when none is found.
std::string UnknownField(const json& spec, const std::vector<Column>& cols,
                         const std::string& path) {
  if (spec.is_string()) {
    const std::string& value = spec.get_ref<const std::string&>();
    if (NamesUrl(value)) {
      return fmt::format(
          "{} names a URL ({}), which the page would fetch or open when the chart is viewed; a "
          "chart draws the answer's rows only",
          path.empty() ? "/" : path, Quoted(value));
    }
  } else if (spec.is_object()) {
    for (const auto& [key, value] : spec.items()) {
      if (key == "url") {
        return fmt::format(
            "{}/url would be fetched when the chart is viewed; a chart draws the "
            "answer's rows only",
            path);
      }
      if (key == "href") {
        return fmt::format(
            "{}/href would make the chart's marks links; a chart draws the answer's rows only",
            path);
      }
      if (key == "field" && value.is_string()) {
        const std::string name = value.get<std::string>();
        if (std::none_of(cols.begin(), cols.end(), [&](const Column& c) {
              return (c.kind != ColumnKind::kEmpty && c.kind != ColumnKind::kBlob) &&
                     (c.name == name || c.field == name);
            })) {
          return fmt::format("{}/field names '{}', not a column of the answer", path, name);
        }
        continue;
      }
      if (std::string why = UnknownField(value, cols, path + "/" + key); !why.empty()) return why;
    }
  } else if (spec.is_array()) {
    for (size_t i = 0; i < spec.size(); ++i) {
      if (std::string why = UnknownField(spec[i], cols, fmt::format("{}/{}", path, i));
          !why.empty())
        return why;
    }
  }
  return "";
}

}  // namespace

Result<std::shared_ptr<const json>> ReadChartSchema(const std::vector<std::string>& folders) {
  // Read once per process while the file stays as it is (JsonFileCache):
  // process-wide because the schema file is the same for every connection.
  static auto* const schemas = new JsonFileCache(ReadWholeFile);
  for (const std::string& folder : folders) {
    std::shared_ptr<const json> schema =
        schemas->Get(folder + "/vega-lite/build/vega-lite-schema.json");
    if (!schema) continue;
    if (schema->is_discarded() || !schema->is_object()) {
      return Status(ErrorKind::kNotConfigured,
                    fmt::format("{}/vega-lite/build/vega-lite-schema.json is not JSON: reinstall "
                                "it with `npm install vega-lite@5`",
                                folder));
    }
    return schema;
  }
  return Status(ErrorKind::kNotConfigured,
                fmt::format("chart_model needs Vega-Lite's schema to check the model's chart: run "
                            "`npm install vega-lite@5` and set agent_config('chart_scripts', "
                            "'/path/to/node_modules') (or QUERYPILOT_CHART_SCRIPTS); looked in {}",
                            fmt::join(folders, ", ")));
}

Result<std::string> CheckedModelSpec(std::string_view reply, const ChartData& data,
                                     const json& schema) {
  Result<json> proposed = SpecOfReply(reply);
  if (!proposed.ok()) return proposed.status();
  json spec = std::move(*proposed);
  KeepChartMembers(spec);
  const std::vector<Column> cols = Classify(data);
  if (std::string why = UnknownField(spec, cols, ""); !why.empty()) {
    return Status::InvalidArgument("the model's chart was refused: " + why);
  }
  // Checked with no rows (the schema asks for data; the rows are not the
  // model's and need no check), then the rows embedded.
  spec["data"] = {{"values", json::array()}};
  if (Status st = ValidateAgainstSchema(schema, spec); !st.ok()) {
    return Status::InvalidArgument("the model's chart was refused: it is not valid Vega-Lite " +
                                   st.message());
  }
  spec["data"] = {{"values", Values(data, cols)}};
  spec["$schema"] = kVegaLiteSchemaUrl;
  // The model's title is kept, and says so too when the rows were capped.
  json& title = spec["title"];
  if (title.is_object() && title.contains("text") && title["text"].is_string()) {
    title["text"] = Title(data, title["text"].get<std::string>());
  } else {
    title = Title(data, title.is_string() ? title.get<std::string>() : data.title);
  }
  spec["description"] = fmt::format("a chart the model proposed, of {} row{}", data.rows.size(),
                                    data.rows.size() == 1 ? "" : "s");
  return spec.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// The chart one model call proposes for `data` (chart_model), checked.
Result<std::string> ModelChart(const AgentContext& ctx, int64_t run_id, const ChartData& data) {
  if (!ModelCalls(ctx).available()) return ModelCalls(ctx).unavailable();
  Result<std::shared_ptr<const json>> schema =
      ReadChartSchema(ChartScriptFolders(ctx.config->chart_scripts, ExtensionDir()));
  if (!schema.ok()) return schema.status();
  constexpr size_t kRows = 5;
  const std::vector<Column> cols = Classify(data);
  std::string columns;
  for (const Column& c : cols) columns += fmt::format("- {} ({})\n", c.name, KindName(c.kind));
  std::string rows;
  for (size_t i = 0; i < data.rows.size() && i < kRows; ++i) {
    AppendRowJson(rows, data.columns, data.rows[i]);
    rows += "\n";
  }
  CallCost cost;
  Result<ChatReply> reply =
      ModelCalls(ctx).Ask(ModelStep::kChart,
                          fmt::format("Question: {}\nColumns ({} rows):\n{}First rows:\n{}",
                                      data.title, data.rows.size(), columns, rows),
                          &cost);
  if (!reply.ok()) return reply.status();
  ctx.history->AddModelCall(run_id, cost.prompt_tokens, cost.completion_tokens);
  return CheckedModelSpec(reply->text, data, **schema);
}

}  // namespace

Result<std::string> ChartRun(const AgentContext& ctx, int64_t run_id) {
  Result<RunRecord> run = ctx.history->AnsweredRun(run_id, "answer to draw");
  if (!run.ok()) return run.status();
  const int64_t cap = ctx.config->chart_max_rows;
  ExecutionLimits limits = QueryLimits(*ctx.config);
  limits.max_rows = cap;
  limits.probe_rows = static_cast<size_t>(std::min<int64_t>(cap, 256));
  auto query = RunAgainVerified(ctx.sql, run->sql, limits);
  if (!query.ok()) return query.status();
  LiveQuery& live = **query;
  ChartData data;
  data.title = run->question;
  data.columns = live.column_names();
  for (size_t i = 0; i < data.columns.size(); ++i) {
    const char* declared = Host().column_decltype
                               ? sqlite3_column_decltype(live.statement(), static_cast<int>(i))
                               : nullptr;
    data.declared_types.emplace_back(declared ? declared : "");
  }
  size_t bytes = 0;
  Row row;
  while (true) {
    Result<bool> more = live.Next(&row);
    if (!more.ok())
      return Status(more.status().kind(), "the run's SQL failed: " + more.status().message());
    if (!*more) break;
    for (const Value& v : row) {
      bytes += 16;
      if (const auto* s = std::get_if<std::string>(&v)) bytes += s->size();
      if (const auto* b = std::get_if<Blob>(&v)) bytes += b->bytes.size();
    }
    data.rows.push_back(row);
    if (bytes > kChartMaxBytes) {
      data.capped = true;
      break;
    }
  }
  data.capped = data.capped || live.truncated();
  Result<std::string> spec = ChartSpec(data);
  if (!spec.ok() && ctx.config->chart_model && !data.rows.empty() &&
      spec.status().kind() == ErrorKind::kInvalidArgument) {
    spec = ModelChart(ctx, run_id, data);
  }
  if (!spec.ok())
    return Status(spec.status().kind(), fmt::format("run {}: {}", run_id, spec.status().message()));
  return spec;
}

}  // namespace querypilot
