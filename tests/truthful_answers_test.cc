// Answers that must match the database, whatever else fails at that moment:
// a paid reservation is never released by an API call whose sale could not be
// recorded, and a buyer whose late payment was refunded is never shown the
// "sold to you" page. Every test ends by checking the invariants in SQL.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

// A shop whose gateway waits at most 1 s for a row lock (the production
// default; the test harness raises it for tests that count outcomes).
struct ShortLockWaitShop {
  TestDatabase db;
  Shop shop{db, {{"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "1000"}}};
};

// Holds reservation `id`'s row a little longer than ShortLockWaitShop's
// lock_timeout (1 s) from another transaction: recording a sale for it fails,
// a statement started just after that would not. Joined by the destructor.
class RowHeldPastLockTimeout {
 public:
  RowHeldPastLockTimeout(TestDatabase& db, const std::string& id)
      : thread_([this, url = db.url(), id] {
          pqxx::connection c(url);
          pqxx::work w(c);
          w.exec("SELECT 1 FROM reservations WHERE id = '" + id + "' FOR UPDATE");
          locked_ = true;
          w.exec("SELECT pg_sleep(1.6)");
          w.commit();
        }) {
    REQUIRE(Eventually([&] { return locked_.load(); }));
  }
  ~RowHeldPastLockTimeout() { thread_.join(); }

 private:
  std::atomic<bool> locked_{false};
  std::thread thread_;
};

// A checkout of `painting` that its buyer paid, its webhook held back so that
// only Stripe knows: its reservation id and Stripe session id.
std::pair<std::string, std::string> PaidUnheard(Shop& shop, const std::string& painting) {
  const auto bought = Bought(shop, {painting});
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", true}});
  Pay(shop, bought.second);
  return bought;
}

}  // namespace

TEST_CASE_FIXTURE(
    ShortLockWaitShop,
    "DELETE of a paid reservation whose sale cannot be recorded right now releases nothing") {
  const std::string id = PaidUnheard(shop, "p12").first;  // only Stripe knows it was paid

  Reply deleted;
  {
    RowHeldPastLockTimeout held(db, id);
    deleted = Request(shop.gateway.base(), "DELETE", "/v1/reservations/" + id, "",
                      "application/json", ApiKeyHeader());
  }
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

TEST_CASE_FIXTURE(ShopFixture, "the success page never shows a refunded late payer the sold page") {
  const auto bought = Bought(shop, {"p7"});
  const std::string first_id = bought.first;
  const std::string first_session = bought.second;
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

TEST_CASE_FIXTURE(
    ShortLockWaitShop,
    "the success page logs an apply it could not make, and still sends the buyer on") {
  const auto paid = PaidUnheard(shop, "p11");
  const std::string id = paid.first;
  const std::string session = paid.second;
  Reply page;
  {
    RowHeldPastLockTimeout held(db, id);
    page = Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + session);
  }
  CHECK(page.status == 303);
  REQUIRE(Eventually([&] {
    return shop.gateway.process().Log().find("success_page_apply_failed") != std::string::npos;
  }));
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", false}});
  REQUIRE(Eventually([&] { return State(db, id) == "sold"; }));
  CheckInvariants(db);
}
