// bench/async_probe.cc measures a design in the gateway's place; its
// figures mean something only if it decides what the gateway decides. It runs
// the gateway's statements, so the database is the judge here.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/harness.h"
#include "tests/support/outcome_tally.h"

using namespace paintlock::testing;

TEST_CASE("bench: the async probe grants exactly a bucket's budget and answers as the gateway") {
  TestDatabase db({{"p1", 1000}});
  const int port = FreeLoopbackPort();
  Process probe("async-probe", {BuildDir() + "/async-probe"},
                {{"DATABASE_URL", db.url()},
                 {"PAINTLOCK_LISTEN", "127.0.0.1:" + std::to_string(port)},
                 {"PAINTLOCK_API_KEY", kApiKey},
                 {"PAINTLOCK_DB_POOL", "4"},
                 {"PROBE_THREADS", "2"},
                 {"PAINTLOCK_RATE_LIMITS", "api:3:0.001"},
                 {"PROBE_SQL_DIR", SourceDir() + "/sql/queries"}});
  REQUIRE(probe.WaitForPort() == port);
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  CHECK(Request(base, "GET", "/readyz").status == 200);

  OutcomeTally tally;
  RunConcurrently(12, [&](int) {
    const Reply r =
        PostJson(base, "/v1/ratelimits/api:caller/take", nlohmann::json::object(), ApiKeyHeader());
    tally.Add(TakeOutcome(r, "api:caller"), r);
  });
  CHECK(tally.granted() == 3);
  CHECK(tally.refused() == 9);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
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

  // Credits: three holds of one on a balance of two; each granted hold committed twice.
  db.Exec("INSERT INTO credit_accounts (id, balance) VALUES ('acct-1', 2)");
  std::mutex mu;
  std::vector<std::string> holds;
  std::atomic<int> refused{0}, odd{0};
  RunConcurrently(3, [&](int) {
    const Reply r = PostJson(base, "/v1/accounts/acct-1/holds",
                             {{"amount", 1}, {"ttl_seconds", 60}}, ApiKeyHeader());
    if (r.status == 201 && r.json["account_id"] == "acct-1" &&
        r.Header("Location") == "/v1/holds/" + r.json["hold_id"].get<std::string>()) {
      std::lock_guard<std::mutex> lock(mu);
      holds.push_back(r.json["hold_id"]);
    } else if (r.status == 409 && r.json["code"] == "insufficient_credits") {
      ++refused;
    } else {
      ++odd;
    }
  });
  REQUIRE(holds.size() == 2);
  CHECK(refused == 1);
  CHECK(odd == 0);
  for (const std::string& id : holds) {
    for (int twice = 0; twice < 2; ++twice) {
      const Reply r =
          PostJson(base, "/v1/holds/" + id + "/commit", nlohmann::json::object(), ApiKeyHeader());
      CHECK(r.status == 200);
      CHECK(r.json["state"] == "committed");
    }
  }
  CHECK(db.Scalar("SELECT balance FROM credit_accounts WHERE id = 'acct-1'") == "0");
  CHECK(db.Scalar("SELECT count(*) FROM credit_holds WHERE state = 'committed'") == "2");
  CHECK(PostJson(base, "/v1/holds/00000000-0000-4000-8000-000000000000/commit",
                 nlohmann::json::object(), ApiKeyHeader())
            .json["code"] == "hold_not_found");
  CHECK(PostJson(base, "/v1/accounts/nobody/holds", {{"amount", 1}, {"ttl_seconds", 60}},
                 ApiKeyHeader())
            .json["code"] == "account_not_found");
  CHECK(PostJson(base, "/v1/accounts/acct-1/holds", {{"amount", -1}}, ApiKeyHeader()).status ==
        400);
}
