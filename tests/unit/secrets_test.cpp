#include "agent/base/secrets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace querypilot {
namespace {

TEST(Secrets, ScrubTakesOutEveryFormOfEverySecretByItsLength) {
  struct Case {
    std::vector<std::string> secrets;
    std::string text;
    std::string scrubbed;
  };
  const Case cases[] = {
      // Nothing known, or nothing found: the text as it is.
      {{}, "no secret here", "no secret here"},
      {{"sk-abc12345"}, "no secret here", "no secret here"},
      // Eight bytes or more: everywhere, inside a word too.
      {{"sk-abc12345"}, "key sk-abc12345 and xsk-abc12345x", "key [redacted] and x[redacted]x"},
      // Four to seven bytes: where they stand alone (the request line).
      {{"SECRET"},
       "POST /v1/chat/completions?key=SECRET HTTP/1.1",
       "POST /v1/chat/completions?key=[redacted] HTTP/1.1"},
      {{"user", "pass", "user:pass"},
       "http://user:pass@host/v1 for user, password pass.",
       "http://[redacted]@host/v1 for [redacted], password [redacted]."},
      // ... and never inside a longer word or name.
      {{"pass", "user"},
       "SELECT password FROM users WHERE user_id = 1 AND passé",
       "SELECT password FROM users WHERE user_id = 1 AND passé"},
      {{"SECRET"}, "SECRETS and _SECRET and SECRET2", "SECRETS and _SECRET and SECRET2"},
      // A short secret whose edge is not a word byte needs no boundary there.
      {{"!key"}, "a!key b", "a[redacted] b"},
      // Shorter than four bytes: never (v=1 would blank every 1).
      {{"abc", "1", ""}, "SELECT 'abc', 1 FROM t", "SELECT 'abc', 1 FROM t"},
      {{"abcd"}, "abcd", "[redacted]"},
      // Percent-encoded and percent-decoded forms, both hex cases.
      {{"Sig!Val*9"}, "echo Sig%21Val%2A9 or Sig%21Val%2a9", "echo [redacted] or [redacted]"},
      {{"pa%40ss-word"}, "pa@ss-word and pa%40ss-word", "[redacted] and [redacted]"},
      {{"two+words"}, "two words, two+words, two%2Bwords", "[redacted], [redacted], [redacted]"},
      // The longest first, so no part of a longer secret is left.
      {{"password123", "user:password123"}, "user:password123", "[redacted]"},
      {{"abcd", "abcdefgh12"}, "abcdefgh12 abcd", "[redacted] [redacted]"},
      // A [redacted] already there stays, whatever the secrets look like.
      {{"[redacted]", "redacted"}, "[redacted] x redacted", "[redacted] x [redacted]"},
      // Non-ASCII text next to a short secret is part of the word.
      {{"clé1"}, "la clé1 et aclé1", "la [redacted] et aclé1"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Secrets(c.secrets).Scrub(c.text), c.scrubbed) << c.text;
  }
}

TEST(Secrets, ScrubLongLeavesShortSecretsForWhatIsKept) {
  const Secrets secrets({"pass", "sk-abc12345"});
  EXPECT_EQ(secrets.ScrubLong("SELECT pass FROM t -- sk-abc12345"),
            "SELECT pass FROM t -- [redacted]");
  EXPECT_EQ(secrets.Scrub("SELECT pass FROM t -- sk-abc12345"),
            "SELECT [redacted] FROM t -- [redacted]");
}

TEST(Secrets, AddMergesAndKnowsNothingEmpty) {
  Secrets a;
  EXPECT_TRUE(a.empty());
  a.Add("");
  a.Add("abc");  // too short to be looked for
  EXPECT_TRUE(a.empty());
  Secrets b({"SECRET"});
  a.Add(b);
  a.Add(b);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.Scrub("key=SECRET"), "key=[redacted]");
}

}  // namespace
}  // namespace querypilot
