#include "stripe/buyer_details.h"

#include <doctest/doctest.h>

namespace paintlock::stripe {
namespace {

using json = nlohmann::json;

const json kAddress = {{"line1", "Hauptstr. 1"}, {"line2", nullptr}, {"city", "Berlin"},
                       {"postal_code", "10115"}, {"state", nullptr}, {"country", "DE"}};

TEST_CASE(
    "BuyerDetailsOf: collected_information.shipping_details, the pinned API version's shape") {
  const json session = {{"id", "cs_1"},
                        {"customer_details",
                         {{"name", "Ada"},
                          {"email", "ada@example.com"},
                          {"phone", "+4930123"},
                          {"address", nullptr}}},
                        {"collected_information",
                         {{"shipping_details", {{"name", "Ada L."}, {"address", kAddress}}}}}};
  BuyerDetails b = BuyerDetailsOf(session);
  CHECK(b.name == "Ada");
  CHECK(b.email == "ada@example.com");
  CHECK(b.phone == "+4930123");
  CHECK(b.shipping_name == "Ada L.");
  CHECK(b.shipping_address.line1 == "Hauptstr. 1");
  CHECK(b.shipping_address.line2.empty());
  CHECK(b.shipping_address.city == "Berlin");
  CHECK(b.shipping_address.postal_code == "10115");
  CHECK(b.shipping_address.country == "DE");
  CHECK_FALSE(b.empty());
}

TEST_CASE("BuyerDetailsOf: top-level shipping_details, the shape before 2025-03-31") {
  const json session = {{"id", "cs_1"},
                        {"customer_details", {{"email", "bo@example.com"}, {"phone", nullptr}}},
                        {"shipping_details", {{"name", "Bo"}, {"address", kAddress}}}};
  BuyerDetails b = BuyerDetailsOf(session);
  CHECK(b.email == "bo@example.com");
  CHECK(b.phone.empty());
  CHECK(b.shipping_name == "Bo");
  CHECK(b.shipping_address.country == "DE");
}

TEST_CASE("BuyerDetailsOf: the newer shape wins, and a null one falls back to the older") {
  json session = {{"id", "cs_1"},
                  {"shipping_details", {{"name", "Old"}, {"address", kAddress}}},
                  {"collected_information", {{"shipping_details", {{"name", "New"}}}}}};
  CHECK(BuyerDetailsOf(session).shipping_name == "New");
  session["collected_information"] = {{"shipping_details", nullptr}};
  CHECK(BuyerDetailsOf(session).shipping_name == "Old");
}

TEST_CASE("BuyerDetailsOf: nothing collected, or not an object, is empty") {
  CHECK(BuyerDetailsOf(json{{"id", "cs_1"}, {"customer_details", nullptr}}).empty());
  CHECK(BuyerDetailsOf(json::array()).empty());
  CHECK(BuyerDetailsOf(json{{"customer_details", {{"name", 7}}}}).empty());
}

TEST_CASE("BuyerDetailsOf: a field longer than the bound is cut on a character boundary") {
  // 499 ASCII bytes then a two-byte character straddling the 500-byte bound.
  const std::string name = std::string(499, 'a') + "\xc3\xa9" + "tail";
  BuyerDetails b = BuyerDetailsOf(json{{"customer_details", {{"name", name}}}});
  CHECK(b.name == std::string(499, 'a'));
  const std::string exact(kMaxBuyerFieldBytes, 'b');
  CHECK(BuyerDetailsOf(json{{"customer_details", {{"name", exact}}}}).name == exact);
}

}  // namespace
}  // namespace paintlock::stripe
