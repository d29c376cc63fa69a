// TTL leases with fencing tokens, raced through real gateway processes
// (locks/CREDITS.md).
#include <doctest/doctest.h>

#include <atomic>
#include <set>

#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

Reply Acquire(const std::string& base, const std::string& name, const json& holder, json ttl = 30) {
  return PostJson(base, "/v1/leases/" + name, {{"holder", holder}, {"ttl_seconds", ttl}},
                  ApiKeyHeader());
}

Reply Renew(const std::string& base, const std::string& name, const json& holder, json token,
            json ttl = 30) {
  return PostJson(base, "/v1/leases/" + name + "/renew",
                  {{"holder", holder}, {"token", token}, {"ttl_seconds", ttl}}, ApiKeyHeader());
}

Reply ReleaseLease(const std::string& base, const std::string& name, const std::string& query) {
  return Request(base, "DELETE", "/v1/leases/" + name + "?" + query, "", "", ApiKeyHeader());
}

// The lease's time passes: only the clock changes, as if its holder crashed.
void Lapse(TestDatabase& db, const std::string& name) {
  db.Exec("UPDATE leases SET expires_at = now() - interval '1 millisecond' WHERE name = '" + name +
          "'");
}

}  // namespace

TEST_CASE(
    "leases: holders racing for a lease on two gateways: exactly one wins, the others hear who") {
  TestDatabase db({{"p1", 1000}});
  Gateway one(db, kNoStripe);
  Gateway two(db, kNoStripe);
  std::int64_t last_token = 0;
  for (int round = 0; round < 15; ++round) {
    std::vector<Reply> replies(10);
    RunConcurrently(10, [&](int i) {
      replies[i] =
          Acquire(i % 2 ? one.base() : two.base(), "export", "worker-" + std::to_string(i));
    });
    int granted = 0, held = 0;
    std::string winner;
    std::int64_t token = 0;
    for (const auto& r : replies) {
      if (r.status == 200) {
        ++granted;
        winner = r.json["holder"];
        token = r.json["token"];
      } else if (r.status == 409 && r.json["code"] == "lease_held") {
        ++held;
      }
    }
    REQUIRE(granted == 1);
    CHECK(held == 9);
    for (const auto& r : replies) {
      if (r.status == 409) {
        CHECK(r.json["holder"] == winner);
        CHECK(!r.json["expires_at"].get<std::string>().empty());
        CHECK(r.json.count("token") == 0);  // the token is the holder's alone
        CHECK(std::stoi(r.Header("Retry-After")) >= 1);
      }
    }
    // Fencing tokens grow with every grant.
    CHECK(token > last_token);
    last_token = token;
    Lapse(db, "export");  // the winner "crashes": next round races again
  }
  CHECK(db.Scalar("SELECT token FROM leases WHERE name = 'export'") == std::to_string(last_token));
}

TEST_CASE(
    "leases: after expiry another holder wins with a larger token, the stale holder cannot renew") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  Reply a = Acquire(gw.base(), "primary", "node-a");
  REQUIRE(a.status == 200);
  const std::int64_t token_a = a.json["token"];
  CHECK(Acquire(gw.base(), "primary", "node-b").status == 409);
  Reply renewed = Renew(gw.base(), "primary", "node-a", token_a, 60);
  CHECK(renewed.status == 200);
  CHECK(renewed.json["token"] == token_a);  // a renewal is not a new grant
  CHECK(renewed.json["expires_at"] > a.json["expires_at"]);

  // node-a stops renewing (crashed, or paused); its lease lapses by itself.
  Lapse(db, "primary");
  Reply lapsed = Request(gw.base(), "GET", "/v1/leases/primary", "", "", ApiKeyHeader());
  CHECK(lapsed.json["live"] == false);
  CHECK(lapsed.json["holder"].is_null());

  Reply b = Acquire(gw.base(), "primary", "node-b");
  REQUIRE(b.status == 200);
  const std::int64_t token_b = b.json["token"];
  CHECK(token_b > token_a);

  // node-a wakes up: its token is stale; it can neither renew nor release.
  Reply stale = Renew(gw.base(), "primary", "node-a", token_a);
  CHECK(stale.status == 409);
  CHECK(stale.json["code"] == "lease_lost");
  CHECK(stale.json["holder"] == "node-b");
  // Not even by claiming node-b's name with its own old token.
  CHECK(Renew(gw.base(), "primary", "node-b", token_a).status == 409);
  Reply stale_release =
      ReleaseLease(gw.base(), "primary", "holder=node-a&token=" + std::to_string(token_a));
  CHECK(stale_release.status == 409);
  CHECK(stale_release.json["code"] == "lease_lost");
  CHECK(Renew(gw.base(), "primary", "node-b", token_b).status == 200);

  // A lapsed holder may not renew either: it must acquire again, for a new token.
  Lapse(db, "primary");
  Reply late = Renew(gw.base(), "primary", "node-b", token_b);
  CHECK(late.status == 409);
  CHECK(late.json["holder"].is_null());
  Reply again = Acquire(gw.base(), "primary", "node-b");
  CHECK(again.status == 200);
  CHECK(again.json["token"] > token_b);
}

TEST_CASE("leases: a holder releases its lease once, the next holder gets the next token") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  Reply a = Acquire(gw.base(), "job.7", "worker-1");
  REQUIRE(a.status == 200);
  const std::string query =
      "holder=worker-1&token=" + std::to_string(a.json["token"].get<std::int64_t>());
  Reply released = ReleaseLease(gw.base(), "job.7", query);
  CHECK(released.status == 200);
  CHECK(released.json["released"] == true);
  Reply again = ReleaseLease(gw.base(), "job.7", query);
  CHECK(again.status == 200);
  CHECK(again.Header("Idempotent-Replayed") == "true");

  Reply b = Acquire(gw.base(), "job.7", "worker-2");
  REQUIRE(b.status == 200);
  CHECK(b.json["token"] == a.json["token"].get<std::int64_t>() + 1);
  // The old grant's release now changes nothing.
  CHECK(ReleaseLease(gw.base(), "job.7", query).status == 409);
  Reply view = Request(gw.base(), "GET", "/v1/leases/job.7", "", "", ApiKeyHeader());
  CHECK(view.json["holder"] == "worker-2");
  CHECK(view.json["live"] == true);

  // A restarted holder need not wait out its own lease, but gets a new token.
  Reply restarted = Acquire(gw.base(), "job.7", "worker-2");
  CHECK(restarted.status == 200);
  CHECK(restarted.json["token"] > b.json["token"]);
  CHECK(Renew(gw.base(), "job.7", "worker-2", b.json["token"]).status == 409);
}

TEST_CASE("leases: bad lease input gets a clear 4xx JSON error and changes nothing") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(Acquire(gw.base(), "l1", "h1").status == 200);
  const std::string before = db.Scalar("SELECT holder || token || expires_at FROM leases");
  struct Case {
    Reply reply;
    int status;
    std::string code;
    std::string param;
  };
  std::vector<Case> cases = {
      {Acquire(gw.base(), "l2", "h", 0), 400, "invalid_request", "ttl_seconds"},
      {Acquire(gw.base(), "l2", "h", 86401), 400, "invalid_request", "ttl_seconds"},
      {Acquire(gw.base(), "l2", "h", 1e10), 400, "invalid_request", "ttl_seconds"},
      {Acquire(gw.base(), "l2", "h", "30"), 400, "invalid_request", "ttl_seconds"},
      {Acquire(gw.base(), "l2", "h", 2.5), 400, "invalid_request", "ttl_seconds"},
      {Acquire(gw.base(), "l2", "two words"), 400, "invalid_request", "holder"},
      {Acquire(gw.base(), "l2", 17), 400, "invalid_request", "holder"},
      {Acquire(gw.base(), "l2", std::string(201, 'h')), 400, "invalid_request", "holder"},
      {Acquire(gw.base(), ".bad", "h"), 400, "invalid_request", "name"},
      {Request(gw.base(), "POST", "/v1/leases/l2", "holder=h", "application/x-www-form-urlencoded",
               ApiKeyHeader()),
       415, "unsupported_media_type", ""},
      {Renew(gw.base(), "l1", "h1", -1), 400, "invalid_request", "token"},
      {Renew(gw.base(), "l1", "h1", "1"), 400, "invalid_request", "token"},
      {Renew(gw.base(), "l1", "h1", 1.0), 400, "invalid_request", "token"},
      {Renew(gw.base(), "l1", "h1", nullptr), 400, "invalid_request", "token"},
      {Renew(gw.base(), "l1", "h1", 1, 100000), 400, "invalid_request", "ttl_seconds"},
      {Renew(gw.base(), "nope", "h1", 1), 404, "lease_not_found", ""},
      {Renew(gw.base(), "l1", "h2", 1), 409, "lease_lost", ""},
      {ReleaseLease(gw.base(), "l1", "holder=h1"), 400, "invalid_request", "token"},
      {ReleaseLease(gw.base(), "l1", "holder=h1&token=x"), 400, "invalid_request", "token"},
      {ReleaseLease(gw.base(), "l1", "token=1"), 400, "invalid_request", "holder"},
      {ReleaseLease(gw.base(), "nope", "holder=h1&token=1"), 404, "lease_not_found", ""},
      {Request(gw.base(), "GET", "/v1/leases/nope", "", "", ApiKeyHeader()), 404, "lease_not_found",
       ""},
      {Request(gw.base(), "POST", "/v1/leases/l2", json{{"holder", "h"}, {"ttl_seconds", 5}}.dump(),
               "application/json"),
       401, "unauthorized", ""},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("case " << i << ": " << c.reply.body);
    CHECK(c.reply.status == c.status);
    CHECK(c.reply.json.value("code", "") == c.code);
    CHECK(!c.reply.json.value("message", "").empty());
    if (!c.param.empty()) CHECK(c.reply.json.value("param", "") == c.param);
  }
  CHECK(db.Scalar("SELECT count(*) FROM leases") == "1");
  CHECK(db.Scalar("SELECT holder || token || expires_at FROM leases") == before);
}

TEST_CASE("leases: paintlockctl leases lists holder, token and expiry") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  auto ctl = [&](const std::vector<std::string>& args) { return Ctl(db, kNoStripe, args); };
  CHECK(ctl({"leases"}).out == "no leases\n");
  REQUIRE(Acquire(gw.base(), "nightly", "cron@a", 600).status == 200);
  REQUIRE(Acquire(gw.base(), "crashed", "worker-9").status == 200);
  Lapse(db, "crashed");
  Reply next = Acquire(gw.base(), "released", "w1");
  REQUIRE(ReleaseLease(gw.base(), "released",
                       "holder=w1&token=" + std::to_string(next.json["token"].get<std::int64_t>()))
              .status == 200);

  CompletedProcess listed = ctl({"leases", "--json"});
  CHECK(listed.exit_code == 0);
  const json leases = listed.Json()["leases"];
  REQUIRE(leases.size() == 3);
  CHECK(leases[0]["name"] == "nightly");  // live ones first
  CHECK(leases[0]["state"] == "held");
  CHECK(leases[0]["holder"] == "cron@a");
  CHECK(leases[0]["token"] == 1);
  CHECK(leases[1]["name"] == "crashed");
  CHECK(leases[1]["state"] == "lapsed");
  CHECK(leases[2]["state"] == "released");
  CHECK(leases[2]["holder"].is_null());

  CompletedProcess table = ctl({"leases"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.rfind("LEASE", 0) == 0);
  CHECK(table.out.find("cron@a") != std::string::npos);
  CHECK(ctl({"leases", "extra"}).exit_code == 2);
  CHECK(ctl({"leases", "--help"}).out.rfind("Usage: paintlockctl leases", 0) == 0);
}
