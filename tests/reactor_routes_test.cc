// Rate-limit takes, credit holds and commits answered by the edge's reactor on
// asynchronous connections (gateway/reactor_routes.h): the same answers as the
// workers', from connections of their own, and the truth after those
// connections die.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/harness.h"
#include "tests/support/outcome_tally.h"
#include "tests/support/raw_client.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

Reply TakeWith(const std::string& base, const std::string& key, httplib::Headers headers = {}) {
  headers.emplace("Authorization", ApiKeyHeader().begin()->second);
  return PostJson(base, "/v1/ratelimits/" + key + "/take", json::object(), headers);
}

GatewayOptions Limits(const std::string& spec, const std::string& async_connections) {
  GatewayOptions o;
  o.env["PAINTLOCK_RATE_LIMITS"] = spec;
  o.env["PAINTLOCK_DB_ASYNC_CONNECTIONS"] = async_connections;
  return o;
}

// Backends of `application` whose last statement mentions `table`.
std::string RunBy(TestDatabase& db, const std::string& application,
                  const std::string& table = "rate_limit_buckets") {
  return db.Scalar(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
      "application_name = '" +
      application + "' AND query LIKE '%" + table + "%'");
}

}  // namespace

TEST_CASE(
    "reactor routes: the reactor answers a take on its own connections, exactly as a worker") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:5:0.001", "3"));
  OutcomeTally tally;
  std::atomic<int> without_id{0};
  RunConcurrently(12, [&](int) {
    const Reply r = TakeWith(gw.base(), "api:caller");
    tally.Add(TakeOutcome(r, "api:caller"), r);
    if (r.Header("X-Request-Id").empty()) ++without_id;
  });
  CHECK(tally.granted() == 5);
  CHECK(tally.refused() == 7);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  CHECK(without_id == 0);
  // Three connections of its own ran them; none of the workers' pool did.
  CHECK(Eventually([&] {
    return db.Scalar(
               "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
               "application_name = "
               "'paintlock-async'") == "3";
  }));
  CHECK(RunBy(db, "paintlock-async") != "0");
  CHECK(RunBy(db, "paintlock") == "0");

  // What a worker checks first, the reactor checks too.
  CHECK(PostJson(gw.base(), "/v1/ratelimits/api:caller/take", json::object(), {}).json["code"] ==
        "unauthorized");
  const Reply unknown = TakeWith(gw.base(), "nobucket:caller");
  CHECK(unknown.status == 400);
  CHECK(unknown.json["code"] == "unknown_bucket");
  CHECK(TakeWith(gw.base(), "api%20x").json["code"] == "invalid_request");
  CHECK(db.Scalar("SELECT count(*) FROM rate_limit_buckets") == "1");

  // A keyed take is a worker's (the idempotency store is synchronous); the
  // same budget either way.
  const Reply keyed = TakeWith(gw.base(), "api:other", {{"Idempotency-Key", "take-1"}});
  CHECK(keyed.status == 200);
  CHECK(keyed.json["remaining"] == 4);
  CHECK(TakeWith(gw.base(), "api:other").json["remaining"] == 3);
}

TEST_CASE("reactor routes: a request's access line names its id, method, path, status and time") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:1:0.001", "1"));
  const Reply granted = TakeWith(gw.base(), "api:caller", {{"X-Request-Id", "access-line-1"}});
  const Reply limited = TakeWith(gw.base(), "api:caller", {{"X-Request-Id", "access-line-2"}});
  REQUIRE(granted.status == 200);
  REQUIRE(limited.status == 429);
  gw.LogUpToNow();
  std::map<std::string, json> lines;
  for (const json& line : gw.process().Events("request")) {
    lines[line.value("request_id", "")] = line;
  }
  // (Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.)
  for (const auto& expected : {std::pair<std::string, int>{"access-line-1", 200},
                               std::pair<std::string, int>{"access-line-2", 429}}) {
    const std::string& id = expected.first;
    const int status = expected.second;
    CAPTURE(id);
    REQUIRE(lines.count(id) == 1);
    const json& line = lines[id];
    CHECK(line["level"] == "info");
    CHECK(line["method"] == "POST");
    CHECK(line["path"] == "/v1/ratelimits/api:caller/take");
    CHECK(line["status"] == status);
    CHECK(line["duration_ms"].is_number());
    CHECK(line["duration_ms"].get<double>() >= 0);
  }
}

TEST_CASE("reactor routes: a row the gateway cannot read is a 500, and the gateway stays up") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:100:0.001", "1"));
  REQUIRE(TakeWith(gw.base(), "api:caller").status == 200);
  // The statement now breaks its promise: the bucket's level is NULL, and so
  // is the row's "remaining", which the gateway reads as a whole number.
  db.Scalar(
      "ALTER TABLE rate_limit_buckets ALTER tokens DROP NOT NULL, ALTER last_allowed DROP NOT "
      "NULL; CREATE OR REPLACE FUNCTION paintlock_bucket_level(p_tokens numeric, p_refreshed_at "
      "timestamptz, p_capacity numeric, p_refill_per_second numeric) RETURNS numeric LANGUAGE "
      "sql AS 'SELECT NULL::numeric'; SELECT 1");
  const Reply broken = TakeWith(gw.base(), "api:caller");
  CHECK(broken.status == 500);
  CHECK(broken.json["code"] == "internal");
  CHECK(RunBy(db, "paintlock-async") == "1");  // the reactor ran it, and read its row
  CHECK(gw.LogUpToNow().find("\"database_reply_unreadable\"") != std::string::npos);
  // Still serving: the reactor thread did not end.
  CHECK(Request(gw.base(), "GET", "/healthz").status == 200);
  CHECK(TakeWith(gw.base(), "api:other").status == 200);  // a new key takes the insert path
}

TEST_CASE("reactor routes: after the database ends the reactor's connections, the next takes run") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:100:0.001", "2"));
  REQUIRE(TakeWith(gw.base(), "api:caller").status == 200);
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
    const Reply r = TakeWith(gw.base(), "api:caller");
    CHECK(r.status == 200);  // sent on fresh connections, never failed on a dead one
  }
  CHECK(db.Scalar("SELECT 100 - floor(tokens) FROM rate_limit_buckets WHERE key = 'api:caller'") ==
        "9");
}

TEST_CASE(
    "reactor routes: pipelined takes, and a take sent while another waits, are answered in order") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:100:0.001", "2"));
  const std::string take = "POST /v1/ratelimits/api:pipe/take HTTP/1.1\r\nHost: x\r\n" +
                           ("Authorization: " + ApiKeyHeader().begin()->second) +
                           "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  RawClient client(gw.port());
  REQUIRE(client.connected());
  int expected = 100;
  auto answered = [&] {
    REQUIRE(client.ReadResponse(std::chrono::milliseconds(10000)) == 200);
    CHECK(client.Json()["remaining"] == --expected);
  };

  // Two in one send: the second is framed from what the first's read left.
  REQUIRE(client.Send(take + take));
  answered();
  answered();

  // The bucket's row is locked: the next take waits at its route, and the one
  // after arrives meanwhile (read once the first is answered).
  pqxx::connection blocker(db.url());
  pqxx::work tx(blocker);
  tx.exec("SELECT 1 FROM rate_limit_buckets WHERE key = 'api:pipe' FOR UPDATE");
  REQUIRE(client.Send(take));
  REQUIRE(Eventually([&] { return db.LockWaiters() == "1"; }));
  REQUIRE(client.Send(take));
  tx.abort();
  answered();
  answered();

  // Then the connection waits with nothing unread, and the next take is read
  // when it comes.
  REQUIRE(client.Send(take));
  answered();
  CHECK(RunBy(db, "paintlock-async") != "0");
  CHECK(RunBy(db, "paintlock") == "0");
}

TEST_CASE(
    "reactor routes: a reserve is the reactor's, a keyed one a worker's, and reserves run after "
    "the database ends the reactor's connections") {
  TestDatabase db;
  Gateway gw(db, kNoStripe, Limits("api:100:0.001", "2"));
  auto reserve = [&](const std::string& painting, httplib::Headers headers = {}) {
    headers.emplace("Authorization", ApiKeyHeader().begin()->second);
    return PostJson(gw.base(), "/v1/reservations", {{"paintings", {painting}}}, headers);
  };
  REQUIRE(reserve("p1").status == 201);
  CHECK(RunBy(db, "paintlock-async", "paintlock_reserve") == "1");
  CHECK(RunBy(db, "paintlock", "paintlock_reserve") == "0");
  // With an Idempotency-Key, a worker's (the idempotency store is synchronous):
  // asked again, the first answer comes back, not a 409 from a second reserve.
  const Reply keyed = reserve("p2", {{"Idempotency-Key", "reserve-p2"}});
  REQUIRE(keyed.status == 201);
  const Reply again = reserve("p2", {{"Idempotency-Key", "reserve-p2"}});
  CHECK(again.status == 201);
  CHECK(again.json["reservation_id"] == keyed.json["reservation_id"]);
  // A refusal is the reactor's too, with the worker route's answer.
  const Reply busy = reserve("p1");
  CHECK(busy.status == 409);
  CHECK(busy.json["code"] == "painting_reserved");
  CHECK_FALSE(busy.json.value("free_at", "").empty());

  CHECK(db.Scalar("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM "
                  "pg_stat_activity WHERE datname = current_database() AND application_name = "
                  "'paintlock-async'") == "2");
  for (int i = 3; i <= 10; ++i) {
    const Reply r = reserve("p" + std::to_string(i));
    CAPTURE(r.body);
    CHECK(r.status == 201);  // sent on fresh connections, never failed on a dead one
  }
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE state = 'held'") == "10");
  CheckInvariants(db);
}

TEST_CASE(
    "reactor routes: a reserve whose connection is ended while it waits is looked up by its id, "
    "and the answer is the database's") {
  TestDatabase db;
  Gateway gw(db, kNoStripe, Limits("api:100:0.001", "2"));
  pqxx::connection blocker(db.url());
  pqxx::work hold(blocker);
  hold.exec("SELECT 1 FROM painting_locks WHERE painting_id = 'p1' FOR UPDATE");
  Reply reply;
  std::thread buyer([&] {
    reply = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}}, ApiKeyHeader());
  });
  // The reserve waits on p1's row, sent: whether it committed is unknown to
  // the gateway once its connection ends.
  std::string waiting;
  const bool seen = Eventually([&] {
    waiting = db.Scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
        "application_name = 'paintlock-async' AND wait_event_type = 'Lock' LIMIT 1");
    return !waiting.empty();
  });
  if (seen) db.Exec("SELECT pg_terminate_backend(" + waiting + ")");
  hold.abort();
  buyer.join();
  REQUIRE(seen);
  CAPTURE(reply.body);
  // Looked up: it never committed, so the buyer is told nothing was reserved
  // (not "may be held", which an answer without the look-up would say).
  CHECK(reply.status == 503);
  CHECK(reply.json["message"].get<std::string>().find("Nothing was reserved") != std::string::npos);
  CHECK(db.HeldOn("p1") == "0");
  CHECK(PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}}, ApiKeyHeader()).status ==
        201);
  CheckInvariants(db);
}

TEST_CASE("reactor routes: with no asynchronous connections, the workers take") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:5:0.001", "0"));
  CHECK(TakeWith(gw.base(), "api:caller").status == 200);
  CHECK(db.Scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                  "application_name = "
                  "'paintlock-async'") == "0");
  CHECK(RunBy(db, "paintlock") == "1");
}

TEST_CASE("reactor routes: credit holds and commits are exact, and a commit replays its result") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Limits("api:5:0.001", "3"));
  db.Exec("INSERT INTO credit_accounts (id, balance) VALUES ('acct-1', 10)");
  const httplib::Headers key = ApiKeyHeader();
  OutcomeTally tally;
  std::mutex mu;
  std::vector<std::string> holds;
  RunConcurrently(30, [&](int) {
    const Reply r = PostJson(gw.base(), "/v1/accounts/acct-1/holds",
                             {{"amount", 1}, {"ttl_seconds", 300}}, key);
    const Outcome outcome = HoldOutcome(r);
    tally.Add(outcome, r);
    if (outcome == Outcome::kGranted) {
      CHECK(r.json["account_id"] == "acct-1");
      std::lock_guard<std::mutex> lock(mu);
      holds.push_back(r.json["hold_id"]);
    }
  });
  CHECK(tally.granted() == 10);
  CHECK(tally.refused() == 20);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  CHECK(RunBy(db, "paintlock-async", "credit") != "0");
  CHECK(RunBy(db, "paintlock", "credit") == "0");

  RunConcurrently(static_cast<int>(holds.size()) * 2, [&](int i) {
    const Reply r =
        PostJson(gw.base(), "/v1/holds/" + holds[i / 2] + "/commit", nlohmann::json::object(), key);
    CHECK(r.status == 200);
    CHECK(r.json["state"] == "committed");
  });
  CHECK(db.Scalar("SELECT balance FROM credit_accounts WHERE id = 'acct-1'") == "0");
  const Reply again =
      PostJson(gw.base(), "/v1/holds/" + holds[0] + "/commit", nlohmann::json::object(), key);
  CHECK(again.status == 200);
  CHECK(again.Header("Idempotent-Replayed") == "true");
  CHECK(PostJson(gw.base(), "/v1/holds/not-a-hold/commit", nlohmann::json::object(), key)
            .json["code"] == "hold_not_found");
  const Reply bad = Request(gw.base(), "POST", "/v1/accounts/acct-1/holds", "amount=1",
                            "application/x-www-form-urlencoded", key);
  CHECK(bad.status == 415);
  CheckInvariants(db);
}

TEST_CASE(
    "reactor routes: quota consumes are exact on the reactor, and a licence key is a worker's") {
  TestDatabase db({{"p1", 1000}});
  GatewayOptions o = Limits("api:5:0.001", "3");
  o.env["PAINTLOCK_QUOTAS"] = "downloads:5:UTC";
  Gateway gw(db, kNoStripe, o);
  const auto consume = [&](const httplib::Headers& headers = {}, const std::string& body = "") {
    return Request(gw.base(), "POST", "/v1/quotas/downloads/consume", body, "application/json",
                   headers);
  };
  OutcomeTally tally;
  std::atomic<int> without_id{0};
  RunConcurrently(12, [&](int) {
    const Reply r = consume();  // a visitor: no API key needed
    const Outcome outcome = ConsumeOutcome(r);
    tally.Add(outcome, r);
    if (outcome == Outcome::kGranted) CHECK(r.json["limit"] == 5);
    if (r.Header("X-Request-Id").empty()) ++without_id;
  });
  CHECK(tally.granted() == 5);
  CHECK(tally.refused() == 7);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  CHECK(without_id == 0);
  CHECK(db.Scalar("SELECT sum(used) FROM quota_usage") == "5");
  CHECK(RunBy(db, "paintlock-async", "quota_usage") != "0");
  CHECK(RunBy(db, "paintlock", "quota_usage") == "0");

  // A subject named with the API key counts on its own; without it, refused.
  const Reply named = consume(ApiKeyHeader(), json{{"subject", "team-a"}}.dump());
  CHECK(named.status == 200);
  CHECK(named.json["used"] == 1);
  CHECK(consume({}, json{{"subject", "team-a"}}.dump()).status == 401);
  CHECK(consume({}, "{\"subjct\": \"x\"}").json["code"] == "invalid_request");
  CHECK(
      Request(gw.base(), "POST", "/v1/quotas/nope/consume", "", "application/json").json["code"] ==
      "quota_not_found");
  // A licence key needs the licence check, a worker's: refused, and nothing counted.
  const Reply licensed = consume({{"X-License-Key", "plk_" + std::string(64, 'f')}});
  CHECK(licensed.status == 401);
  CHECK(licensed.json["code"] == "license_invalid");
  CHECK(db.Scalar("SELECT sum(used) FROM quota_usage") == "6");
}
