#include "agent/providers/http.h"

#include <gtest/gtest.h>

#include <deque>

namespace querypilot {
namespace {

TEST(RetryDelayMs, Policy) {
  RetryPolicy p{2, 500, 20000};
  struct Case {
    long status;
    const char* retry_after;
    int retry_index;
    std::optional<int> want;
  } cases[] = {
      {429, "", 0, 500},
      {429, "", 1, 1000},
      {429, "", 2, std::nullopt},  // out of retries
      {500, "", 0, 500},
      {503, "2", 0, 2000},
      {429, "0.25", 0, 250},
      {429, "120", 0, std::nullopt},  // longer than retry_max_wait_ms
      {400, "", 0, std::nullopt},
      {401, "", 0, std::nullopt},
      {404, "", 0, std::nullopt},
      {0, "", 0, 500},                                  // transient transport failure
      {429, "Wed, 21 Oct 2015 07:28:00 GMT", 1, 1000},  // a date: fall back to backoff
  };
  for (const auto& c : cases) {
    EXPECT_EQ(RetryDelayMs(c.status, c.retry_after, c.retry_index, p), c.want)
        << c.status << " " << c.retry_after << " " << c.retry_index;
  }
}

// A transport that replays canned results.
class FakeTransport : public HttpTransport {
 public:
  std::deque<Result<HttpResponse>> replies;
  int calls = 0;
  Result<HttpResponse> Post(const HttpRequest&, const std::function<bool()>&) override {
    ++calls;
    Result<HttpResponse> r = replies.front();
    if (replies.size() > 1) replies.pop_front();
    return r;
  }
};

HttpResponse Resp(long status, std::string retry_after = "") {
  HttpResponse r;
  r.status = status;
  r.body = "{}";
  r.retry_after = std::move(retry_after);
  return r;
}

TEST(PostWithRetries, RetriesThenSucceeds) {
  FakeTransport t;
  t.replies = {Resp(429, "1"), Resp(503), Resp(200)};
  std::vector<int> slept;
  int tries = 0;
  auto r = PostWithRetries(
      t, {}, {2, 100, 5000}, {}, [&](int ms) { slept.push_back(ms); }, &tries);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(tries, 3);
  EXPECT_EQ(slept, (std::vector<int>{1000, 200}));
}

TEST(PostWithRetries, GivesUpAfterRetries) {
  FakeTransport t;
  t.replies = {Resp(500)};
  int tries = 0;
  auto r = PostWithRetries(
      t, {}, {2, 1, 10}, {}, [](int) {}, &tries);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(tries, 3);
}

TEST(PostWithRetries, NoRetryOnClientErrorsOrHardFailures) {
  struct Case {
    Result<HttpResponse> reply;
    int want_tries;
  } cases[] = {
      {Resp(401), 1},
      {Resp(400), 1},
      {Status(ErrorKind::kProviderConnection, "refused"), 1},
      {Status(ErrorKind::kProviderTimeout, "slow"), 1},
      {Status(ErrorKind::kProviderUnavailable, "reset"), 3},  // transient: retried
  };
  for (auto& c : cases) {
    FakeTransport t;
    t.replies = {c.reply};
    int tries = 0;
    PostWithRetries(
        t, {}, {2, 1, 10}, {}, [](int) {}, &tries);
    EXPECT_EQ(tries, c.want_tries);
  }
}

TEST(PostWithRetries, CancellationStopsRetrying) {
  FakeTransport t;
  t.replies = {Resp(503)};
  int tries = 0;
  PostWithRetries(
      t, {}, {5, 1, 10}, [] { return true; }, [](int) {}, &tries);
  EXPECT_EQ(tries, 1);
}

}  // namespace
}  // namespace querypilot
