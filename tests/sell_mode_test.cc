// Integration: PAINTLOCK_ON_DATABASE_DOWN (README.md, "When the database is
// down: refuse or sell"). Each test stops its own PostgreSQL cluster under a
// running gateway and the fake Stripe, then starts it again.
//
// sell: a checkout still gets its Stripe session, priced from the snapshot the
// gateway read while the database was up; the webhook (refused with 503 while
// the database is down, so Stripe retries) sells it once the database is back,
// or refunds it once, audited, when another buyer took a painting meanwhile.
// refuse: nothing changes from what it always did.
#include <doctest/doctest.h>

#include <pqxx/pqxx>
#include <thread>

#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"
#include "tests/support/private_cluster.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

const std::map<std::string, std::string> kSell = {{"PAINTLOCK_ON_DATABASE_DOWN", "sell"}};

std::string Audits(TestDatabase& db, const std::string& reservation, const std::string& action) {
  return db.Scalar("SELECT count(*) FROM audit_log WHERE reservation_id = '" + reservation +
                   "' AND action = '" + action + "'");
}

// The checkout.session.completed event of `session` at the fake Stripe.
std::string CompletedEvent(Shop& shop, const std::string& session) {
  for (const auto& e : shop.stripe.Control("GET", "/_test/events")) {
    if (e["type"] == "checkout.session.completed" &&
        e["data"]["object"]["id"].get<std::string>() == session) {
      return e["id"];
    }
  }
  FAIL("no completed event for " << session);
  return "";
}

int DeliverNow(Shop& shop, const std::string& event) {
  return shop.stripe.Control("POST", "/_test/events/" + event + "/deliver")["status"];
}

// A checkout while the database is down: 201 with no hold, and its session.
std::pair<std::string, std::string> BoughtOffline(Shop& shop, const json& paintings) {
  Reply r = Checkout(shop, paintings);
  REQUIRE_MESSAGE(r.status == 201, r.body);
  CHECK(r.json["offline"] == true);
  CHECK(r.json["held_until"].is_null());
  const std::string id = r.json["reservation_id"];
  for (const auto& s : shop.stripe.Sessions()) {
    if (s["metadata"].value("reservation_id", "") == id) {
      CHECK(s["metadata"]["paintlock_offline"] == "1");
      CHECK(s["client_reference_id"] == id);
      CHECK(r.json["checkout_url"] == s["url"]);
      return {id, s["id"]};
    }
  }
  FAIL("no Stripe session for the offline checkout " << id);
  return {};
}

// A shop in sell mode on a cluster of its own.
struct SellingShop {
  PrivateCluster cluster;
  TestDatabase db;
  Shop shop{db, kSell};
};

}  // namespace

TEST_CASE("sell mode: database down, checkout 201 from the snapshot, the webhook sells it later") {
  PrivateCluster cluster;
  TestDatabase db;
  // Before the gateway reads its snapshot: p2 sold, p3 held for 7 minutes.
  db.Exec("UPDATE paintings SET sold_at = now() WHERE id = 'p2'");
  REQUIRE_FALSE(Reserve(db, "p3").empty());
  Shop shop(db, kSell);
  CHECK(Request(shop.gateway.base(), "GET", "/healthz").json["offline_checkouts"] == 0);

  cluster.Stop();
  // Every answer a buyer gets with the database up, from the snapshot.
  Reply sold = Checkout(shop, {"p2"});
  CHECK(sold.status == 409);
  CHECK(sold.json["code"] == "painting_sold");
  Reply held = Checkout(shop, {"p3", "p4"});
  CHECK(held.status == 409);
  CHECK(held.json["code"] == "painting_reserved");
  CHECK(held.json["painting"] == "p3");
  CHECK_FALSE(held.Header("Retry-After").empty());
  Reply unknown = Checkout(shop, {"nope"});
  CHECK(unknown.status == 404);
  CHECK(shop.stripe.Sessions().empty());

  auto [id, session] = BoughtOffline(shop, {"p1", "p5"});
  const json s = Session(shop, session);
  CHECK(s["amount_total"] == 42000 + 31000);  // the catalogue's prices, from the snapshot
  CHECK(s["currency"] == "eur");
  // This gateway does not sell p1 again while its session may be paid.
  Reply again = Checkout(shop, {"p1"});
  CHECK(again.status == 409);
  CHECK(again.json["code"] == "painting_reserved");
  CHECK(shop.stripe.Sessions().size() == 1);
  Reply health = Request(shop.gateway.base(), "GET", "/healthz");
  CHECK(health.json["offline_checkouts"] == 1);
  Reply ready = Request(shop.gateway.base(), "GET", "/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.json["database"] == "unavailable");
  // The log's writer thread writes lines after the fact (base/log.cc): awaited.
  CHECK(Eventually([&] {
    return shop.gateway.process().Log().find("\"offline_checkout_created\"") != std::string::npos;
  }));

  // The buyer pays; the webhook cannot be applied yet and says so (Stripe retries).
  Pay(shop, session);
  const std::string event = CompletedEvent(shop, session);
  CHECK(DeliverNow(shop, event) == 503);

  cluster.Start();
  CHECK(DeliverNow(shop, event) == 200);
  CHECK(State(db, id) == "sold");
  CHECK(PaintingState(db, "p1") == "sold");
  CHECK(PaintingState(db, "p5") == "sold");
  CHECK(db.Scalar("SELECT amount_minor FROM reservations WHERE id = '" + id + "'") == "73000");
  CHECK(db.Scalar("SELECT payment_intent FROM reservations WHERE id = '" + id + "'") ==
        Session(shop, session)["payment_intent"].get<std::string>());
  CHECK(Audits(db, id, "offline_sale_recorded") == "1");
  CHECK(Audits(db, id, "late_payment_accepted") == "1");
  // Delivered again, and retrieved by the success page: nothing more happens.
  CHECK(DeliverNow(shop, event) == 200);
  Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + session);
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE stripe_session_id = '" + session +
                  "'") == "1");
  CHECK(Audits(db, id, "offline_sale_recorded") == "1");
  CHECK(shop.stripe.Control("GET", "/_test/refunds").empty());
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(
    SellingShop,
    "sell mode: a painting sold to another buyer meanwhile is refunded once, audited") {
  cluster.Stop();
  auto [offline, offline_session] = BoughtOffline(shop, {"p1"});
  // The buyer pays while the database is down; that webhook is lost.
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  Pay(shop, offline_session);
  cluster.Start();

  // The database never heard of the offline sale: another buyer gets p1 and pays.
  auto [other, other_session] = Bought(shop, {"p1"});
  Pay(shop, other_session);
  REQUIRE(Eventually([&, other = other] { return State(db, other) == "sold"; }));

  const std::string event = CompletedEvent(shop, offline_session);
  CHECK(DeliverNow(shop, event) == 200);
  CHECK(State(db, offline) == "refunded");
  CHECK(DeliverNow(shop, event) == 200);
  // The success page tells that buyer of the refund, never "sold to you".
  Reply page =
      Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + offline_session);
  CHECK(page.status == 409);
  CHECK(page.body.find("refunded") != std::string::npos);
  const json refunds = shop.stripe.Control("GET", "/_test/refunds");
  REQUIRE(refunds.size() == 1);
  CHECK(refunds[0]["payment_intent"] == Session(shop, offline_session)["payment_intent"]);
  CHECK(Audits(db, offline, "offline_sale_recorded") == "1");
  CHECK(Audits(db, offline, "late_payment_refund_decided") == "1");
  CHECK(Audits(db, offline, "refund") == "1");
  CHECK(State(db, other) == "sold");
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(
    SellingShop,
    "sell mode: paintlockctl reconcile in the sellers' settings applies an offline sale whose "
    "webhook was lost") {
  const std::string stripe = shop.stripe.base();
  cluster.Stop();
  auto [sold, sold_session] = BoughtOffline(shop, {"p8"});
  auto [unpaid, unpaid_session] = BoughtOffline(shop, {"p9"});
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  Pay(shop, sold_session);
  cluster.Start();
  // Without the option or the setting, reconcile cannot know of sessions the database never saw.
  CHECK(Ctl(db, stripe, {"reconcile", "--json"}).Json()["checked"] == 0);
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "0");

  // Ordinary sessions, made since, are listed too and left alone.
  for (int i = 0; i < 3; ++i) Bought(shop, {"p1" + std::to_string(i)});
  // With PAINTLOCK_ON_DATABASE_DOWN=sell (the settings file the reconcile timer shares with
  // the gateways) it looks back 24 hours by itself.
  CompletedProcess run =
      Ctl(db, stripe, {"reconcile", "--json"}, {{"PAINTLOCK_ON_DATABASE_DOWN", "sell"}});
  CHECK(run.exit_code == 0);
  const json r = run.Json();
  CHECK(r["checked"] == 1);  // the unpaid one is left to its webhooks
  CHECK(r["changed"] == 1);
  CHECK(r["results"][0]["reservation_id"] == sold);
  CHECK(r["results"][0]["outcome"] == "sold_late");
  CHECK(r["results"][0]["state_after"] == "sold");
  CHECK(State(db, sold) == "sold");
  CHECK(Audits(db, sold, "offline_sale_recorded") == "1");
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE id = '" + unpaid + "'") == "0");
  // Again: nothing more changes, and the webhook delivered late changes nothing either.
  CHECK(Ctl(db, stripe, {"reconcile", "--offline-since", "1h", "--json"}).Json()["changed"] == 0);
  CHECK(DeliverNow(shop, CompletedEvent(shop, sold_session)) == 200);
  CHECK(Audits(db, sold, "offline_sale_recorded") == "1");
  CHECK(Ctl(db, stripe, {"reconcile", "--offline-since", "0s"}, {}).exit_code == 2);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(SellingShop,
                  "sell mode: an offline session that expires unpaid leaves nothing behind") {
  cluster.Stop();
  auto [offline, offline_session] = BoughtOffline(shop, {"p6"});
  cluster.Start();
  shop.stripe.Control("POST", "/_test/sessions/" + offline_session + "/expire");
  WebhooksSettled(shop);
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "0");
  CHECK(PaintingState(db, "p6") == "available");
  CheckInvariants(db);
}

TEST_CASE("sell mode: a reservation the database may have committed is never sold offline too") {
  PrivateCluster cluster;
  TestDatabase db;
  auto env = kSell;
  env["PAINTLOCK_DB_LOCK_TIMEOUT_MS"] = "20000";
  // The database stays down: the look-up of the lost reserve can only give up, after this.
  env["PAINTLOCK_DB_OUTCOME_LOOKUP_MS"] = "1000";
  Shop shop(db, env);
  Reply reply;
  {
    // The reservation waits on p1's lock row; the database stops under it, so
    // its outcome is unknown and cannot be looked up. An immediate stop: a fast
    // one ends the blocker's session too, in no set order, and the reservation
    // could take the lock and commit before its own session is ended.
    pqxx::connection blocker(db.url());
    pqxx::work hold(blocker);
    hold.exec("SELECT 1 FROM painting_locks WHERE painting_id = 'p1' FOR UPDATE");
    std::thread buyer([&] { reply = Checkout(shop, {"p1"}); });
    const bool waiting = Eventually([&] {
      return db.Scalar(
                 "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                 "'paintlock' AND wait_event_type = 'Lock'") == "1";
    });
    if (waiting) cluster.Stop("immediate");
    buyer.join();
    REQUIRE(waiting);
  }
  CHECK(reply.status == 503);
  CHECK(reply.json["code"] == "outcome_unknown");
  CHECK(reply.json["message"].get<std::string>().find("may be held") != std::string::npos);
  CHECK(shop.stripe.Sessions().empty());
  CHECK(Request(shop.gateway.base(), "GET", "/healthz").json["offline_checkouts"] == 0);
  cluster.Start();
  CheckInvariants(db);
}

TEST_CASE("refuse mode (the default): database down, checkout 503, nothing at Stripe") {
  PrivateCluster cluster;
  TestDatabase db;
  Shop shop(db);
  CHECK_FALSE(Request(shop.gateway.base(), "GET", "/healthz").json.contains("offline_checkouts"));
  cluster.Stop();
  Reply r = Checkout(shop, {"p1"});
  CHECK(r.status == 503);
  CHECK(r.json["code"] == "unavailable");
  CHECK(r.json["message"].get<std::string>().find("Nothing was reserved") != std::string::npos);
  CHECK(Request(shop.gateway.base(), "GET", "/readyz").status == 503);
  CHECK(shop.stripe.Sessions().empty());
  cluster.Start();
  CHECK(Checkout(shop, {"p1"}).status == 201);
  CheckInvariants(db);
}
