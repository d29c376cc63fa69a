// paintlockctl reconcile: healing sessions whose webhooks were lost, owed
// refunds, progress, and an unreachable Stripe.
// (tests/support/admin_fixture.h says how these tests run paintlockctl.)
#include <doctest/doctest.h>

#include "tests/support/admin_fixture.h"

using namespace paintlock::testing;
using nlohmann::json;

TEST_CASE("admin: reconcile heals sessions whose webhooks were lost, and owed refunds") {
  TestDatabase db;
  Shop shop(db, {{"STRIPE_MAX_RETRIES", "0"}});  // a failing refund fails fast
  const std::string stripe = shop.stripe.base();
  // Paid, but the webhook was dropped; then the hold lapsed.
  auto [paid, paid_session] = Bought(shop, {"p1"});
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  Pay(shop, paid_session);
  WebhooksSettled(shop, 1);
  Age(db, paid);
  REQUIRE(State(db, paid) == "held");
  // A delayed payment that succeeded; that webhook was dropped too.
  auto [delayed, delayed_session] = Bought(shop, {"p2"});
  Pay(shop, delayed_session, "unpaid");
  REQUIRE(Eventually([&, delayed = delayed] { return State(db, delayed) == "awaiting_payment"; }));
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  shop.stripe.Control("POST", "/_test/sessions/" + delayed_session + "/async_payment",
                      {{"outcome", "succeeded"}});
  WebhooksSettled(shop, 2);
  REQUIRE(State(db, delayed) == "awaiting_payment");
  // Paid after another buyer took the painting, while Stripe refused refunds.
  auto [late, late_session] = Bought(shop, {"p3"});
  Age(db, late);
  auto [taker, taker_session] = Bought(shop, {"p3"});  // take-over expires the late one's session
  shop.stripe.Control("POST", "/_test/faults",
                      {{"fail_next", 100}, {"status", 500}, {"path_prefix", "/v1/refunds"}});
  shop.stripe.Control("POST", "/_test/sessions/" + late_session + "/pay",
                      {{"payment_status", "paid"}, {"allow_expired", true}});
  REQUIRE(Eventually([&, late = late] { return State(db, late) == "refund_pending"; }));
  WebhooksSettled(shop, 2);  // every delivery failed: the refund is still owed
  shop.stripe.Control("POST", "/_test/faults/clear");
  REQUIRE(State(db, late) == "refund_pending");
  // A buyer still on Stripe's page after the hold lapsed: nothing to change.
  auto [open, open_session] = Bought(shop, {"p4"});
  Age(db, open);

  CHECK(Conditions(Ctl(db, stripe, {"holds", "--json"}).Json()) ==
        std::vector<std::string>{"refund_pending", "lapsed_session_open", "lapsed_session_open",
                                 "awaiting_payment", "live"});

  // Reconcile's refund makes Stripe send charge.refunded, and that webhook
  // would record the refund too (as `webhook`) if it won the race with
  // reconcile's own record. Held here so reconcile is the healer this test
  // names; it is delivered after, and must then change nothing.
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", true}});
  CompletedProcess healed = Ctl(db, stripe, {"reconcile", "--json"});
  CHECK(healed.exit_code == 0);
  CHECK(healed.err.empty());  // short runs show no progress
  json r = healed.Json();
  CHECK(r["checked"] == 4);
  CHECK(r["changed"] == 3);
  CHECK(r["failed"] == 0);
  std::map<std::string, json> by_reservation;
  for (const auto& result : r["results"]) by_reservation[result["reservation_id"]] = result;
  CHECK(by_reservation[paid]["outcome"] == "sold_late");
  CHECK(by_reservation[paid]["state_after"] == "sold");
  CHECK(by_reservation[delayed]["outcome"] == "sold");
  CHECK(by_reservation[late]["outcome"] == "refunded");
  CHECK(by_reservation[late]["state_after"] == "refunded");
  CHECK(by_reservation[open]["outcome"] == "no_change");
  CHECK(by_reservation[open]["stripe_status"] == "open");
  CHECK(by_reservation[open]["changed"] == false);

  CHECK(PaintingState(db, "p1") == "sold");
  CHECK(PaintingState(db, "p2") == "sold");
  CHECK(State(db, taker) == "held");  // the taker keeps p3
  shop.stripe.Control("POST", "/_test/webhooks", {{"hold", false}});
  WebhooksSettled(shop, 2);
  CHECK(State(db, late) == "refunded");
  CHECK(shop.stripe.Control("GET", "/_test/refunds").size() == 1);
  CHECK(db.Scalar("SELECT actor FROM audit_log WHERE action = 'refund' AND reservation_id = '" +
                  late + "'") == "paintlockctl");
  CHECK(
      db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'late_payment_accepted' AND actor = "
                "'paintlockctl'") == "1");

  CompletedProcess again = Ctl(db, stripe, {"reconcile"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.rfind("RESERVATION ", 0) == 0);
  CHECK(again.out.find(open_session) != std::string::npos);
  CHECK(again.out.find("reconciled 1 session(s): 0 changed, 1 unchanged, 0 failed") !=
        std::string::npos);
  CheckInvariants(db);
}

TEST_CASE(
    "admin: a long reconcile shows progress, and with Stripe down it fails and changes nothing") {
  constexpr int kSessions = 20;
  std::map<std::string, long long> paintings;
  for (int i = 0; i < kSessions; ++i) paintings["q" + std::to_string(i)] = 500 + i;
  TestDatabase db(paintings);
  Shop shop(db);
  for (int i = 0; i < kSessions; ++i) Age(db, Bought(shop, {"q" + std::to_string(i)}).first);

  CompletedProcess down = Ctl(db, DeadStripe(), {"reconcile"}, {{"STRIPE_MAX_RETRIES", "0"}});
  CHECK(down.exit_code == 1);
  CHECK(down.err.find("reconcile: 20/20 sessions") != std::string::npos);
  CHECK(down.err.find("paintlockctl: 20 session(s) could not be reconciled") != std::string::npos);
  CHECK(down.out.find("not asked: Stripe was unreachable") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE state = 'held'") == "20");

  CompletedProcess ok = Ctl(db, shop.stripe.base(), {"reconcile", "--rate", "50"});
  CHECK(ok.exit_code == 0);
  CHECK(ok.err.find("reconcile: 10/20 sessions\n") != std::string::npos);
  CHECK(ok.err.find("reconcile: 20/20 sessions\n") != std::string::npos);
  CHECK(ok.err.find("paintlockctl") == std::string::npos);  // progress only, no error
  CHECK(ok.out.find("reconciled 20 session(s): 0 changed, 20 unchanged, 0 failed") !=
        std::string::npos);
  CheckInvariants(db);
}
