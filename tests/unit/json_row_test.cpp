#include <gtest/gtest.h>

#include "agent/value.h"

namespace querypilot {
namespace {

TEST(RowToJson, StorageClasses) {
  Row row = {std::monostate{}, int64_t{-42}, 0.1, 3.0, std::string("a\"b\\c\n\x01"), Blob{std::string("\x00\xff", 2)},
             std::numeric_limits<double>::infinity()};
  std::vector<std::string> names = {"n", "i", "r", "whole", "t", "b", "inf"};
  EXPECT_EQ(RowToJson(names, row),
            R"({"n":null,"i":-42,"r":0.1,"whole":3.0,"t":"a\"b\\c\n\u0001","b":"00ff","inf":null})");
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
