// bench/async_take_probe.cc measures a design in the gateway's place; its
// figures mean something only if it decides what the gateway decides. It runs
// the gateway's statement, so the database is the judge here.
#include <doctest/doctest.h>

#include <atomic>

#include "tests/support/harness.h"

using namespace paintlock::testing;

TEST_CASE("bench: the async-take probe grants exactly a bucket's budget and answers as the gateway") {
  TestDatabase db({{"p1", 1000}});
  const int port = FreeLoopbackPort();
  Process probe("async-take-probe", {BuildDir() + "/async-take-probe"},
                {{"DATABASE_URL", db.url()},
                 {"PAINTLOCK_LISTEN", "127.0.0.1:" + std::to_string(port)},
                 {"PAINTLOCK_API_KEY", kApiKey},
                 {"PAINTLOCK_DB_POOL", "4"},
                 {"PROBE_THREADS", "2"},
                 {"PAINTLOCK_RATE_LIMITS", "api:3:0.001"},
                 {"PROBE_SQL", SourceDir() + "/sql/queries/ratelimit_take.sql"}});
  REQUIRE(probe.WaitForPort() == port);
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  CHECK(Request(base, "GET", "/readyz").status == 200);

  std::atomic<int> allowed{0}, limited{0}, other{0};
  RunConcurrently(12, [&](int) {
    const Reply r =
        PostJson(base, "/v1/ratelimits/api:caller/take", nlohmann::json::object(), ApiKeyHeader());
    if (r.status == 200 && r.json["allowed"] == true && r.json["key"] == "api:caller") {
      ++allowed;
    } else if (r.status == 429 && r.json["code"] == "rate_limited" &&
               r.Header("Retry-After") == std::to_string(r.json["retry_after_seconds"].get<int>())) {
      ++limited;
    } else {
      ++other;
    }
  });
  CHECK(allowed == 3);
  CHECK(limited == 9);
  CHECK(other == 0);
  CHECK(db.Scalar("SELECT floor(tokens) FROM rate_limit_buckets WHERE key = 'api:caller'") == "0");

  const auto take = [&](const std::string& key, const httplib::Headers& headers) {
    return PostJson(base, "/v1/ratelimits/" + key + "/take", nlohmann::json::object(), headers);
  };
  CHECK(take("api:caller", {}).json["code"] == "unauthorized");
  CHECK(take("other:caller", ApiKeyHeader()).json["code"] == "unknown_bucket");
  const Reply bad = take("api:%22%7D", ApiKeyHeader());
  CHECK(bad.status == 400);
  CHECK(bad.json["code"] == "invalid_request");
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "1");
}
