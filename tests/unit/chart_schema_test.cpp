// The JSON Schema validator a model's chart must pass (agent/chart/chart_schema.h):
// each keyword it reads on small schemas, a $ref cycle that stops, and
// Vega-Lite's own schema when npm's vega-lite is installed; and the checks
// of a model's chart (agent/chart/chart.h's CheckedModelSpec); and the cache that
// keeps a schema file parsed until it changes (JsonFileCache).
#include "agent/chart/chart_schema.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/chart/chart.h"

namespace querypilot {
namespace {

using nlohmann::json;

Status V(const char* schema, const char* doc) {
  return ValidateAgainstSchema(json::parse(schema), json::parse(doc));
}

TEST(ChartSchemaTest, TypeAndIntegers) {
  EXPECT_TRUE(V(R"({"type": "string"})", R"("a")").ok());
  EXPECT_FALSE(V(R"({"type": "string"})", "1").ok());
  EXPECT_TRUE(V(R"({"type": ["number", "null"]})", "null").ok());
  EXPECT_TRUE(V(R"({"type": "integer"})", "2.0").ok());
  EXPECT_FALSE(V(R"({"type": "integer"})", "2.5").ok());
  EXPECT_FALSE(V(R"({"type": "object"})", "[]").ok());
  EXPECT_FALSE(V(R"({"type": "boolean"})", "0").ok());
}

TEST(ChartSchemaTest, EnumConstMinimumMaximum) {
  EXPECT_TRUE(V(R"({"enum": ["bar", "line"]})", R"("bar")").ok());
  Status st = V(R"({"enum": ["bar", "line"]})", R"("banana")");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("\"banana\" is not one of"), std::string::npos) << st.message();
  EXPECT_TRUE(V(R"({"const": 3})", "3").ok());
  EXPECT_FALSE(V(R"({"const": 3})", "4").ok());
  EXPECT_TRUE(V(R"({"minimum": 0, "maximum": 1})", "0.5").ok());
  EXPECT_FALSE(V(R"({"minimum": 0})", "-1").ok());
  EXPECT_FALSE(V(R"({"maximum": 1})", "2").ok());
}

TEST(ChartSchemaTest, PropertiesRequiredAdditionalPropertiesAndThePath) {
  const char* schema = R"({"type": "object", "required": ["mark"],
    "properties": {"mark": {"type": "string"}, "enc": {"type": "object",
      "properties": {"x": {"type": "string"}}, "additionalProperties": false}},
    "additionalProperties": {"type": "number"}})";
  EXPECT_TRUE(V(schema, R"({"mark": "bar", "enc": {"x": "a"}, "n": 1})").ok());
  Status missing = V(schema, R"({"enc": {}})");
  EXPECT_NE(missing.message().find("at /: the property 'mark' is required"), std::string::npos)
      << missing.message();
  Status extra = V(schema, R"({"mark": "bar", "enc": {"y": "a"}})");
  EXPECT_NE(extra.message().find("at /enc: the property 'y' is not allowed"), std::string::npos)
      << extra.message();
  Status nested = V(schema, R"({"mark": "bar", "enc": {"x": 1}})");
  EXPECT_NE(nested.message().find("at /enc/x: 1 is not of type"), std::string::npos)
      << nested.message();
  EXPECT_FALSE(V(schema, R"({"mark": "bar", "n": "one"})").ok());
}

TEST(ChartSchemaTest, ItemsAsOneSchemaOrPerPosition) {
  EXPECT_TRUE(V(R"({"items": {"type": "number"}})", "[1, 2]").ok());
  Status st = V(R"({"items": {"type": "number"}})", R"([1, "a"])");
  EXPECT_NE(st.message().find("at /1:"), std::string::npos) << st.message();
  EXPECT_TRUE(
      V(R"({"items": [{"type": "string"}, {"type": "number"}]})", R"(["a", 1, null])").ok());
  EXPECT_FALSE(V(R"({"items": [{"type": "string"}]})", "[1]").ok());
}

TEST(ChartSchemaTest, AnyOfAllOfOneOf) {
  EXPECT_TRUE(V(R"({"anyOf": [{"type": "string"}, {"type": "number"}]})", "1").ok());
  EXPECT_FALSE(V(R"({"anyOf": [{"type": "string"}, {"type": "number"}]})", "null").ok());
  EXPECT_TRUE(V(R"({"allOf": [{"minimum": 0}, {"maximum": 5}]})", "3").ok());
  EXPECT_FALSE(V(R"({"allOf": [{"minimum": 0}, {"maximum": 5}]})", "6").ok());
  EXPECT_TRUE(V(R"({"oneOf": [{"type": "string"}, {"type": "number"}]})", "1").ok());
  Status both = V(R"({"oneOf": [{"minimum": 0}, {"maximum": 5}]})", "3");
  EXPECT_NE(both.message().find("matches 2 forms"), std::string::npos) << both.message();
  // The reason of a failed anyOf is its deepest branch's.
  Status deep = V(R"({"anyOf": [{"type": "string"},
    {"type": "object", "properties": {"mark": {"enum": ["bar"]}}}]})",
                  R"({"mark": "banana"})");
  EXPECT_NE(deep.message().find("at /mark:"), std::string::npos) << deep.message();
}

TEST(ChartSchemaTest, RefsIntoDefinitionsPercentEncodedAndMissing) {
  const char* schema = R"({"$ref": "#/definitions/Spec%3CA%3E",
    "definitions": {"Spec<A>": {"type": "object",
      "properties": {"child": {"$ref": "#/definitions/Spec%3CA%3E"}, "n": {"type": "number"}}}}})";
  EXPECT_TRUE(V(schema, R"({"child": {"child": {"n": 1}}})").ok());
  Status st = V(schema, R"({"child": {"child": {"n": "x"}}})");
  EXPECT_NE(st.message().find("at /child/child/n:"), std::string::npos) << st.message();
  Status missing = V(R"({"$ref": "#/definitions/Nope"})", "1");
  EXPECT_NE(missing.message().find("not in it"), std::string::npos) << missing.message();
}

TEST(ChartSchemaTest, ARefCycleAndAnExplosionAreBounded) {
  Status cycle =
      V(R"({"$ref": "#/definitions/A", "definitions": {"A": {"$ref": "#/definitions/A"}}})", "1");
  EXPECT_FALSE(cycle.ok());
  EXPECT_NE(cycle.message().find("nests deeper than"), std::string::npos) << cycle.message();
  // Each level tries two branches that both fail deep down: 2^40 checks
  // unbounded, stopped by the step bound.
  json schema = {{"definitions", json::object()}};
  for (int i = 0; i < 40; ++i) {
    const std::string next = "#/definitions/L" + std::to_string(i + 1);
    schema["definitions"]["L" + std::to_string(i)] = {
        {"anyOf", json::array({{{"$ref", next}}, {{"$ref", next}}})}};
  }
  schema["definitions"]["L40"] = {{"type", "string"}};
  schema["$ref"] = "#/definitions/L0";
  Status many = ValidateAgainstSchema(schema, json(1), 100000, 200);
  EXPECT_FALSE(many.ok());
  EXPECT_NE(many.message().find("more than 100000 steps"), std::string::npos) << many.message();
}

// npm's vega-lite, where the chart tests install it (tests/e2e/harness.py).
std::string VegaLiteFolder() {
  std::string clients;
  if (const char* dir = std::getenv("QP_CLIENTS_DIR")) {
    clients = dir;
  } else if (const char* cache = std::getenv("XDG_CACHE_HOME")) {
    clients = std::string(cache) + "/querypilot/clients";
  } else if (const char* home = std::getenv("HOME")) {
    clients = std::string(home) + "/.cache/querypilot/clients";
  }
  return clients + "/charts/node_modules";
}

TEST(ChartSchemaTest, VegaLitesOwnSchema) {
  Result<std::shared_ptr<const json>> schema = ReadChartSchema({VegaLiteFolder()});
  if (!schema.ok())
    GTEST_SKIP() << "npm's vega-lite is not installed: " << schema.status().message();
  json spec = json::parse(R"({"data": {"values": [{"a": "x", "b": 1}]}, "mark": "bar",
    "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}})");
  Status ok = ValidateAgainstSchema(**schema, spec);
  EXPECT_TRUE(ok.ok()) << ok.message();
  spec["mark"] = "banana";
  Status banana = ValidateAgainstSchema(**schema, spec);
  EXPECT_FALSE(banana.ok());
  EXPECT_NE(banana.message().find("banana"), std::string::npos) << banana.message();
  spec["mark"] = "bar";
  spec["encoding"]["x"]["type"] = "sideways";
  EXPECT_FALSE(ValidateAgainstSchema(**schema, spec).ok());
}

TEST(ChartSchemaTest, WithoutTheSchemaTheErrorSaysWhatToInstall) {
  Result<std::shared_ptr<const json>> schema = ReadChartSchema({"/nonexistent/node_modules"});
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.status().message().find("npm install vega-lite@5"), std::string::npos);
  EXPECT_NE(schema.status().message().find("/nonexistent/node_modules"), std::string::npos);
}

// A JsonFileCache whose reads are counted, over files in a folder of its own.
class JsonFileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qp-json-cache-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p.string();
  }
  // The file's modification time set to `t`, so that no test depends on the
  // clock having moved between two writes.
  static void SetModified(const std::string& path, std::filesystem::file_time_type t) {
    std::filesystem::last_write_time(path, t);
  }

  std::filesystem::path dir_;
  std::atomic<int> reads_{0};
  JsonFileCache cache_{[this](const std::string& path) {
    ++reads_;
    return ReadWholeFile(path);
  }};
};

TEST_F(JsonFileCacheTest, AnUnchangedFileIsReadOnce) {
  const std::string path = Write("s.json", R"({"v": 1})");
  auto first = cache_.Get(path);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ((*first)["v"], 1);
  auto second = cache_.Get(path);
  EXPECT_EQ(second, first);  // the same parsed value, shared
  EXPECT_EQ(cache_.Get(path), first);
  EXPECT_EQ(reads_, 1);
}

TEST_F(JsonFileCacheTest, ANewModificationTimeIsReadAgain) {
  const std::string path = Write("s.json", R"({"v": 1})");
  const auto t = std::filesystem::last_write_time(path);
  ASSERT_EQ((*cache_.Get(path))["v"], 1);
  // The same size, another text, and a modification time a second later.
  Write("s.json", R"({"v": 2})");
  SetModified(path, t + std::chrono::seconds(1));
  EXPECT_EQ((*cache_.Get(path))["v"], 2);
  EXPECT_EQ(reads_, 2);
  EXPECT_EQ((*cache_.Get(path))["v"], 2);
  EXPECT_EQ(reads_, 2);
  // Written again and its time set back: a time other than the one read.
  Write("s.json", R"({"v": 3})");
  SetModified(path, t);
  EXPECT_EQ((*cache_.Get(path))["v"], 3);
  EXPECT_EQ(reads_, 3);
}

TEST_F(JsonFileCacheTest, ANewSizeIsReadAgainAtTheSameTime) {
  const std::string path = Write("s.json", R"({"v": 1})");
  const auto t = std::filesystem::last_write_time(path);
  ASSERT_EQ((*cache_.Get(path))["v"], 1);
  Write("s.json", R"({"v": 100})");
  SetModified(path, t);
  EXPECT_EQ((*cache_.Get(path))["v"], 100);
  EXPECT_EQ(reads_, 2);
}

TEST_F(JsonFileCacheTest, AFileReplacedByAnotherIsReadAgain) {
  // npm installs a file anew: another inode, whatever its size and time.
  const std::string path = Write("s.json", R"({"v": 1})");
  const auto t = std::filesystem::last_write_time(path);
  ASSERT_EQ((*cache_.Get(path))["v"], 1);
  const std::string other = Write("other.json", R"({"v": 2})");
  SetModified(other, t);
  std::filesystem::rename(other, path);
  EXPECT_EQ((*cache_.Get(path))["v"], 2);
  EXPECT_EQ(reads_, 2);
}

TEST_F(JsonFileCacheTest, MissingAndNotJson) {
  EXPECT_EQ(cache_.Get((dir_ / "none.json").string()), nullptr);
  EXPECT_EQ(reads_, 0);
  const std::string path = Write("bad.json", "{not json");
  auto bad = cache_.Get(path);
  ASSERT_NE(bad, nullptr);
  EXPECT_TRUE(bad->is_discarded());
  EXPECT_EQ(cache_.Get(path), bad);  // unchanged: not read again either
  EXPECT_EQ(reads_, 1);
  std::filesystem::remove(path);
  EXPECT_EQ(cache_.Get(path), nullptr);  // gone: nothing is served from before
}

TEST_F(JsonFileCacheTest, KeepsAtMostItsFilesDroppingTheOneUsedLongestAgo) {
  std::vector<std::string> paths;
  for (size_t i = 0; i <= JsonFileCache::kMaxFiles; ++i)
    paths.push_back(Write("f" + std::to_string(i) + ".json", std::to_string(i)));
  for (size_t i = 0; i < JsonFileCache::kMaxFiles; ++i) cache_.Get(paths[i]);
  cache_.Get(paths[0]);                         // f0 used last: f1 is the oldest now
  cache_.Get(paths[JsonFileCache::kMaxFiles]);  // one too many: f1 is dropped
  EXPECT_EQ(reads_, static_cast<int>(JsonFileCache::kMaxFiles) + 1);
  cache_.Get(paths[0]);
  EXPECT_EQ(reads_, static_cast<int>(JsonFileCache::kMaxFiles) + 1);
  cache_.Get(paths[1]);
  EXPECT_EQ(reads_, static_cast<int>(JsonFileCache::kMaxFiles) + 2);
}

TEST_F(JsonFileCacheTest, ConnectionsAskingAtOnceReadTheFileOnce) {
  const std::string path = Write("s.json", R"({"v": 1})");
  std::vector<std::thread> threads;
  std::atomic<int> ones{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) {
        auto v = cache_.Get(path);
        if (v && (*v)["v"] == 1) ++ones;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ones, 200);
  EXPECT_EQ(reads_, 1);
}

ChartData TwoCategories() {
  ChartData data;
  data.title = "Prices by name";
  data.columns = {"name", "category", "price"};
  data.declared_types = {"TEXT", "TEXT", "REAL"};
  data.rows = {{std::string("pen"), std::string("office"), 2.5},
               {std::string("ink"), std::string("office"), 7.0}};
  return data;
}

const json& SmallSchema() {
  static const json schema = json::parse(R"({"type": "object", "required": ["data", "mark"],
    "properties": {"mark": {"enum": ["bar", "point"]}}})");
  return schema;
}

TEST(ChartSchemaTest, AModelsChartGetsTheRowsAndNeverItsOwnData) {
  Result<std::string> spec = CheckedModelSpec(
      "Here:\n```json\n{\"mark\": \"bar\", \"data\": {\"url\": \"http://example.com/x.csv\"}, "
      "\"layer\": [{\"data\": {\"values\": [1]}}], "
      "\"encoding\": {\"x\": {\"field\": \"name\"}, \"y\": {\"field\": \"price\"}}}\n```\n",
      TwoCategories(), SmallSchema());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  json got = json::parse(*spec);
  EXPECT_EQ(got["data"]["values"].size(), 2u);
  EXPECT_EQ(got["data"]["values"][1]["price"], 7.0);
  EXPECT_FALSE(got["data"].contains("url"));
  EXPECT_FALSE(got["layer"][0].contains("data"));
  EXPECT_EQ(got["title"], "Prices by name");
}

TEST(ChartSchemaTest, AModelsChartOfCappedRowsSaysSoInItsOwnTitle) {
  ChartData data = TwoCategories();
  data.capped = true;
  for (const char* title : {R"("title": "Prices", )", R"("title": {"text": "Prices"}, )", ""}) {
    Result<std::string> spec = CheckedModelSpec(
        std::string("{") + title +
            R"("mark": "bar", "encoding": {"x": {"field": "name"}, "y": {"field": "price"}}})",
        data, SmallSchema());
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    json got = json::parse(*spec);
    const json& text = got["title"].is_object() ? got["title"]["text"] : got["title"];
    EXPECT_EQ(text, std::string(*title ? "Prices" : "Prices by name") + " (the first 2 rows only)")
        << title;
  }
}

TEST(ChartSchemaTest, AModelsChartIsRefusedWithTheReason) {
  Result<std::string> unknown = CheckedModelSpec(
      R"({"mark": "bar", "encoding": {"x": {"field": "colour"}}})", TwoCategories(), SmallSchema());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("/encoding/x/field names 'colour', not a column"),
            std::string::npos)
      << unknown.status().message();
  Result<std::string> invalid =
      CheckedModelSpec(R"({"mark": "banana"})", TwoCategories(), SmallSchema());
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.status().message().find("at /mark: \"banana\" is not one of"),
            std::string::npos)
      << invalid.status().message();
  Result<std::string> image = CheckedModelSpec(
      R"({"mark": "image", "encoding": {"url": {"value": "http://127.0.0.1:9/x.png"}}})",
      TwoCategories(), SmallSchema());
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("/encoding/url would be fetched"), std::string::npos)
      << image.status().message();
  Result<std::string> link =
      CheckedModelSpec(R"({"mark": {"type": "bar", "href": "http://127.0.0.1:9/"}})",
                       TwoCategories(), SmallSchema());
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("/mark/href would make the chart's marks links"),
            std::string::npos)
      << link.status().message();
  Result<std::string> prose =
      CheckedModelSpec("I cannot draw that.", TwoCategories(), SmallSchema());
  ASSERT_FALSE(prose.ok());
  EXPECT_EQ(prose.status().kind(), ErrorKind::kProviderBadResponse);
}

TEST(ChartSchemaTest, AModelsChartKeepsOnlyTheMembersThatDraw) {
  // usermeta.embedOptions is what vega-embed reads as its options: a config,
  // a patch, a loader's baseURL, all fetched. It is dropped, with $schema
  // and any member Vega-Lite's top-level specifications do not draw with.
  Result<std::string> spec = CheckedModelSpec(
      R"({"$schema": "http://127.0.0.1:9/schema.json", "mark": "bar",
          "usermeta": {"embedOptions": {"config": "http://127.0.0.1:9/config.json",
                                        "loader": {"baseURL": "http://127.0.0.1:9/"},
                                        "patch": "patch.json"}},
          "embedOptions": {"patch": "patch.json"}, "padding": 5,
          "encoding": {"x": {"field": "name"}, "y": {"field": "price"}}})",
      TwoCategories(), SmallSchema());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  json got = json::parse(*spec);
  EXPECT_FALSE(got.contains("usermeta"));
  EXPECT_FALSE(got.contains("embedOptions"));
  EXPECT_EQ(got["$schema"], "https://vega.github.io/schema/vega-lite/v5.json");
  EXPECT_EQ(got["padding"], 5);
  EXPECT_EQ(got["mark"], "bar");
}

TEST(ChartSchemaTest, AModelsChartNamingAUrlIsRefusedWithItsPath) {
  struct Case {
    const char* member;  // added to a bar chart of name and price
    const char* path;    // where the refusal says the URL is
  };
  const Case cases[] = {
      {R"j("mark": {"type": "bar", "fill": "url(http://127.0.0.1:9/p.svg#p)"})j", "/mark/fill "},
      {R"j("mark": {"type": "bar", "fill": "URL( '#p' )"})j", "/mark/fill "},
      {R"j("mark": {"type": "bar", "stroke": "\\75 rl(x.svg)"})j", "/mark/stroke "},
      {R"j("mark": {"type": "bar", "cursor": "image-set('x.png' 1x)"})j", "/mark/cursor "},
      {R"j("background": "https://127.0.0.1:9/")j", "/background "},
      {R"j("title": {"text": "Prices", "subtitle": "ftp://127.0.0.1/x"})j", "/title/subtitle "},
      {R"j("title": " file:///etc/passwd")j", "/title "},
      {R"j("title": "data:image/png;base64,AAAA")j", "/title "},
      {R"j("title": "see data: text/html,x")j", "/title "},
      {R"j("title": "//127.0.0.1:9/x")j", "/title "},
      {R"j("title": "\\\\127.0.0.1\\x")j", "/title "},
      {R"j("title": "ht\ttp://127.0.0.1:9/")j", "/title "},
      {R"j("title": "JavaScript:alert(1)")j", "/title "},
      {R"j("config": {"legend": {"labelFont": "x"}, "mark": {"fill": "url(#p)"}})j",
       "/config/mark/fill "},
      {R"j("transform": [{"calculate": "'http://127.0.0.1:9/' + datum.name", "as": "u"}])j",
       "/transform/0/calculate "},
      {R"j("layer": [{"mark": {"type": "bar", "fill": "url(//h/p)"}}])j", "/layer/0/mark/fill "},
  };
  for (const Case& c : cases) {
    Result<std::string> spec =
        CheckedModelSpec(std::string("{") + c.member +
                             R"(, "encoding": {"x": {"field": "name"}, "y": {"field": "price"}}})",
                         TwoCategories(), SmallSchema());
    ASSERT_FALSE(spec.ok()) << c.member;
    const std::string& why = spec.status().message();
    EXPECT_EQ(spec.status().kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(why.find(std::string("the model's chart was refused: ") + c.path + "names a URL"),
              std::string::npos)
        << c.member << ": " << why;
  }
}

TEST(ChartSchemaTest, OrdinaryTextIsNotAUrl) {
  for (const char* title :
       {"Sales data: by month", "Revenue: http, ftp and mail orders", "a/b // c", "Price (EUR)",
        "metadata:x", "https-only traffic", "curl(1) calls", "Prices by name"}) {
    Result<std::string> spec = CheckedModelSpec(
        json({{"mark", "bar"}, {"title", title}, {"encoding", {{"x", {{"field", "name"}}}}}})
            .dump(),
        TwoCategories(), SmallSchema());
    ASSERT_TRUE(spec.ok()) << title << ": " << spec.status().message();
    EXPECT_EQ(json::parse(*spec)["title"], title);
  }
}

}  // namespace
}  // namespace querypilot
