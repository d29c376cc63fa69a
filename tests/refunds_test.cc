// Refunds and disputes made at Stripe, end to end: the fake Stripe refunds or
// disputes a paid session's payment and sends charge.refunded /
// charge.dispute.* signed to the real gateway, which maps the charge to the
// sale by its payment intent (sql/migrations/0013). Every test ends by
// checking the invariants of docs/ARCHITECTURE.md in SQL.
#include <doctest/doctest.h>

#include <ctime>

#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

// A sale made through the shop: checkout, then paid at the fake Stripe.
struct Sale {
  std::string reservation, session, payment_intent;
};

Sale Sold(ShopFixture& f, const json& paintings) {
  const auto bought_id = Bought(f.shop, paintings);
  const std::string id = bought_id.first, session = bought_id.second;
  Pay(f.shop, session);
  REQUIRE(Eventually([&] { return State(f.db, id) == "sold"; }));
  return {id, session, Session(f.shop, session)["payment_intent"]};
}

// The outcome the gateway recorded for the first Stripe event of `type`
// applied to `reservation` ("" while none is).
std::string Outcome(TestDatabase& db, const std::string& type) {
  return db.Scalar(
      "SELECT coalesce(string_agg(outcome, ',' ORDER BY received_at), '') "
      "FROM stripe_events WHERE type = '" +
      type + "'");
}

std::string AuditRows(TestDatabase& db, const std::string& where) {
  return db.Scalar("SELECT count(*) FROM audit_log WHERE " + where);
}

// The ids of the fake's events of `type`, in order.
std::vector<std::string> EventIds(Shop& shop, const std::string& type) {
  std::vector<std::string> ids;
  for (const auto& e : shop.stripe.Control("GET", "/_test/events")) {
    if (e["type"] == type) ids.push_back(e["id"]);
  }
  return ids;
}

}  // namespace

TEST_CASE_FIXTURE(ShopFixture,
                  "refunds: a full refund at Stripe puts the painting back on sale, audited") {
  const Sale sale = Sold(*this, {"p7"});
  CHECK(PaintingState(db, "p7") == "sold");

  json refund = shop.stripe.Control("POST", "/_test/sessions/" + sale.session + "/refund");
  REQUIRE(refund["status"] == "succeeded");
  REQUIRE(Eventually([&] { return Outcome(db, "charge.refunded") == "unsold"; }));
  CHECK(State(db, sale.reservation) == "refunded");
  CHECK(PaintingState(db, "p7") == "available");
  CHECK(db.Scalar("SELECT sold_at IS NULL AND (SELECT sold_until FROM painting_locks WHERE "
                  "painting_id = 'p7') IS NULL FROM paintings WHERE id = 'p7'") == "t");
  // Audited as `paintlockctl unsold` audits, and with what Stripe said.
  CHECK(AuditRows(db, "action = 'mark_unsold' AND painting_id = 'p7'") == "1");
  CHECK(AuditRows(db, "action = 'refund' AND reservation_id = '" + sale.reservation + "'") == "1");
  CHECK(db.Scalar("SELECT details->>'charge' LIKE 'ch_%' AND details->>'effect' = 'unsold' "
                  "FROM audit_log WHERE action = 'stripe_refund'") == "t");
  // The event names the sale in `paintlockctl show`.
  const json story = Ctl(db, stripe, {"show", sale.reservation, "--json"}).Json();
  bool shown = false;
  for (const auto& e : story["events"]) shown = shown || e["type"] == "charge.refunded";
  CHECK(shown);
  CHECK(std::to_string(story["reservations"][0]["refunded_minor"].get<long long>()) ==
        db.Scalar("SELECT price_minor FROM paintings WHERE id = 'p7'"));

  // Reservable again: a new buyer gets it.
  Reply again = Checkout(shop, {"p7"});
  CHECK(again.status == 201);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture, "refunds: a partial refund is audited and the painting stays sold") {
  const Sale sale = Sold(*this, {"p7"});
  const long long price =
      std::stoll(db.Scalar("SELECT price_minor FROM paintings WHERE id = 'p7'"));

  shop.stripe.Control("POST", "/_test/sessions/" + sale.session + "/refund", {{"amount", 1000}});
  REQUIRE(Eventually([&] { return Outcome(db, "charge.refunded") == "partial"; }));
  CHECK(State(db, sale.reservation) == "sold");
  CHECK(PaintingState(db, "p7") == "sold");
  CHECK(db.Scalar("SELECT details->>'refunded_minor' FROM audit_log WHERE action = "
                  "'stripe_refund'") == "1000");
  CHECK(AuditRows(db, "action = 'mark_unsold'") == "0");
  CHECK(Checkout(shop, {"p7"}).status == 409);

  // The rest refunded later: now it is a full refund.
  shop.stripe.Control("POST", "/_test/sessions/" + sale.session + "/refund",
                      {{"amount", price - 1000}});
  REQUIRE(Eventually([&] { return Outcome(db, "charge.refunded") == "partial,unsold"; }));
  CHECK(PaintingState(db, "p7") == "available");
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture, "refunds: a refund event delivered twice has one effect") {
  const Sale sale = Sold(*this, {"p7"});
  shop.stripe.Control("POST", "/_test/webhooks", {{"duplicate_next", 1}});
  shop.stripe.Control("POST", "/_test/sessions/" + sale.session + "/refund");
  WebhooksSettled(shop);
  REQUIRE(Outcome(db, "charge.refunded") == "unsold");
  // And once more, by hand.
  const auto ids = EventIds(shop, "charge.refunded");
  REQUIRE(ids.size() == 1);
  CHECK(shop.stripe.Control("POST", "/_test/events/" + ids[0] + "/deliver")["status"] == 200);
  CHECK(db.Scalar("SELECT count(*) FROM stripe_events WHERE type = 'charge.refunded'") == "1");
  CHECK(AuditRows(db, "action = 'stripe_refund'") == "1");
  CHECK(AuditRows(db, "action = 'mark_unsold'") == "1");
  CHECK(AuditRows(db, "action = 'refund'") == "1");
  // A new buyer's sale is not undone by the old refund arriving again.
  const Sale next = Sold(*this, {"p7"});
  CHECK(shop.stripe.Control("POST", "/_test/events/" + ids[0] + "/deliver")["status"] == 200);
  CHECK(State(db, next.reservation) == "sold");
  CHECK(PaintingState(db, "p7") == "sold");
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "refunds: a refund that arrives before the session's completion still ends "
                  "with the painting on sale") {
  const auto bought_id = Bought(shop, {"p7"});
  const std::string id = bought_id.first, session = bought_id.second;
  // The completion is lost for now; the refund arrives first.
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  Pay(shop, session);
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/refund");
  REQUIRE(Eventually([&] { return Outcome(db, "charge.refunded") == "unknown_payment_intent"; }));
  CHECK(State(db, id) == "held");
  // The log's writer thread writes lines after the fact (base/log.cc): awaited.
  CHECK(Eventually([&] {
    return shop.gateway.process().Log().find("charge_event_unmatched") != std::string::npos;
  }));

  // The completion, late: sold and at once refunded, never "sold" to anyone.
  const auto completed = EventIds(shop, "checkout.session.completed");
  REQUIRE(completed.size() == 1);
  CHECK(shop.stripe.Control("POST", "/_test/events/" + completed[0] + "/deliver")["status"] == 200);
  CHECK(Outcome(db, "checkout.session.completed") == "already_refunded");
  CHECK(State(db, id) == "refunded");
  CHECK(PaintingState(db, "p7") == "available");
  CHECK(AuditRows(db, "action = 'stripe_refund'") == "1");
  // The success page agrees: the buyer is told of the refund.
  Reply page = Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + session);
  CHECK(page.status == 409);
  CHECK(State(db, id) == "refunded");
  CHECK(Checkout(shop, {"p7"}).status == 201);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "refunds: the refund paintlock issues for a late payment never unsells the "
                  "other buyer's painting") {
  const auto bought_first = Bought(shop, {"p7"});
  const std::string first = bought_first.first, first_session = bought_first.second;
  Age(db, first);
  // A second buyer takes the painting over and pays: the painting is theirs.
  const auto bought_second = Bought(shop, {"p7"});
  const std::string second = bought_second.first, second_session = bought_second.second;
  Pay(shop, second_session);
  REQUIRE(Eventually([&] { return State(db, second) == "sold"; }));

  // The first buyer's payment completes anyway; paintlock refunds it, and
  // Stripe announces that refund with charge.refunded.
  shop.stripe.Control("POST", "/_test/sessions/" + first_session + "/pay",
                      {{"payment_status", "paid"}, {"allow_expired", true}});
  REQUIRE(Eventually([&] { return State(db, first) == "refunded"; }));
  REQUIRE(Eventually([&] { return !Outcome(db, "charge.refunded").empty(); }));
  WebhooksSettled(shop);
  const std::string outcome = Outcome(db, "charge.refunded");
  CHECK((outcome == "refund_confirmed" || outcome == "already_refunded"));
  CHECK(db.Scalar("SELECT reservation_id FROM stripe_events WHERE type = 'charge.refunded'") ==
        first);
  CHECK(State(db, second) == "sold");
  CHECK(PaintingState(db, "p7") == "sold");
  CHECK(AuditRows(db, "action = 'mark_unsold'") == "0");
  CHECK(AuditRows(db, "action = 'refund'") == "1");
  CHECK(shop.stripe.Control("GET", "/_test/refunds").size() == 1);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "disputes: an open dispute flags the sale in holds and show, and its close is "
                  "recorded") {
  const Sale sale = Sold(*this, {"p7"});
  json dispute = shop.stripe.Control("POST", "/_test/sessions/" + sale.session + "/dispute",
                                     {{"reason", "product_not_received"}});
  const std::string dispute_id = dispute["id"];
  REQUIRE(dispute_id.rfind("dp_", 0) == 0);
  REQUIRE(Eventually([&] { return Outcome(db, "charge.dispute.created") == "dispute_opened"; }));

  json holds = Ctl(db, stripe, {"holds", "--json"}).Json();
  REQUIRE(Conditions(holds) == std::vector<std::string>{"disputed"});
  CHECK(holds["holds"][0]["reservation_id"] == sale.reservation);
  CHECK(holds["holds"][0]["stuck"] == true);
  CHECK(holds["holds"][0]["dispute_reason"] == "product_not_received");
  CHECK(holds["holds"][0]["dispute_status"] == "needs_response");
  CompletedProcess table = Ctl(db, stripe, {"holds"});
  CHECK(table.out.find("disputed (product_not_received, needs_response)") != std::string::npos);
  CHECK(table.out.find("answer the dispute in the Stripe dashboard") != std::string::npos);
  CHECK(Ctl(db, stripe, {"holds", "--state", "disputed", "--json"}).Json()["count"] == 1);

  CompletedProcess shown = Ctl(db, stripe, {"show", sale.reservation});
  CHECK(shown.out.find(dispute_id + " needs_response (product_not_received") != std::string::npos);
  CHECK(Ctl(db, stripe, {"show", "p7"}).out.find("disputed: " + sale.reservation) !=
        std::string::npos);

  shop.stripe.Control("POST", "/_test/disputes/" + dispute_id + "/close", {{"status", "lost"}});
  REQUIRE(Eventually([&] { return Outcome(db, "charge.dispute.closed") == "dispute_closed"; }));
  json story = Ctl(db, stripe, {"show", sale.reservation, "--json"}).Json();
  REQUIRE(story["reservations"][0]["disputes"].size() == 1);
  CHECK(story["reservations"][0]["disputes"][0]["status"] == "lost");
  CHECK(story["reservations"][0]["disputes"][0]["closed"] == true);
  CHECK(AuditRows(db, "action = 'dispute_opened'") == "1");
  CHECK(AuditRows(db, "action = 'dispute_closed' AND details->>'status' = 'lost'") == "1");
  // A lost dispute takes money back, not the painting: it stays sold, and the
  // closed dispute is no longer a stuck hold.
  CHECK(State(db, sale.reservation) == "sold");
  CHECK(PaintingState(db, "p7") == "sold");
  CHECK(Ctl(db, stripe, {"holds", "--json"}).Json()["count"] == 0);

  // The created event again, late: the closed status stays.
  const auto created = EventIds(shop, "charge.dispute.created");
  REQUIRE(created.size() == 1);
  // (As a second event id for the same change would be: Stripe sometimes sends two.)
  db.Exec("DELETE FROM stripe_events WHERE type = 'charge.dispute.created'");
  CHECK(shop.stripe.Control("POST", "/_test/events/" + created[0] + "/deliver")["status"] == 200);
  CHECK(db.Scalar("SELECT status || ' ' || closed FROM disputes") == "lost true");
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "disputes: a dispute that arrives before the sale flags it once it is sold") {
  const auto bought_id = Bought(shop, {"p7"});
  const std::string id = bought_id.first, session = bought_id.second;
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  Pay(shop, session);
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/dispute");
  REQUIRE(Eventually(
      [&] { return Outcome(db, "charge.dispute.created") == "unknown_payment_intent"; }));
  CHECK(Ctl(db, stripe, {"holds", "--state", "disputed", "--json"}).Json()["count"] == 0);
  const auto completed = EventIds(shop, "checkout.session.completed");
  REQUIRE(completed.size() == 1);
  CHECK(shop.stripe.Control("POST", "/_test/events/" + completed[0] + "/deliver")["status"] == 200);
  CHECK(State(db, id) == "sold");
  json holds = Ctl(db, stripe, {"holds", "--json"}).Json();
  CHECK(Conditions(holds) == std::vector<std::string>{"disputed"});
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "refunds: a refund or dispute of an unknown payment is acknowledged, logged, "
                  "and changes nothing") {
  const Sale sale = Sold(*this, {"p7"});
  const std::string before =
      db.Scalar("SELECT string_agg(id || state, ',' ORDER BY id) FROM painting_states") +
      db.Scalar("SELECT string_agg(id || state, ',' ORDER BY id) FROM reservations") +
      AuditRows(db, "true");
  json charge = {{"id", "ch_unknown1"},
                 {"object", "charge"},
                 {"amount", 5000},
                 {"amount_refunded", 5000},
                 {"refunded", true},
                 {"currency", "eur"},
                 {"payment_intent", "pi_unknown1"}};
  json event = {
      {"id", "evt_unknown_refund"},    {"object", "event"},  {"type", "charge.refunded"},
      {"created", std::time(nullptr)}, {"livemode", false},  {"api_version", "2026-10-28.endive"},
      {"pending_webhooks", 1},         {"request", nullptr}, {"data", {{"object", charge}}}};
  Reply r = DeliverSigned(shop.gateway.base(), event);
  CHECK(r.status == 200);
  CHECK(r.json["outcome"] == "unknown_payment_intent");
  json dispute = {{"id", "dp_unknown1"},     {"object", "dispute"},
                  {"amount", 5000},          {"currency", "eur"},
                  {"charge", "ch_unknown1"}, {"payment_intent", "pi_unknown1"},
                  {"reason", "fraudulent"},  {"status", "needs_response"}};
  event["id"] = "evt_unknown_dispute";
  event["type"] = "charge.dispute.created";
  event["data"]["object"] = dispute;
  r = DeliverSigned(shop.gateway.base(), event);
  CHECK(r.status == 200);
  CHECK(r.json["outcome"] == "unknown_payment_intent");
  CHECK(Eventually(
      [&] { return shop.gateway.process().Log().find("pi_unknown1") != std::string::npos; }));
  const std::string after =
      db.Scalar("SELECT string_agg(id || state, ',' ORDER BY id) FROM painting_states") +
      db.Scalar("SELECT string_agg(id || state, ',' ORDER BY id) FROM reservations") +
      AuditRows(db, "true");
  CHECK(before == after);
  CHECK(State(db, sale.reservation) == "sold");

  // A charge event that is not a charge is refused with a clear 400.
  event["id"] = "evt_bad_refund";
  event["type"] = "charge.refunded";
  event["data"]["object"] = {{"object", "charge"}, {"id", "ch_x"}};
  r = DeliverSigned(shop.gateway.base(), event);
  CHECK(r.status == 400);
  CheckInvariants(db);
}
