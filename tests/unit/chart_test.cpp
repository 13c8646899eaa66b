// agent_chart's choices (agent/chart/chart.h): which column is a date, which chart
// an answer's shape gives (or why none), the cap in the title, where the
// scripts are looked for, and a page that no value can break out of and
// that forbids every fetch.
#include "agent/chart/chart.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace querypilot {
namespace {

using nlohmann::json;

TEST(ChartTest, DateFormComesFromTheValuesAndTheDeclaredType) {
  struct Case {
    const char* declared;
    std::vector<Value> values;
    DateForm want;
  } cases[] = {
      {"", {std::string("2024-03-01"), std::string("2024-03-02 10:00:00")}, DateForm::kIsoText},
      {"", {std::string("2024-03"), std::string("2024-03-01T10:00:00.5Z")}, DateForm::kIsoText},
      {"", {std::string("2024-03-01T10:00+02:00")}, DateForm::kIsoText},
      {"", {std::string("2024-03-01"), std::string("soon")}, DateForm::kNone},
      {"", {std::string("2024"), std::string("2025")}, DateForm::kNone},
      {"", {std::string("2024-3-1")}, DateForm::kNone},
      // Numbers are dates only where SQLite says the column is one.
      {"", {2460000.5, 2460001.5}, DateForm::kNone},
      {"DATETIME", {2460000.5, 2460001.5}, DateForm::kJulianDay},
      {"timestamp", {int64_t{1700000000}, int64_t{1700086400}}, DateForm::kUnixTime},
      {"DATE", {int64_t{1700000000}, 2460001.5}, DateForm::kJulianDay},
      {"DATE", {std::string("2024-03-01")}, DateForm::kIsoText},
      {"DATE", {std::string("yesterday")}, DateForm::kNone},
      {"INTEGER", {int64_t{1700000000}}, DateForm::kNone},
      {"DATE", {}, DateForm::kNone},
  };
  for (const Case& c : cases) {
    std::vector<const Value*> values;
    for (const Value& v : c.values) values.push_back(&v);
    EXPECT_EQ(DateFormOf(c.declared, values), c.want) << c.declared << " " << c.values.size();
  }
}

ChartData Data(std::vector<std::string> columns, std::vector<Row> rows,
               std::vector<std::string> declared = {}) {
  ChartData d;
  d.title = "Q";
  d.columns = std::move(columns);
  d.rows = std::move(rows);
  d.declared_types = std::move(declared);
  return d;
}

TEST(ChartTest, TheShapeChoosesTheChart) {
  struct Case {
    ChartData data;
    const char* mark;   // "" when an error is wanted
    const char* x;      // encoding.x.field
    const char* error;  // part of the message
  } cases[] = {
      {Data({"category", "revenue"}, {{std::string("a"), 3.0}, {std::string("b"), int64_t{5}}}),
       "bar", "category", ""},
      {Data({"day", "n"},
            {{std::string("2024-01-01"), int64_t{3}}, {std::string("2024-01-02"), int64_t{4}}}),
       "line", "day", ""},
      {Data({"day", "n", "m"}, {{std::string("2024-01-01"), int64_t{3}, 1.0}}), "line", "day", ""},
      {Data({"day", "city", "n"}, {{std::string("2024-01-01"), std::string("Oslo"), int64_t{3}},
                                   {std::string("2024-01-02"), std::string("Oslo"), int64_t{4}}}),
       "line", "day", ""},
      {Data({"x", "y"}, {{1.0, 2.0}, {int64_t{3}, int64_t{4}}}), "point", "x", ""},
      {Data({"c", "a", "b"}, {{std::string("k"), 1.0, 2.0}}), "bar", "c", ""},
      {Data({"a.b", "n"}, {{std::string("k"), 1.0}, {std::string("l"), 2.0}}), "bar", "a\\.b", ""},
      {Data({"n"}, {{int64_t{100}}}), "", "", "the answer is a single value (n (number))"},
      {Data({"c", "n"}, {}), "", "", "the answer has no rows"},
      {Data({"a", "b"},
            {{std::string("x"), std::string("y")}, {std::string("z"), std::string("w")}}),
       "", "", "no column of numbers to draw (its columns: a (category), b (category))"},
      {Data({"c", "n"}, {{std::string("x"), Value{}}, {std::string("y"), Value{}}}), "", "",
       "no column of numbers to draw (its columns: c (category), n (NULL in every row))"},
      {Data({"n"}, {{int64_t{1}}, {int64_t{2}}}), "", "",
       "no chart fits the answer's columns (n (number))"},
      {Data({"a", "b", "n"}, {{std::string("x"), std::string("y"), 1.0}}), "", "",
       "no chart fits the answer's columns (a (category), b (category), n (number))"},
      {Data({"c", "blob", "n"},
            {{std::string("x"), Blob{"\x01"}, 1.0}, {std::string("y"), Blob{"\x02"}, 2.0}}),
       "bar", "c", ""},
  };
  for (const Case& c : cases) {
    Result<std::string> spec = ChartSpec(c.data);
    if (*c.mark == '\0') {
      ASSERT_FALSE(spec.ok()) << c.error;
      EXPECT_NE(spec.status().message().find(c.error), std::string::npos)
          << spec.status().message();
      continue;
    }
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    const json j = json::parse(*spec);
    const json mark = j["mark"].is_object() ? j["mark"]["type"] : j["mark"];
    EXPECT_EQ(mark, c.mark) << *spec;
    EXPECT_EQ(j["encoding"]["x"]["field"], c.x) << *spec;
    EXPECT_EQ(j["data"]["values"].size(), c.data.rows.size());
    EXPECT_EQ(j["title"], "Q");
  }
}

// A CSV imported without a typed table leaves every column TEXT: where no
// column holds numbers, one whose text all reads as numbers is drawn as one.
TEST(ChartTest, TextThatReadsAsNumbersIsDrawnAsNumbers) {
  Result<std::string> spec =
      ChartSpec(Data({"title", "pages"}, {{std::string("Emma"), std::string("370")},
                                          {std::string("Dune"), std::string(" 412.5 ")},
                                          {std::string("Ulysses"), std::string("-1e3")}}));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  json j = json::parse(*spec);
  EXPECT_EQ(j["mark"], "bar") << *spec;
  EXPECT_EQ(j["encoding"]["x"]["field"], "title");
  EXPECT_EQ(j["encoding"]["y"]["field"], "pages");
  EXPECT_EQ(j["data"]["values"][0]["pages"], 370);
  EXPECT_EQ(j["data"]["values"][1]["pages"], 412.5);
  EXPECT_EQ(j["data"]["values"][2]["pages"], -1000.0);
  EXPECT_NE(j["description"].get<std::string>().find("numbers read from text: pages"),
            std::string::npos)
      << j["description"];
  // Two such columns: a scatter plot.
  spec = ChartSpec(Data({"year", "pages"}, {{std::string("1815"), std::string("370")},
                                            {std::string("1965"), std::string("412")}}));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(json::parse(*spec)["mark"], "point") << *spec;
  // A column of numbers beside it: the text stays a category (years as
  // labels, "02134" as a code), as before.
  spec = ChartSpec(
      Data({"year", "n"}, {{std::string("2019"), int64_t{3}}, {std::string("2020"), int64_t{4}}}));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  j = json::parse(*spec);
  EXPECT_EQ(j["mark"], "bar") << *spec;
  EXPECT_EQ(j["data"]["values"][0]["year"], "2019");
  // Text that does not all read as numbers is no number.
  spec = ChartSpec(Data({"title", "pages"}, {{std::string("Emma"), std::string("370")},
                                             {std::string("Dune"), std::string("n/a")}}));
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("no column of numbers"), std::string::npos);
}

// Rows of a category and `numbers` numbers, one row per label.
ChartData Bars(const std::vector<std::string>& labels, size_t numbers = 1) {
  std::vector<std::string> columns = {"label"};
  for (size_t k = 0; k < numbers; ++k) columns.push_back("n" + std::to_string(k));
  std::vector<Row> rows;
  for (size_t i = 0; i < labels.size(); ++i) {
    Row row = {labels[i]};
    for (size_t k = 0; k < numbers; ++k) row.push_back(static_cast<int64_t>(i + k + 1));
    rows.push_back(std::move(row));
  }
  return Data(std::move(columns), std::move(rows));
}

std::vector<std::string> Labels(size_t n, const std::string& prefix) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(prefix + (i < 10 ? "0" : "") + std::to_string(i));
  return out;
}

// A chart of bars is as wide as its bars need: 24 px a bar at least, 300 px
// in all at least; its labels lie flat where the longest fits a band (a band
// widened for it while the chart stays within 800 px), angled otherwise.
TEST(ChartTest, BarsAreAsWideAsTheirBarsAndLabelsLieFlatWhenTheyFit) {
  const std::string long_label = "a category whose name runs on and on, fifty chars";
  // "\u00e9" 18 times and two digits: 20 characters, 38 bytes.
  std::string accented;
  for (int i = 0; i < 18; ++i) accented += "\xC3\xA9";
  struct Case {
    const char* what;
    ChartData data;
    int64_t width;
    int label_angle;
  } cases[] = {
      {"4 short labels", Bars({"Outdoor", "Electronics", "Home", "Kitchen"}), 300, 0},
      {"40 short labels", Bars(Labels(40, "c")), 40 * 24, 0},
      {"40 long labels", Bars(Labels(40, "a category named ")), 40 * 24, -45},
      // 21 characters: each band widened to 6 px a character and a 6 px gap.
      {"4 labels widened for", Bars(Labels(4, "Kitchen and dining ")), 4 * (21 * 6 + 6), 0},
      {"4 labels too long to lie flat", Bars(Labels(4, long_label)), 300, -45},
      {"11 countries", Bars(Labels(11, "United Kingdom ")), 300, -45},
      // Characters, not bytes: 20 two-byte letters fit a 126 px band.
      {"4 labels of two-byte letters", Bars(Labels(4, accented)), 4 * (20 * 6 + 6), 0},
      // Grouped bars: a band holds a bar per number column.
      {"10 categories of 3 numbers", Bars(Labels(10, "c"), 3), 10 * 3 * 24, 0},
      {"2 categories of 2 numbers", Bars(Labels(2, "c"), 2), 300, 0},
  };
  for (const Case& c : cases) {
    Result<std::string> spec = ChartSpec(c.data);
    ASSERT_TRUE(spec.ok()) << c.what << ": " << spec.status().message();
    const json j = json::parse(*spec);
    EXPECT_EQ(j["mark"], "bar") << c.what;
    EXPECT_EQ(j.value("width", json()), c.width) << c.what << ": " << *spec;
    const json axis = j["encoding"]["x"].value("axis", json::object());
    EXPECT_EQ(axis.value("labelAngle", json()), c.label_angle) << c.what << ": " << *spec;
    if (c.label_angle != 0) {
      EXPECT_EQ(axis.value("labelLimit", json()), 150) << c.what;
    } else {
      EXPECT_FALSE(axis.contains("labelLimit")) << c.what;
    }
  }
}

// Whatever the labels, no bar's band is below 24 px, nor the chart below
// 300 px; flat labels never get a band narrower than they are.
TEST(ChartTest, BarsWidthFollowsTheirNumber) {
  for (const char* prefix : {"", "item ", "a longer category name "}) {
    for (size_t n = 2; n <= 60; ++n) {
      Result<std::string> spec = ChartSpec(Bars(Labels(n, prefix)));
      ASSERT_TRUE(spec.ok()) << spec.status().message();
      const json j = json::parse(*spec);
      const int64_t width = j.value("width", int64_t{0});
      EXPECT_GE(width, std::max<int64_t>(300, static_cast<int64_t>(n) * 24)) << prefix << n;
      const int64_t chars = static_cast<int64_t>(std::string(prefix).size()) + 2;
      if (j["encoding"]["x"]["axis"].value("labelAngle", 1) == 0) {
        EXPECT_GE(width, static_cast<int64_t>(n) * (chars * 6 + 6)) << prefix << n;
      }
    }
  }
}

TEST(ChartTest, ACappedChartSaysSoAndLeftOutColumnsAreNamed) {
  ChartData d = Data({"c", "none", "n"},
                     {{std::string("x"), Value{}, 1.0}, {std::string("y"), Value{}, 2.0}});
  d.capped = true;
  Result<std::string> spec = ChartSpec(d);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const json j = json::parse(*spec);
  EXPECT_EQ(j["title"], "Q (the first 2 rows only)");
  EXPECT_NE(j["description"].get<std::string>().find("left out: none"), std::string::npos);
  EXPECT_FALSE(j["data"]["values"][0].contains("none"));
}

TEST(ChartTest, JulianDaysAndUnixTimesBecomeMilliseconds) {
  Result<std::string> spec =
      ChartSpec(Data({"taken", "level", "at"},
                     {{2460310.5, 3.0, int64_t{1704067200}}, {2460311.5, 4.0, int64_t{0}}},
                     {"DATETIME", "REAL", "TIMESTAMP"}));
  // A date and two numbers? "at" is a date too: no chart fits two dates.
  ASSERT_FALSE(spec.ok());
  spec = ChartSpec(
      Data({"taken", "level"}, {{2460310.5, 3.0}, {2460311.5, 4.0}}, {"DATETIME", "REAL"}));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const json j = json::parse(*spec);
  EXPECT_EQ(j["encoding"]["x"]["type"], "temporal");
  EXPECT_EQ(j["data"]["values"][0]["taken"].get<double>(), 1704067200000.0);  // 2024-01-01
}

TEST(ChartTest, ScriptsAreLookedForInTheSettingAloneWhenItIsSet) {
  EXPECT_EQ(ChartScriptFolders("/opt/js", "/x/lib"), std::vector<std::string>{"/opt/js"});
  const std::vector<std::string> usual = ChartScriptFolders("", "/app/node_modules/querypilot/lib");
  ASSERT_GE(usual.size(), 3u);
  EXPECT_EQ(usual[0], "/app/node_modules/querypilot/lib/../node_modules");
  EXPECT_EQ(usual[1], "/app/node_modules/querypilot/lib/../..");
  Result<ChartScripts> none = FindChartScripts({"/nonexistent/one", "/nonexistent/two"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("npm install vega@5 vega-lite@5 vega-embed@6"),
            std::string::npos);
  EXPECT_NE(none.status().message().find("/nonexistent/one, /nonexistent/two"), std::string::npos);
}

TEST(ChartTest, NoValueOrScriptEndsThePageEarly) {
  ChartScripts scripts;
  scripts.vega = "var a = '</script><b>';";
  scripts.vega_lite = "var b = 1;";
  scripts.vega_embed = "var c = '</SCRIPT >';";
  const std::string page =
      ChartHtml(R"({"title":"</script><script>alert(1)</script>"})", scripts, "<b>&</b>");
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  EXPECT_EQ(page.find("</SCRIPT"), std::string::npos);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(page.find("<title>&lt;b&gt;&amp;&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
}

TEST(ChartTest, ThePageForbidsEveryFetchBeforeAnyScriptRuns) {
  ChartScripts scripts;
  scripts.vega = "var a = 1;";
  scripts.vega_lite = "var b = 2;";
  scripts.vega_embed = "var c = 3;";
  const std::string page = ChartHtml(R"({"mark": "bar"})", scripts, "t");
  const size_t policy = page.find(
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src "
      "'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action "
      "'none'\">");
  ASSERT_NE(policy, std::string::npos) << page;
  EXPECT_LT(policy, page.find("<script>"));
  EXPECT_LT(policy, page.find("<title>"));
  // No 'unsafe-eval': Vega's expressions are interpreted (ast), and its
  // loader refuses whatever a spec asks it to load.
  EXPECT_EQ(page.find("unsafe-eval"), std::string::npos);
  EXPECT_NE(page.find("ast: true"), std::string::npos);
  EXPECT_NE(page.find("loader.load = loader.sanitize = loader.http = loader.file = refuse;"),
            std::string::npos);
  EXPECT_NE(page.find("loader: loader"), std::string::npos);
}

}  // namespace
}  // namespace querypilot
