// Rate-limit takes answered by the edge's reactor on asynchronous connections
// (gateway/reactor_routes.h): the same answers as the workers', from
// connections of their own, and the truth after those connections die.
#include <doctest/doctest.h>

#include <atomic>

#include "tests/support/harness.h"
#include "tests/support/take_tally.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

constexpr const char* kNoStripe = "http://127.0.0.1:9";

Reply Take(const std::string& base, const std::string& key, httplib::Headers headers = {}) {
  headers.emplace("Authorization", ApiKeyHeader().begin()->second);
  return PostJson(base, "/v1/ratelimits/" + key + "/take", json::object(), headers);
}

GatewayOptions Limits(const std::string& spec, const std::string& async_connections) {
  GatewayOptions o;
  o.env["PAINTLOCK_RATE_LIMITS"] = spec;
  o.env["PAINTLOCK_DB_ASYNC_CONNECTIONS"] = async_connections;
  return o;
}

// Backends of `application` whose last statement was a take.
std::string TakesRunBy(TestDatabase& db, const std::string& application) {
  return db.Scalar(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
      "application_name = '" +
      application + "' AND query LIKE '%rate_limit_buckets%'");
}

}  // namespace

TEST_CASE("reactor takes: the reactor answers a take on its own connections, exactly as a worker") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:5:0.001", "3"));
  TakeTally tally;
  std::atomic<int> without_id{0};
  RunConcurrently(12, [&](int) {
    const Reply r = Take(gw.base(), "api:caller");
    tally.Count(r, "api:caller");
    if (r.Header("X-Request-Id").empty()) ++without_id;
  });
  CHECK(tally.allowed == 5);
  CHECK(tally.limited == 7);
  CHECK(tally.other == 0);
  CHECK(without_id == 0);
  // Three connections of its own ran them; none of the workers' pool did.
  CHECK(Eventually([&] {
    return db.Scalar(
               "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
               "application_name = "
               "'paintlock-async'") == "3";
  }));
  CHECK(TakesRunBy(db, "paintlock-async") != "0");
  CHECK(TakesRunBy(db, "paintlock") == "0");

  // What a worker checks first, the reactor checks too.
  CHECK(PostJson(gw.base(), "/v1/ratelimits/api:caller/take", json::object(), {}).json["code"] ==
        "unauthorized");
  const Reply unknown = Take(gw.base(), "nobucket:caller");
  CHECK(unknown.status == 400);
  CHECK(unknown.json["code"] == "unknown_bucket");
  CHECK(Take(gw.base(), "api%20x").json["code"] == "invalid_request");
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "1");

  // A keyed take is a worker's (the idempotency store is synchronous); the
  // same budget either way.
  const Reply keyed = Take(gw.base(), "api:other", {{"Idempotency-Key", "take-1"}});
  CHECK(keyed.status == 200);
  CHECK(keyed.json["remaining"] == 4);
  CHECK(Take(gw.base(), "api:other").json["remaining"] == 3);
}

TEST_CASE("reactor takes: after the database ends the reactor's connections, the next takes run") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:100:0.001", "2"));
  REQUIRE(Take(gw.base(), "api:caller").status == 200);
  REQUIRE(Eventually([&] {
    return db.Scalar(
               "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
               "application_name = "
               "'paintlock-async'") == "2";
  }));
  CHECK(db.Scalar("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM "
                  "pg_stat_activity WHERE datname = current_database() AND application_name = "
                  "'paintlock-async'") == "2");
  for (int i = 0; i < 8; ++i) {
    const Reply r = Take(gw.base(), "api:caller");
    CHECK(r.status == 200);  // sent on fresh connections, never failed on a dead one
  }
  CHECK(db.Scalar("SELECT 100 - floor(tokens) FROM rate_limit_buckets WHERE key = 'api:caller'") ==
        "9");
}

TEST_CASE("reactor takes: with no asynchronous connections, the workers take") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:5:0.001", "0"));
  CHECK(Take(gw.base(), "api:caller").status == 200);
  CHECK(db.Scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                  "application_name = "
                  "'paintlock-async'") == "0");
  CHECK(TakesRunBy(db, "paintlock") == "1");
}
