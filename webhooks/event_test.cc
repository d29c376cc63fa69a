#include "webhooks/event.h"

#include <doctest/doctest.h>

namespace paintlock::webhooks {
namespace {

using json = nlohmann::json;

std::string Event(const std::string& type, const std::string& status, json extra) {
  json object = {{"id", "cs_test_1"},
                 {"object", "checkout.session"},
                 {"status", status},
                 {"payment_status", status == "complete" ? "paid" : "unpaid"},
                 {"metadata", {{"reservation_id", "0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e"}}}};
  object.update(extra);
  return json{{"id", "evt_1"}, {"type", type}, {"data", {{"object", object}}}}.dump();
}

TEST_CASE("DecodeEvent: a completed session's buyer details come from the event's object") {
  const json extra = {
      {"customer_details", {{"name", "Ada"}, {"email", "ada@example.com"}, {"phone", "+49301"}}},
      {"collected_information",
       {{"shipping_details",
         {{"name", "Ada L."},
          {"address", {{"line1", "Hauptstr. 1"}, {"city", "Berlin"}, {"country", "DE"}}}}}}}};
  std::string error;
  auto e = DecodeEvent(Event("checkout.session.completed", "complete", extra), &error);
  REQUIRE(e);
  CHECK(e->session.contact.name == "Ada");
  CHECK(e->session.contact.email == "ada@example.com");
  CHECK(e->session.contact.phone == "+49301");
  CHECK(e->session.contact.shipping_name == "Ada L.");
  CHECK(e->session.contact.line1 == "Hauptstr. 1");
  CHECK(e->session.contact.city == "Berlin");
  CHECK(e->session.contact.country == "DE");

  // Older API versions: shipping_details at the top level.
  const json legacy = {
      {"shipping_details", {{"name", "Bo"}, {"address", {{"line1", "Rue 2"}, {"country", "FR"}}}}}};
  e = DecodeEvent(Event("checkout.session.completed", "complete", legacy), &error);
  REQUIRE(e);
  CHECK(e->session.contact.shipping_name == "Bo");
  CHECK(e->session.contact.country == "FR");
}

TEST_CASE("DecodeEvent: a session that is not complete keeps no buyer details") {
  const json extra = {{"customer_details", {{"email", "typed@example.com"}}}};
  std::string error;
  auto e = DecodeEvent(Event("checkout.session.expired", "expired", extra), &error);
  REQUIRE(e);
  CHECK(e->session.contact.empty());
}

}  // namespace
}  // namespace paintlock::webhooks
