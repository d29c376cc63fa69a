// Answers that must match the database, whatever else fails at that moment:
// a paid reservation is never released by an API call whose sale could not be
// recorded, and a buyer whose late payment was refunded is never shown the
// "sold to you" page. Every test ends by checking the invariants in SQL.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

Reply Checkout(Shop& shop, const json& paintings) {
  return PostJson(shop.gateway.base(), "/v1/checkout", {{"paintings", paintings}});
}

std::string SessionOf(Shop& shop, const std::string& reservation_id) {
  for (const auto& s : shop.stripe.Sessions()) {
    if (s["metadata"].value("reservation_id", "") == reservation_id) return s["id"];
  }
  FAIL("no session for reservation " << reservation_id);
  return "";
}

std::string State(TestDatabase& db, const std::string& reservation_id) {
  return db.Scalar("SELECT state FROM reservations WHERE id = '" + reservation_id + "'");
}

void Age(TestDatabase& db, const std::string& reservation_id) {
  db.Exec("UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE holder = '" +
          reservation_id + "'");
  db.Exec("UPDATE reservations SET held_until = now() - interval '1 second' WHERE id = '" +
          reservation_id + "'");
}

}  // namespace

TEST_CASE("DELETE of a paid reservation whose sale cannot be recorded right now releases nothing") {
  TestDatabase db;
  Shop shop(db);
  Reply r = Checkout(shop, {"p12"});
  REQUIRE(r.status == 201);
  const std::string id = r.json["reservation_id"];
  const std::string session = SessionOf(shop, id);
  // The buyer pays; the webhook is held back, so only Stripe knows.
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", true}});
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/pay", {{"payment_status", "paid"}});

  // Another transaction holds the reservation's row a little longer than the
  // gateway's lock_timeout (1 s): recording the sale fails, a release started
  // just after it would not.
  std::atomic<bool> locked{false};
  std::thread blocker([&] {
    pqxx::connection c(db.url());
    pqxx::work w(c);
    w.exec("SELECT 1 FROM reservations WHERE id = '" + id + "' FOR UPDATE");
    locked = true;
    w.exec("SELECT pg_sleep(1.6)");
    w.commit();
  });
  REQUIRE(Eventually([&] { return locked.load(); }));
  Reply deleted = Request(shop.gateway.base(), "DELETE", "/v1/reservations/" + id, "",
                          "application/json", ApiKeyHeader());
  blocker.join();
  CHECK(deleted.status != 200);
  CHECK(deleted.status >= 400);
  CHECK(State(db, id) == "held");  // the paid buyer's paintings stay theirs

  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", false}});
  REQUIRE(Eventually([&] { return State(db, id) == "sold"; }));
  // Now the same DELETE is refused with what the database holds.
  Reply again = Request(shop.gateway.base(), "DELETE", "/v1/reservations/" + id, "",
                        "application/json", ApiKeyHeader());
  CHECK(again.status == 409);
  CHECK(again.json["code"] == "reservation_paid");
  CheckInvariants(db);
}

TEST_CASE("the success page never shows a refunded late payer the sold page") {
  TestDatabase db;
  Shop shop(db);
  Reply first = Checkout(shop, {"p7"});
  REQUIRE(first.status == 201);
  const std::string first_id = first.json["reservation_id"];
  const std::string first_session = SessionOf(shop, first_id);
  Age(db, first_id);
  Reply second = Checkout(shop, {"p7"});  // takes over: expires the first session at Stripe
  REQUIRE(second.status == 201);
  // A payment already under way completes after the expire; its webhook is late.
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", true}});
  shop.stripe.Control("POST", "/_test/sessions/" + first_session + "/pay",
                      {{"payment_status", "paid"}, {"allow_expired", true}});
  Reply page =
      Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + first_session);
  CHECK(page.status == 409);
  CHECK(page.body.find("refunded") != std::string::npos);
  CHECK(page.Header("Location").empty());
  CHECK(State(db, first_id) == "refunded");
  CHECK(State(db, second.json["reservation_id"]) == "held");
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", false}});
  CheckInvariants(db);
}

TEST_CASE("the success page logs an apply it could not make, and still sends the buyer on") {
  TestDatabase db;
  Shop shop(db);
  Reply r = Checkout(shop, {"p11"});
  REQUIRE(r.status == 201);
  const std::string id = r.json["reservation_id"];
  const std::string session = SessionOf(shop, id);
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", true}});
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/pay", {{"payment_status", "paid"}});
  std::atomic<bool> locked{false};
  std::thread blocker([&] {
    pqxx::connection c(db.url());
    pqxx::work w(c);
    w.exec("SELECT 1 FROM reservations WHERE id = '" + id + "' FOR UPDATE");
    locked = true;
    w.exec("SELECT pg_sleep(1.6)");
    w.commit();
  });
  REQUIRE(Eventually([&] { return locked.load(); }));
  Reply page = Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + session);
  blocker.join();
  CHECK(page.status == 303);
  REQUIRE(Eventually([&] {
    return shop.gateway.process().Log().find("success_page_apply_failed") != std::string::npos;
  }));
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", false}});
  REQUIRE(Eventually([&] { return State(db, id) == "sold"; }));
  CheckInvariants(db);
}
