#include "agent/memory/answer_cache.h"

#include <gtest/gtest.h>

namespace querypilot {
namespace {

TEST(AnswerCache, NormalisesQuestions) {
  struct Case {
    const char* in;
    const char* want;
  } cases[] = {
      {"How many orders are there?", "how many orders are there"},
      {"  how   many\torders\nare there ?!", "how many orders are there"},
      {"Top 5 customers.", "top 5 customers"},
      {"Café revenue?", "café revenue"},  // non-ASCII bytes kept as they are
      {"???", ""},
      {"", ""},
  };
  for (const auto& c : cases) EXPECT_EQ(NormaliseQuestion(c.in), c.want) << c.in;
}

TEST(AnswerCache, HitsOnlyOnTheSameSchemaAndDropsTheOldest) {
  AnswerCache cache(2);
  cache.Put("How many orders?", {"SELECT 1", 1, 7});
  ASSERT_TRUE(cache.Find("how many orders", 7).has_value());
  EXPECT_EQ(cache.Find("how many orders", 7)->run_id, 1);
  EXPECT_FALSE(cache.Find("how many orders", 8).has_value());  // the schema changed
  cache.Put("a", {"SELECT 2", 2, 7});
  cache.Put("b", {"SELECT 3", 3, 7});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.Find("how many orders", 7).has_value());
  cache.Put("a", {"SELECT 4", 4, 7});  // a replacement, not a new entry
  EXPECT_EQ(cache.Find("a", 7)->sql, "SELECT 4");
  EXPECT_TRUE(cache.Find("b", 7).has_value());
  cache.Forget("A?");
  EXPECT_FALSE(cache.Find("a", 7).has_value());
  EXPECT_EQ(cache.size(), 1u);
}

TEST(AnswerCache, ForgetRunDropsEveryEntryThatRunVerified) {
  AnswerCache cache;
  cache.Put("How many orders?", {"SELECT 1", 1, 5});
  cache.Put("Count the orders", {"SELECT 1", 1, 5});
  cache.Put("How many customers?", {"SELECT 2", 2, 5});
  cache.ForgetRun(1);
  EXPECT_FALSE(cache.Find("How many orders?", 5));
  EXPECT_FALSE(cache.Find("Count the orders", 5));
  ASSERT_TRUE(cache.Find("How many customers?", 5));
  EXPECT_EQ(cache.size(), 1u);
  // The order list forgot them too: filling the cache drops no live entry early.
  for (int i = 0; i < 255; ++i) cache.Put("q" + std::to_string(i), {"SELECT 3", 3, 5});
  EXPECT_TRUE(cache.Find("How many customers?", 5));
}

}  // namespace
}  // namespace querypilot
