#include "webhooks/charges.h"

#include <doctest/doctest.h>

#include "webhooks/event.h"

using namespace paintlock::webhooks;
using nlohmann::json;

namespace {

json Charge() {
  return {{"id", "ch_3Abc"},
          {"object", "charge"},
          {"amount", 42000},
          {"amount_refunded", 0},
          {"refunded", false},
          {"currency", "eur"},
          {"payment_intent", "pi_3Abc"}};
}

json Dispute() {
  return {{"id", "dp_1Xyz"},        {"object", "dispute"},       {"amount", 42000},
          {"currency", "eur"},      {"charge", "ch_3Abc"},       {"payment_intent", "pi_3Abc"},
          {"reason", "fraudulent"}, {"status", "needs_response"}};
}

std::string Event(const std::string& type, const json& object) {
  return json{{"id", "evt_1"},
              {"object", "event"},
              {"type", type},
              {"created", 1700000000},
              {"data", {{"object", object}}}}
      .dump();
}

}  // namespace

TEST_CASE("charges: a Charge decodes with its payment intent and amounts") {
  std::string error;
  json c = Charge();
  c["amount_refunded"] = 42000;
  c["refunded"] = true;
  auto f = DecodeCharge(c, &error);
  REQUIRE(f);
  CHECK(f->charge_id == "ch_3Abc");
  CHECK(f->payment_intent == "pi_3Abc");
  CHECK(f->amount_minor == 42000);
  CHECK(f->refunded_minor == 42000);
  CHECK(f->fully_refunded);
  CHECK(f->currency == "eur");

  c["payment_intent"] = {{"id", "pi_expanded"}, {"object", "payment_intent"}};
  CHECK(DecodeCharge(c, &error)->payment_intent == "pi_expanded");
  c["payment_intent"] = nullptr;
  CHECK(DecodeCharge(c, &error)->payment_intent.empty());
}

TEST_CASE("charges: a Charge without its amounts, refunded flag or id is refused") {
  for (const char* key : {"id", "amount", "amount_refunded", "refunded", "currency"}) {
    json c = Charge();
    c.erase(key);
    std::string error;
    CHECK_MESSAGE(!DecodeCharge(c, &error), key);
    CHECK(!error.empty());
  }
  json c = Charge();
  c["amount_refunded"] = -1;
  std::string error;
  CHECK(!DecodeCharge(c, &error));
  c = Charge();
  c["payment_intent"] = "not a pi";
  CHECK(!DecodeCharge(c, &error));
  c = Charge();
  c["object"] = "refund";
  CHECK(!DecodeCharge(c, &error));
}

TEST_CASE("charges: a Dispute decodes, and its reason and status must be words") {
  std::string error;
  auto f = DecodeDispute(Dispute(), &error);
  REQUIRE(f);
  CHECK(f->dispute_id == "dp_1Xyz");
  CHECK(f->charge_id == "ch_3Abc");
  CHECK(f->payment_intent == "pi_3Abc");
  CHECK(f->reason == "fraudulent");
  CHECK(f->status == "needs_response");
  json d = Dispute();
  d["status"] = "Needs Response; DROP";
  CHECK(!DecodeDispute(d, &error));
  d = Dispute();
  d.erase("reason");
  CHECK(!DecodeDispute(d, &error));
}

TEST_CASE("charges: DecodeEvent carries charge and dispute events, and refuses bad ones") {
  std::string error;
  auto refund = DecodeEvent(Event("charge.refunded", Charge()), &error);
  REQUIRE(refund);
  CHECK(refund->refund);
  CHECK(!refund->dispute);
  auto closed = DecodeEvent(Event("charge.dispute.closed", Dispute()), &error);
  REQUIRE(closed);
  CHECK(closed->dispute);
  CHECK(closed->created == 1700000000);
  CHECK(!DecodeEvent(Event("charge.refunded", Dispute()), &error));
  CHECK(!DecodeEvent(Event("charge.dispute.created", Charge()), &error));
  // Other charge events are acknowledged, not decoded.
  auto other = DecodeEvent(Event("charge.succeeded", Charge()), &error);
  REQUIRE(other);
  CHECK(!other->refund);
}
