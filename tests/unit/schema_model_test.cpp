// How a table is shown to the model.
#include "agent/base/schema_model.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

TEST(SchemaModel, AKeyOfSeveralColumnsIsOneTableConstraint) {
  TableInfo t{"countrylanguage", false,
              {{"CountryCode", "char(3)", true, true}, {"Language", "char(30)", true, true},
               {"IsOfficial", "TEXT"}},
              {{"CountryCode", "country", "Code"}}, {}};
  EXPECT_EQ(RenderTable(t),
            "CREATE TABLE countrylanguage (\n"
            "  CountryCode char(3),\n"
            "  Language char(30),\n"
            "  IsOfficial TEXT,\n"
            "  PRIMARY KEY (CountryCode, Language),\n"
            "  FOREIGN KEY (CountryCode) REFERENCES country(Code)\n"
            ");\n");
  TableInfo single{"country", false, {{"Code", "char(3)", true, true}, {"Name", "TEXT", false, true}}, {}, {}};
  EXPECT_EQ(RenderTable(single), "CREATE TABLE country (\n  Code char(3) PRIMARY KEY,\n  Name TEXT NOT NULL\n);\n");
  TableInfo no_fk{"pair", false, {{"a", "INTEGER", true}, {"b", "INTEGER", true}}, {}, {}};
  EXPECT_EQ(RenderTable(no_fk), "CREATE TABLE pair (\n  a INTEGER,\n  b INTEGER,\n  PRIMARY KEY (a, b)\n);\n");
}

}  // namespace
}  // namespace querypilot
