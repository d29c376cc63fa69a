#include "webhooks/subscriptions.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace paintlock::webhooks;
using nlohmann::json;

namespace {

json Event(const std::string& type, json object) {
  return {{"id", "evt_1"},
          {"object", "event"},
          {"type", type},
          {"created", 1767225600},
          {"data", {{"object", std::move(object)}}}};
}

json Subscription() {
  return {{"id", "sub_1Abc"},
          {"object", "subscription"},
          {"customer", "cus_9Xyz"},
          {"status", "active"},
          {"current_period_end", 1769904000}};
}

}  // namespace

TEST_CASE("quota: subscription events decode to what a licence needs") {
  std::string error;
  auto e = DecodeSubscriptionEvent(Event("customer.subscription.created", Subscription()).dump(),
                                   &error);
  REQUIRE_MESSAGE(e, error);
  CHECK(e->event_id == "evt_1");
  CHECK(e->event_type == "customer.subscription.created");
  CHECK(e->event_created_unix == 1767225600);
  CHECK(e->subscription_id == "sub_1Abc");
  CHECK(e->customer_id == "cus_9Xyz");
  CHECK(e->status == "active");
  CHECK(e->current_period_end_unix == 1769904000);
  CHECK(IsSubscriptionEventType("customer.subscription.deleted"));
  CHECK(!IsSubscriptionEventType("customer.subscription.paused"));
  CHECK(!IsSubscriptionEventType("checkout.session.completed"));
}

TEST_CASE(
    "quota: newer API versions keep the period end on the items, and may expand the customer") {
  json s = Subscription();
  s.erase("current_period_end");
  s["customer"] = {{"id", "cus_9Xyz"}, {"object", "customer"}};
  s["items"] = {{"object", "list"},
                {"data", json::array({{{"id", "si_1"}, {"current_period_end", 1769900000}},
                                      {{"id", "si_2"}, {"current_period_end", 1769904000}}})}};
  std::string error;
  auto e = DecodeSubscriptionEvent(Event("customer.subscription.updated", s).dump(), &error);
  REQUIRE_MESSAGE(e, error);
  CHECK(e->customer_id == "cus_9Xyz");
  CHECK(e->current_period_end_unix == 1769904000);

  s.erase("items");
  e = DecodeSubscriptionEvent(Event("customer.subscription.updated", s).dump(), &error);
  REQUIRE(e);
  CHECK(e->current_period_end_unix == 0);  // unknown: the licence has no period backstop
}

TEST_CASE("quota: events a licence cannot be built from are refused with a reason") {
  std::string error;
  CHECK(!DecodeSubscriptionEvent("not json", &error));
  auto refused = [&](json event, const std::string& why) {
    error.clear();
    CHECK(!DecodeSubscriptionEvent(event.dump(), &error));
    CHECK_MESSAGE(error.find(why) != std::string::npos, error);
  };
  json e = Event("customer.subscription.created", Subscription());
  e.erase("created");
  refused(e, "created");
  refused(Event("customer.subscription.created", {{"id", "cs_1"}, {"object", "checkout.session"}}),
          "subscription object");
  json s = Subscription();
  s["id"] = "sub_bad id";
  refused(Event("customer.subscription.created", s), "valid id");
  s = Subscription();
  s.erase("customer");
  refused(Event("customer.subscription.created", s), "customer");
  s = Subscription();
  s["status"] = 7;
  refused(Event("customer.subscription.created", s), "status");
  refused(Event("customer.created", Subscription()), "customer.subscription");
}
