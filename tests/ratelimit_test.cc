// Rate limits under real concurrency, across gateway processes, and the
// gateway's own per-visitor checkout limit (locks/CREDITS.md).
#include <doctest/doctest.h>

#include <atomic>
#include <regex>

#include "tests/support/harness.h"
#include "tests/support/outcome_tally.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

Reply Take(const std::string& base, const std::string& key, const json& body = json::object()) {
  return PostJson(base, "/v1/ratelimits/" + key + "/take", body, ApiKeyHeader());
}

GatewayOptions Limits(const std::string& spec, std::map<std::string, std::string> more = {}) {
  GatewayOptions o;
  o.env = std::move(more);
  o.env["PAINTLOCK_RATE_LIMITS"] = spec;
  return o;
}

// Lets a bucket refill as if `seconds` had passed: only the clock changes.
void AgeBucket(TestDatabase& db, const std::string& key, int seconds) {
  db.Exec("UPDATE rate_limit_buckets SET refreshed_at = refreshed_at - interval '" +
          std::to_string(seconds) + " seconds' WHERE key = '" + key + "'");
}

}  // namespace

TEST_CASE("rate limits: 50 concurrent callers on two gateways get exactly the bucket's budget") {
  TestDatabase db({{"p1", 1000}});
  // A refill of one token per 1000 s: within the test the window is fixed.
  Gateway one(db, kNoStripe, Limits("api:10:0.001"));
  Gateway two(db, kNoStripe, Limits("api:10:0.001"));
  for (int round = 0; round < 3; ++round) {
    const std::string key = "api:caller-" + std::to_string(round);
    OutcomeTally tally;
    RunConcurrently(50, [&](int i) {
      const Reply r = Take(i % 2 ? one.base() : two.base(), key);
      tally.Add(TakeOutcome(r, key), r);
    });
    CHECK(tally.granted() == 10);
    CHECK(tally.refused() == 40);
    CHECK_MESSAGE(tally.other() == 0, tally.others());
  }
  // A cost takes that many tokens: 10 / 3 → three takes fit, across both gateways.
  std::atomic<int> allowed{0};
  RunConcurrently(50, [&](int i) {
    if (Take(i % 2 ? one.base() : two.base(), "api:costly", {{"cost", 3}}).status == 200) ++allowed;
  });
  CHECK(allowed == 3);
  CheckInvariants(db);
}

TEST_CASE("rate limits: a bucket refills at its rate, on the database clock, up to its capacity") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("slow:3:0.1"));
  for (int i = 0; i < 3; ++i) {
    Reply r = Take(gw.base(), "slow:k");
    REQUIRE(r.status == 200);
    CHECK(r.json["remaining"] == 2 - i);
  }
  Reply limited = Take(gw.base(), "slow:k");
  REQUIRE(limited.status == 429);
  // One token at 0.1 a second: 10 s, less what refilled while the test ran.
  CHECK((limited.Header("Retry-After") == "10" || limited.Header("Retry-After") == "9"));
  CHECK(limited.json["remaining"] == 0);
  CHECK(limited.json["key"] == "slow:k");

  AgeBucket(db, "slow:k", 10);  // one token back
  CHECK(Take(gw.base(), "slow:k").status == 200);
  CHECK(Take(gw.base(), "slow:k").status == 429);

  AgeBucket(db, "slow:k", 3600);  // far more than capacity: full, not more
  for (int i = 0; i < 3; ++i) CHECK(Take(gw.base(), "slow:k").status == 200);
  CHECK(Take(gw.base(), "slow:k").status == 429);

  // A refused take costs nothing: a smaller one still fits when it can.
  AgeBucket(db, "slow:k", 20);  // two tokens
  CHECK(Take(gw.base(), "slow:k", {{"cost", 3}}).status == 429);
  CHECK(Take(gw.base(), "slow:k", {{"cost", 2}}).status == 200);
}

TEST_CASE("rate limits: the bucket field and the bucket: prefix name the same row") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:2:0.001,other:5:1"));
  CHECK(Take(gw.base(), "user-7", {{"bucket", "api"}}).status == 200);
  CHECK(Take(gw.base(), "api:user-7").status == 200);
  Reply third = Take(gw.base(), "user-7", {{"bucket", "api"}});
  CHECK(third.status == 429);
  CHECK(third.json["key"] == "api:user-7");
  // Another bucket is another row.
  CHECK(Take(gw.base(), "user-7", {{"bucket", "other"}}).status == 200);
  CHECK(db.Scalar("SELECT string_agg(key, ',' ORDER BY key) FROM rate_limit_buckets") ==
        "api:user-7,other:user-7");
}

TEST_CASE("rate limits: bad rate-limit input gets a clear 4xx JSON error and takes nothing") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:5:1"));
  struct Case {
    Reply reply;
    int status;
    std::string code;
  };
  std::vector<Case> cases = {
      {Take(gw.base(), "no-bucket"), 400, "unknown_bucket"},
      {Take(gw.base(), "nope:k"), 400, "unknown_bucket"},
      {Take(gw.base(), "k", {{"bucket", "nope"}}), 400, "unknown_bucket"},
      {Take(gw.base(), "k", {{"bucket", 5}}), 400, "invalid_request"},
      {Take(gw.base(), "api:k", {{"cost", 0}}), 400, "invalid_request"},
      {Take(gw.base(), "api:k", {{"cost", -2}}), 400, "invalid_request"},
      {Take(gw.base(), "api:k", {{"cost", 1.5}}), 400, "invalid_request"},
      {Take(gw.base(), "api:k", {{"cost", "1"}}), 400, "invalid_request"},
      {Take(gw.base(), "api:k", {{"cost", 6}}), 422, "cost_over_capacity"},
      {Take(gw.base(), "api:" + std::string(300, 'k')), 400, "invalid_request"},
      {Take(gw.base(), "api:a%20b"), 400, "invalid_request"},
      {Request(gw.base(), "POST", "/v1/ratelimits/api:k/take", "{nope", "application/json",
               ApiKeyHeader()),
       400, "invalid_request"},
      {Request(gw.base(), "POST", "/v1/ratelimits/api:k/take", "{}", "application/json"), 401,
       "unauthorized"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": " << cases[i].reply.body);
    CHECK(cases[i].reply.status == cases[i].status);
    CHECK(cases[i].reply.json.value("code", "") == cases[i].code);
    CHECK(!cases[i].reply.json.value("message", "").empty());
  }
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "0");
  // An empty body is a take of 1.
  Reply empty = Request(gw.base(), "POST", "/v1/ratelimits/api:k/take", "", "application/json",
                        ApiKeyHeader());
  CHECK(empty.status == 200);
  CHECK(empty.json["remaining"] == 4);
}

TEST_CASE("rate limits: checkouts are limited per visitor before anything is reserved") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), Limits("checkout:2:0.001"));
  CHECK(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p1"}}}).status == 201);
  CHECK(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p2"}}}).status == 201);

  Reply limited = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p3"}}});
  CHECK(limited.status == 429);
  CHECK(limited.json["code"] == "rate_limited");
  CHECK(limited.json["message"].get<std::string>().find("Nothing was reserved") !=
        std::string::npos);
  CHECK(std::stoi(limited.Header("Retry-After")) >= 1);
  CHECK(limited.json["retry_after_seconds"] == std::stoi(limited.Header("Retry-After")));
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "2");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p3").json["state"] == "available");
  CHECK(stripe.Sessions().size() == 2);

  // A form post is told on a page, with the same status and header.
  Reply form = Request(gw.base(), "POST", "/v1/checkout", "painting=p3",
                       "application/x-www-form-urlencoded");
  CHECK(form.status == 429);
  CHECK(form.body.find("data-code=\"rate_limited\"") != std::string::npos);
  CHECK(!form.Header("Retry-After").empty());

  // The bucket row is keyed by the visitor's keyed hash, never the address.
  const std::string key = db.Scalar("SELECT key FROM rate_limit_buckets");
  CHECK(std::regex_match(key, std::regex("^checkout:[0-9a-f]{32}$")));
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "1");
  CheckInvariants(db);
}

TEST_CASE("rate limits: visitors behind a trusted proxy each have their own checkout budget") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(),
             Limits("checkout:1:0.001", {{"PAINTLOCK_TRUSTED_PROXIES", "127.0.0.1"}}));
  auto checkout = [&](const std::string& client, const std::string& painting) {
    return Request(gw.base(), "POST", "/v1/checkout", json{{"paintings", {painting}}}.dump(),
                   "application/json", {{"X-Forwarded-For", client}});
  };
  CHECK(checkout("203.0.113.7", "p1").status == 201);
  CHECK(checkout("203.0.113.7", "p2").status == 429);
  CHECK(checkout("198.51.100.9", "p2").status == 201);
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "2");
}

TEST_CASE("rate limits: the checkout limit can be switched off") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(),
             Limits("checkout:1:0.001", {{"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"}}));
  for (const char* p : {"p1", "p2", "p3"}) {
    CHECK(PostJson(gw.base(), "/v1/checkout", {{"paintings", {p}}}).status == 201);
  }
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "0");
}

TEST_CASE("rate limits: a bad rate-limit setting stops the gateway at start-up with a clear line") {
  TestDatabase db({{"p1", 1000}});
  Process gw("gateway", {BuildDir() + "/paintlock"},
             {{"DATABASE_URL", db.url()},
              {"STRIPE_SECRET_KEY", kStripeKey},
              {"PAINTLOCK_LISTEN", "127.0.0.1:0"},
              {"PAINTLOCK_RATE_LIMITS", "api:10"},
              {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "sometimes"}});
  CHECK(gw.Wait() == 2);
  CHECK(gw.Log().find("PAINTLOCK_RATE_LIMITS: \"api:10\" is not NAME:CAPACITY:REFILL_PER_SECOND") !=
        std::string::npos);
  CHECK(gw.Log().find("PAINTLOCK_CHECKOUT_RATE_LIMIT: must be on or off") != std::string::npos);
}
