// Idempotency-Key on the server API's POSTs (gateway/idempotency.h): real
// gateways, real PostgreSQL, real concurrent clients. Each test checks the
// answers and then the database: a replay must have created nothing.
#include "gateway/idempotency.h"

#include <doctest/doctest.h>

#include <functional>
#include <pqxx/pqxx>
#include <set>

#include "locks/statements.h"
#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

// Rate limits, quotas and a short lock_timeout, the same on every gateway.
GatewayOptions Options() {
  GatewayOptions o;
  o.env = {{"PAINTLOCK_RATE_LIMITS", "api:3:0.001"},
           {"PAINTLOCK_VISITOR_KEY", "idempotency-test-visitor-key-0123456789"},
           {"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "200"}};
  return o;
}

httplib::Headers Keyed(const std::string& key) {
  httplib::Headers h = ApiKeyHeader();
  h.emplace("Idempotency-Key", key);
  return h;
}

Reply Reserve(const std::string& base, const std::string& key, const json& paintings) {
  return PostJson(base, "/v1/reservations", {{"paintings", paintings}}, Keyed(key));
}

bool Replayed(const Reply& r) { return r.Header("Idempotent-Replayed") == "true"; }

// Sends one keyed POST twice: the first must answer `status`, the second the
// same status and body, replayed. Returns the first answer.
Reply SentTwice(const std::string& base, const std::string& path, const json& body,
                const std::string& key, int status) {
  Reply first = PostJson(base, path, body, Keyed(key));
  REQUIRE_MESSAGE(first.status == status, first.body);
  CHECK_FALSE(Replayed(first));
  Reply again = PostJson(base, path, body, Keyed(key));
  CHECK(again.status == status);
  CHECK(Replayed(again));
  CHECK(again.body == first.body);
  return first;
}

std::string Count(TestDatabase& db, const std::string& table) {
  return db.Scalar("SELECT count(*) FROM " + table);
}

}  // namespace

TEST_CASE("idempotency: a reservation retried with its key replays the first answer") {
  TestDatabase db({{"p1", 1000}, {"p2", 1000}});
  Gateway gw(db, kNoStripe, Options());

  Reply first = Reserve(gw.base(), "order-1001", {"p1"});
  REQUIRE_MESSAGE(first.status == 201, first.body);
  CHECK_FALSE(Replayed(first));
  Reply again = Reserve(gw.base(), "order-1001", {"p1"});
  CHECK(again.status == 201);
  CHECK(Replayed(again));
  CHECK(again.json["reservation_id"] == first.json["reservation_id"]);
  CHECK(again.Header("Location") == first.Header("Location"));
  CHECK(again.body == first.body);
  CHECK(Count(db, "reservations") == "1");

  // The same key for another request is refused, and nothing is done.
  Reply other_body = Reserve(gw.base(), "order-1001", {"p2"});
  CHECK(other_body.status == 422);
  CHECK(other_body.json["code"] == "idempotency_key_reused");
  CHECK(other_body.json["param"] == "Idempotency-Key");
  Reply other_route = PostJson(gw.base(), "/v1/accounts/acct-1/holds",
                               {{"amount", 1}, {"ttl_seconds", 60}}, Keyed("order-1001"));
  CHECK(other_route.status == 422);
  CHECK(other_route.json["code"] == "idempotency_key_reused");
  CHECK(Count(db, "reservations") == "1");
  CHECK(db.Scalar("SELECT holder IS NULL FROM painting_locks WHERE painting_id = 'p2'") == "t");

  // Without the header nothing changes: a second reservation of p1 is refused.
  Reply unkeyed = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}}, ApiKeyHeader());
  CHECK(unkeyed.status == 409);
  CHECK(unkeyed.json["code"] == "painting_reserved");
  CheckInvariants(db);
}

TEST_CASE("idempotency: a bad key is refused with 400 before anything acts") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Options());
  Reply long_key = Reserve(gw.base(), std::string(256, 'k'), {"p1"});
  CHECK(long_key.status == 400);
  CHECK(long_key.json["code"] == "invalid_request");
  CHECK(long_key.json["param"] == "Idempotency-Key");
  CHECK(Count(db, "reservations") == "0");
  CHECK(Count(db, "idempotency_keys") == "0");
  // Without the API key the key is never looked at.
  httplib::Headers no_api_key{{"Idempotency-Key", "order-1"}};
  CHECK(PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}}, no_api_key).status == 401);
  CHECK(Count(db, "idempotency_keys") == "0");
}

TEST_CASE("idempotency: credit hold and commit, lease, rate-limit take and quota consume") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Options());

  SUBCASE("a credit hold is opened once and its commit moves the balance once") {
    REQUIRE(PostJson(gw.base(), "/v1/accounts/acct-1/credits", {{"amount", 100}}, Keyed("top-1"))
                .status == 200);
    Reply hold = SentTwice(gw.base(), "/v1/accounts/acct-1/holds",
                           {{"amount", 30}, {"ttl_seconds", 300}}, "hold-1", 201);
    CHECK(Count(db, "credit_holds") == "1");
    const std::string id = hold.json["hold_id"].get<std::string>();
    SentTwice(gw.base(), "/v1/holds/" + id + "/commit", json::object(), "c-1", 200);
    CHECK(db.Scalar("SELECT balance FROM credit_accounts WHERE id = 'acct-1'") == "70");
  }

  SUBCASE("a lease acquire replayed keeps its fencing token") {
    const json body = {{"holder", "worker-1"}, {"ttl_seconds", 30}};
    Reply first = SentTwice(gw.base(), "/v1/leases/export", body, "lease-1", 200);
    CHECK(db.Scalar("SELECT token FROM leases WHERE name = 'export'") ==
          std::to_string(first.json["token"].get<long long>()));
    // Unkeyed, the same holder acquiring again is a new grant with a new token.
    Reply unkeyed = PostJson(gw.base(), "/v1/leases/export", body, ApiKeyHeader());
    CHECK(unkeyed.json["token"] == first.json["token"].get<long long>() + 1);
  }

  SUBCASE("a rate-limit take replayed does not take twice") {
    Reply first =
        SentTwice(gw.base(), "/v1/ratelimits/api:user-1/take", json::object(), "take-1", 200);
    CHECK(first.json["remaining"] == 2);
    Reply next =
        PostJson(gw.base(), "/v1/ratelimits/api:user-1/take", json::object(), ApiKeyHeader());
    CHECK(next.json["remaining"] == 1);  // two takes in all, not three
  }

  SUBCASE("a quota consume for a subject replayed counts once") {
    Reply first =
        SentTwice(gw.base(), "/v1/quotas/downloads/consume", {{"subject", "user-7"}}, "q-1", 200);
    CHECK(first.json["used"] == 1);
    CHECK(db.Scalar("SELECT used FROM quota_usage WHERE subject = 'subject:user-7'") == "1");
  }
  CheckInvariants(db);
}

TEST_CASE("idempotency: twins with one key on two gateways: one acts, the others replay or wait") {
  TestDatabase db({{"p0", 1000},
                   {"p1", 1000},
                   {"p2", 1000},
                   {"p3", 1000},
                   {"p4", 1000},
                   {"p5", 1000},
                   {"p6", 1000},
                   {"p7", 1000},
                   {"p8", 1000},
                   {"p9", 1000}});
  Gateway one(db, kNoStripe, Options());
  Gateway two(db, kNoStripe, Options());
  int in_use_seen = 0;
  for (int round = 0; round < 10; ++round) {
    const std::string painting = "p" + std::to_string(round);
    const std::string key = "twin-" + std::to_string(round);
    std::vector<Reply> replies(4);
    RunConcurrently(
        4, [&](int i) { replies[i] = Reserve(i % 2 ? one.base() : two.base(), key, {painting}); });
    int acted = 0, replayed = 0, in_use = 0;
    std::set<std::string> ids;
    for (const auto& r : replies) {
      if (r.status == 201) {
        ids.insert(r.json["reservation_id"].get<std::string>());
        (Replayed(r) ? replayed : acted) += 1;
      } else if (r.status == 409 && r.json["code"] == "idempotency_key_in_use") {
        CHECK(r.Header("Retry-After") == "1");
        ++in_use;
      } else {
        FAIL_CHECK("unexpected answer " << r.status << ": " << r.body);
      }
    }
    CHECK(acted == 1);
    CHECK(acted + replayed + in_use == 4);
    CHECK(ids.size() == 1);
    in_use_seen += in_use;
    CHECK(db.ReservationsOf(painting) == "1");
    // Whoever waited gets the one answer once it is recorded.
    Reply later = Reserve(two.base(), key, {painting});
    CHECK(later.status == 201);
    CHECK(Replayed(later));
    CHECK(later.json["reservation_id"] == *ids.begin());
  }
  CHECK(Count(db, "reservations") == "10");
  MESSAGE("twins told idempotency_key_in_use: " << in_use_seen);
  CheckInvariants(db);
}

TEST_CASE("idempotency: a 5xx is not kept: the retry with the same key acts") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Options());
  const std::string path = "/v1/ratelimits/api:busy/take";
  REQUIRE(PostJson(gw.base(), path, json::object(), ApiKeyHeader()).status == 200);

  {
    // Another transaction holds the bucket's row: the take times out (503 busy).
    pqxx::connection c(db.url());
    pqxx::work holding(c);
    holding.exec("SELECT 1 FROM rate_limit_buckets WHERE key = 'api:busy' FOR UPDATE");
    Reply busy = PostJson(gw.base(), path, json::object(), Keyed("take-busy"));
    CHECK(busy.status == 503);
    CHECK(busy.json["code"] == "busy");
    holding.abort();
  }
  CHECK(Count(db, "idempotency_keys") == "0");
  Reply retried = PostJson(gw.base(), path, json::object(), Keyed("take-busy"));
  CHECK(retried.status == 200);
  CHECK_FALSE(Replayed(retried));
  CHECK(retried.json["remaining"] == 1);
  CHECK(db.Scalar("SELECT state FROM idempotency_keys WHERE key = 'take-busy'") == "done");
}

TEST_CASE("idempotency: a 429 is not kept either, so a retry after the refill may take") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Options());
  const std::string path = "/v1/ratelimits/api:full/take";
  for (int i = 0; i < 3; ++i) {
    REQUIRE(PostJson(gw.base(), path, json::object(), ApiKeyHeader()).status == 200);
  }
  Reply limited = PostJson(gw.base(), path, json::object(), Keyed("take-late"));
  CHECK(limited.status == 429);
  CHECK(Count(db, "idempotency_keys") == "0");
  // The bucket refills as if 1000 s had passed: only the clock changes.
  db.Exec(
      "UPDATE rate_limit_buckets SET refreshed_at = refreshed_at - interval '1000 seconds' "
      "WHERE key = 'api:full'");
  Reply retried = PostJson(gw.base(), path, json::object(), Keyed("take-late"));
  CHECK(retried.status == 200);
  CHECK_FALSE(Replayed(retried));
}

TEST_CASE("idempotency: a claim left by a dead gateway is taken over after its lease") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe, Options());
  // The claim a gateway leaves when it dies between claiming and recording.
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/reservations";
  req.body = json{{"paintings", {"p1"}}}.dump();
  db.Exec(
      "INSERT INTO idempotency_keys (key, fingerprint, route, state, claim, locked_until) "
      "VALUES ('order-orphan', '" +
      paintlock::gateway::RequestFingerprint(req) +
      "', 'POST /v1/reservations', 'in_progress', 'gone', now() + interval '1 minute')");
  // While its lease runs, a retry is told to wait and nothing acts.
  Reply waiting = Reserve(gw.base(), "order-orphan", {"p1"});
  CHECK(waiting.status == 409);
  CHECK(waiting.json["code"] == "idempotency_key_in_use");
  CHECK(Count(db, "reservations") == "0");
  // Once it lapses (only the clock changes), the retry takes it over and acts, once.
  db.Exec(
      "UPDATE idempotency_keys SET locked_until = now() - interval '1 second' "
      "WHERE key = 'order-orphan'");
  Reply taken = Reserve(gw.base(), "order-orphan", {"p1"});
  CHECK(taken.status == 201);
  CHECK_FALSE(Replayed(taken));
  Reply replayed = Reserve(gw.base(), "order-orphan", {"p1"});
  CHECK(Replayed(replayed));
  CHECK(replayed.json["reservation_id"] == taken.json["reservation_id"]);
  CHECK(Count(db, "reservations") == "1");
  CheckInvariants(db);
}

TEST_CASE("idempotency: paintlockctl sweep deletes keys older than 24 hours, only those") {
  TestDatabase db({{"p1", 1000}, {"p2", 1000}, {"p3", 1000}});
  Gateway gw(db, kNoStripe, Options());
  REQUIRE(Reserve(gw.base(), "old", {"p1"}).status == 201);
  REQUIRE(Reserve(gw.base(), "almost", {"p2"}).status == 201);
  REQUIRE(Reserve(gw.base(), "fresh", {"p3"}).status == 201);
  db.Exec(
      "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
      "WHERE key = 'old'");
  db.Exec(
      "UPDATE idempotency_keys SET created_at = now() - interval '23 hours' "
      "WHERE key = 'almost'");

  CompletedProcess dry = Ctl(db, kNoStripe, {"sweep", "--dry-run", "--json"});
  CHECK(dry.Json()["idempotency_keys_deleted"] == 1);
  CHECK(Count(db, "idempotency_keys") == "3");
  // Even a sweep of everything older than a minute keeps keys for 24 hours.
  CompletedProcess swept = Ctl(db, kNoStripe, {"sweep", "--older-than", "1m", "--json"});
  CHECK(swept.exit_code == 0);
  CHECK(swept.Json()["idempotency_keys_deleted"] == 1);
  CHECK(db.Scalar("SELECT string_agg(key, ',' ORDER BY key) FROM idempotency_keys") ==
        "almost,fresh");
  CHECK(Count(db, "reservations") == "3");
}

TEST_CASE(
    "idempotency: claims, records and forgets read the key by index after the table grew "
    "unanalysed") {
  TestDatabase db;
  // Analysed empty, as a shop's first keys leave it; no autovacuum to re-plan midway.
  db.Exec("ALTER TABLE idempotency_keys SET (autovacuum_enabled = off)");
  db.Exec("VACUUM ANALYZE idempotency_keys");
  // One connection with the gateway's named statements, whose plans it keeps.
  pqxx::connection session(db.url());
  paintlock::locks::PrepareNamedQueries(session);
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  auto claim = [&](pqxx::transaction_base& t, const std::string& key,
                   const std::string& fingerprint) {
    return t.exec_prepared1("idempotency_claim", key, fingerprint, "checkout", "c-" + key, 60)[0]
        .as<std::string>();
  };
  auto record = [&](pqxx::transaction_base& t, const std::string& key) {
    t.exec_prepared("idempotency_record", key, "c-" + key, 201, "{}", "");
  };
  auto forget = [&](pqxx::transaction_base& t, const std::string& key) {
    t.exec_prepared("idempotency_forget", key, "c-" + key);
  };
  // `call` in a transaction of its own; returns the sequential scans of
  // idempotency_keys that transaction made.
  auto scans_of = [&](const std::function<void(pqxx::transaction_base&)>& call) {
    ReportStatisticsNow(session);
    pqxx::work t(session);
    call(t);
    const long scans =
        t.exec1("SELECT pg_stat_get_xact_numscans('idempotency_keys'::regclass)")[0].as<long>();
    t.commit();
    return scans;
  };
  // More than five calls each: the plan cache keeps its generic plans.
  for (int i = 1; i <= 8; ++i) {
    const std::string key = "warm-" + std::to_string(i);
    const std::string gone = "gone-" + std::to_string(i);
    scans_of([&](pqxx::transaction_base& t) {
      REQUIRE(claim(t, key, a) == "claimed");
      REQUIRE(claim(t, key, b) == "reused");  // an existing key: read and locked by the claim
      record(t, key);
      REQUIRE(claim(t, gone, a) == "claimed");
      forget(t, gone);
    });
  }
  db.Exec(
      "INSERT INTO idempotency_keys (key, fingerprint, route, state, claim, locked_until) "
      "SELECT 'bulk-' || i, repeat('a', 64), 'checkout', 'in_progress', 'c', now() "
      "FROM generate_series(1, 5000) i");
  CHECK(scans_of([&](auto& t) { REQUIRE(claim(t, "new", a) == "claimed"); }) == 0);
  CHECK(scans_of([&](auto& t) { REQUIRE(claim(t, "new", b) == "reused"); }) == 0);
  CHECK(scans_of([&](auto& t) { record(t, "new"); }) == 0);
  CHECK(scans_of([&](auto& t) { REQUIRE(claim(t, "dropped", a) == "claimed"); }) == 0);
  CHECK(scans_of([&](auto& t) { forget(t, "dropped"); }) == 0);
  CHECK(db.Scalar("SELECT state || ' ' || status FROM idempotency_keys WHERE key = 'new'") ==
        "done 201");
  CHECK(db.Scalar("SELECT count(*) FROM idempotency_keys WHERE key = 'dropped'") == "0");
}
