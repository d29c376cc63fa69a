#include "stripe/session_form.h"

#include <doctest/doctest.h>

#include <string>

namespace paintlock::stripe {
namespace {

using base::FormFields;

std::string Find(const FormFields& fields, const std::string& key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "<missing " + key + ">";
}

TEST_CASE("CheckoutSessionForm: the fields Stripe needs for a payment session") {
  CreateSessionParams p;
  p.idempotency_key = "res_1";
  p.line_items = {{"Water Lilies", 125000, "eur"}, {"Caf\xC3\xA9 at night", 990, "eur"}};
  p.success_url = "https://shop.example/ok?s={CHECKOUT_SESSION_ID}";
  p.cancel_url = "https://shop.example/cancel";
  p.expires_at_unix = 1796212800;
  p.client_reference_id = "res_1";
  p.metadata = {{"reservation_id", "res_1"}, {"painting_ids", "p1,p2"}};

  FormFields f = CheckoutSessionForm(p);
  CHECK(f.front() == std::pair<std::string, std::string>("mode", "payment"));
  CHECK(Find(f, "line_items[0][quantity]") == "1");
  CHECK(Find(f, "line_items[0][price_data][currency]") == "eur");
  CHECK(Find(f, "line_items[0][price_data][unit_amount]") == "125000");
  CHECK(Find(f, "line_items[0][price_data][product_data][name]") == "Water Lilies");
  CHECK(Find(f, "line_items[1][quantity]") == "1");
  CHECK(Find(f, "line_items[1][price_data][unit_amount]") == "990");
  CHECK(Find(f, "line_items[1][price_data][product_data][name]") == "Caf\xC3\xA9 at night");
  CHECK(Find(f, "success_url") == p.success_url);
  CHECK(Find(f, "cancel_url") == p.cancel_url);
  CHECK(Find(f, "expires_at") == "1796212800");
  CHECK(Find(f, "client_reference_id") == "res_1");
  CHECK(Find(f, "metadata[reservation_id]") == "res_1");
  CHECK(Find(f, "metadata[painting_ids]") == "p1,p2");
  for (const auto& kv : f) CHECK(kv.first != "idempotency_key");
  CHECK(f.size() == 1 + 2 * 4 + 4 + 2);  // mode, 2 items, 4 top-level fields, 2 metadata
}

TEST_CASE("CheckoutSessionForm omits empty optional fields") {
  CreateSessionParams p;
  p.line_items = {{"One", 100, "usd"}};
  FormFields f = CheckoutSessionForm(p);
  for (const auto& kv : f) {
    CHECK(kv.first != "expires_at");
    CHECK(kv.first != "client_reference_id");
    CHECK(kv.first != "success_url");
    CHECK(kv.first != "cancel_url");
    CHECK(kv.first.rfind("metadata", 0) != 0);
  }
  CHECK(f.size() == 5);
}

TEST_CASE("CheckoutSessionForm: what the buyer is asked for besides paying") {
  CreateSessionParams p;
  p.line_items = {{"One", 100, "eur"}};
  p.collection.shipping_countries = {"DE", "FR"};
  p.collection.collect_phone = true;
  p.collection.locale = "fr";
  p.collection.shipping_rate = "shr_123";
  FormFields f = CheckoutSessionForm(p);
  CHECK(Find(f, "shipping_address_collection[allowed_countries][0]") == "DE");
  CHECK(Find(f, "shipping_address_collection[allowed_countries][1]") == "FR");
  CHECK(Find(f, "phone_number_collection[enabled]") == "true");
  CHECK(Find(f, "locale") == "fr");
  CHECK(Find(f, "shipping_options[0][shipping_rate]") == "shr_123");
  CHECK(f.size() == 5 + 5);

  p.collection = {};
  for (const auto& kv : CheckoutSessionForm(p)) {
    CHECK(kv.first.rfind("shipping", 0) != 0);
    CHECK(kv.first.rfind("phone", 0) != 0);
    CHECK(kv.first != "locale");
  }
}
TEST_CASE("CheckoutSessionForm: a painting's picture and description as product_data") {
  CreateSessionParams p;
  p.line_items = {{"One", 100, "eur", "https://img.example/1.jpg", "Oil on linen"},
                  {"Two", 200, "eur"}};
  FormFields f = CheckoutSessionForm(p);
  CHECK(Find(f, "line_items[0][price_data][product_data][images][0]") ==
        "https://img.example/1.jpg");
  CHECK(Find(f, "line_items[0][price_data][product_data][description]") == "Oil on linen");
  for (const auto& kv : f) {
    CHECK(kv.first.rfind("line_items[1][price_data][product_data][images]", 0) != 0);
    CHECK(kv.first != "line_items[1][price_data][product_data][description]");
  }
  CHECK(f.size() == 1 + 2 * 4 + 2);
}

}  // namespace
}  // namespace paintlock::stripe
