#include "agent/prompt/extract.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

TEST(ExtractSql, RealReplyShapes) {
  struct Case {
    const char* name;
    const char* reply;
    const char* want;
  } cases[] = {
      {"bare", "SELECT name FROM customers;", "SELECT name FROM customers"},
      {"bare multiline", "SELECT name\nFROM customers\nWHERE id = 1",
       "SELECT name\nFROM customers\nWHERE id = 1"},
      {"fenced with prose", "Sure! Here it is:\n\n```sql\nSELECT 1;\n```\nThis counts rows.",
       "SELECT 1"},
      {"fenced sqlite tag", "```sqlite\nSELECT 2\n```", "SELECT 2"},
      {"fenced no tag", "```\nSELECT 3;\n```", "SELECT 3"},
      {"last sql block wins", "Draft:\n```sql\nSELECT 1\n```\nBetter:\n```sql\nSELECT 2\n```",
       "SELECT 2"},
      {"json object", "{\"sql\": \"SELECT 4\"}", "SELECT 4"},
      {"json in prose", "The answer is {\"sql\": \"SELECT 5;\", \"explanation\": \"x\"} ok",
       "SELECT 5"},
      {"json fenced", "```json\n{\"sql\": \"SELECT 6\"}\n```", "SELECT 6"},
      {"think block", "<think>maybe SELECT * FROM x</think>\n```sql\nSELECT 7\n```", "SELECT 7"},
      {"lone closing think", "reasoning...</think>SELECT 8", "SELECT 8"},
      {"label", "SQL: SELECT 9", "SELECT 9"},
      {"with cte", "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
       "WITH t AS (SELECT 1 AS x) SELECT x FROM t"},
      {"prose then sql line", "You can use this query:\nSELECT 10;\nIt returns ten.", "SELECT 10"},
      {"keeps a second statement for the critic", "SELECT 1; DELETE FROM t",
       "SELECT 1; DELETE FROM t"},
      {"unterminated fence", "```sql\nSELECT 11\n", "SELECT 11"},
      {"semicolon in string kept", "SELECT ';' AS s;", "SELECT ';' AS s"},
  };
  for (const auto& c : cases) {
    Result<std::string> got = ExtractSql(c.reply);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    EXPECT_EQ(got.value(), c.want) << c.name;
  }
}

TEST(ExtractSql, NoSql) {
  const char* replies[] = {"", "   \n ", "I cannot answer that question.", "<think>hmm</think>",
                           "{\"answer\": 42}"};
  for (const char* r : replies) {
    Result<std::string> got = ExtractSql(r);
    ASSERT_FALSE(got.ok()) << r;
    EXPECT_EQ(got.status().kind(), ErrorKind::kNoSql) << r;
  }
}

TEST(ExtractSql, LongProseIsQuotedShortAndValidUtf8) {
  std::string reply(500, 'x');
  reply += "\xC3\xA9";  // é
  Result<std::string> got = ExtractSql(std::string(159, 'a') + "\xC3\xA9" + reply);
  ASSERT_FALSE(got.ok());
  EXPECT_LT(got.status().message().size(), 220u);
  EXPECT_NE(got.status().message().find("...\""), std::string::npos);
}

}  // namespace
}  // namespace querypilot

namespace querypilot {
namespace {

TEST(ExtractClarification, ReplyShapes) {
  struct Case {
    const char* reply;
    std::vector<std::string> want;
  } cases[] = {
      {"```clarify\n- Which year do you mean by last year: 2024 or the last 12 months?\n- Spent: "
       "order totals or paid invoices?\n```",
       {"Which year do you mean by last year: 2024 or the last 12 months?",
        "Spent: order totals or paid invoices?"}},
      {"I need to know more.\n```clarify\n1. Which region?\n2) Which currency?\n\n```",
       {"Which region?", "Which currency?"}},
      {"<think>ambiguous</think>```clarification\nWhich period?\n```", {"Which period?"}},
      {"{\"clarify\": [\"Which period?\", 3, \"Which store?\"]}",
       {"Which period?", "Which store?"}},
      {"```sql\nSELECT 1\n```", {}},
      {"Which period do you mean?", {}},  // prose alone is not a clarification block
      {"```clarify\n\n```", {}},
      {"```clarify\na\nb\nc\nd\ne\nf\ng\n```", {"a", "b", "c", "d", "e"}},
  };
  for (const auto& c : cases) EXPECT_EQ(ExtractClarification(c.reply), c.want) << c.reply;
}

}  // namespace
}  // namespace querypilot
