#include <gtest/gtest.h>

#include "agent/base/value.h"

namespace querypilot {
namespace {

TEST(RowToJson, StorageClasses) {
  Row row = {std::monostate{},
             int64_t{-42},
             0.1,
             3.0,
             std::string("a\"b\\c\n\x01"),
             Blob{std::string("\x00\xff", 2)},
             std::numeric_limits<double>::infinity(),
             -std::numeric_limits<double>::infinity(),
             std::numeric_limits<double>::quiet_NaN()};
  std::vector<std::string> names = {"n", "i", "r", "whole", "t", "b", "inf", "-inf", "nan"};
  // JSON has no Infinity: SQLite's json functions write 9.0e+999, which
  // reads back as infinity.
  EXPECT_EQ(
      RowToJson(names, row),
      R"({"n":null,"i":-42,"r":0.1,"whole":3.0,"t":"a\"b\\c\n\u0001","b":"00ff","inf":9.0e+999,)"
      R"("-inf":-9.0e+999,"nan":null})");
}

TEST(RowToJson, InvalidUtf8IsRepaired) {
  Row row = {std::string("caf\xC3\xA9 \xFF end")};
  EXPECT_EQ(RowToJson({"s"}, row), "{\"s\":\"caf\xC3\xA9 \xEF\xBF\xBD end\"}");
}

TEST(UniqueColumnNames, NoValueIsHidden) {
  EXPECT_EQ(UniqueColumnNames({"id", "id", "", "id"}),
            (std::vector<std::string>{"id", "id:1", "column3", "id:2"}));
}

}  // namespace
}  // namespace querypilot

#include "agent/base/text.h"

namespace querypilot {
namespace {

TEST(Utf8, ValidAndInvalidSequences) {
  struct Case {
    std::string bytes;
    bool valid;
  } cases[] = {
      {"plain", true},
      {"caf\xC3\xA9", true},
      {"\xE2\x82\xAC", true},  // euro sign
      {"\xF0\x9F\x98\x80", true},
      {"\xFF", false},
      {"\xC0\xAF", false},  // overlong '/'
      {"\xED\xA0\x80", false},
      {"\xE2\x82", false},
      {"\xF4\x90\x80\x80", false},  // > U+10FFFF
  };
  for (const auto& c : cases) EXPECT_EQ(text::IsValidUtf8(c.bytes), c.valid) << c.bytes;
  EXPECT_EQ(text::Truncate("caf\xC3\xA9", 4), "caf...");  // never cuts a character in two
}

}  // namespace
}  // namespace querypilot
