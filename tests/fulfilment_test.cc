// What a shop needs to fulfil a sale, through the real gateway, paintlockctl
// and the fake Stripe (which checks the parameters as Stripe does): the
// checkout settings reach every session, the buyer's details of a paid
// session are kept (from the webhook's session, or from retrieving it when
// the webhook was lost) and shown by `paintlockctl show`, never logged; the
// catalogue's picture and description reach GET /v1/paintings and the
// session's products.
#include <doctest/doctest.h>
#include <unistd.h>

#include "tests/support/admin_fixture.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

const std::map<std::string, std::string> kShipping = {
    {"PAINTLOCK_SHIPPING_COUNTRIES", "de, FR,AT,DE"},
    {"PAINTLOCK_COLLECT_PHONE", "on"},
    {"PAINTLOCK_CHECKOUT_LOCALE", "de"},
    {"PAINTLOCK_SHIPPING_RATE", "shr_1PaintlockTest"}};

// What the test buyer enters on Stripe's page.
const json kBuyer = {
    {"payment_status", "paid"},
    {"customer_details",
     {{"name", "Ada Lovelace"}, {"email", "ada@example.com"}, {"phone", "+49 30 1234567"}}},
    {"shipping_details",
     {{"name", "Ada L."},
      {"address",
       {{"line1", "Hauptstrasse 17"},
        {"line2", "Hinterhaus"},
        {"city", "Berlin"},
        {"postal_code", "10115"},
        {"country", "DE"}}}}}};

void PayAs(Shop& shop, const std::string& session, const json& buyer) {
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/pay", buyer);
}

std::string KeptContact(TestDatabase& db, const std::string& session) {
  return db.Scalar(
      "SELECT concat_ws('|', name, email, phone, shipping_name, line1, line2, city, postal_code, "
      "country) FROM sale_contacts WHERE session_id = '" +
      session + "'");
}

}  // namespace

TEST_CASE("fulfilment: the checkout settings reach the session, the buyer's address is kept") {
  TestDatabase db;
  Shop shop(db, kShipping);
  auto [reservation, session_id] = Bought(shop, {"p1"});
  json session = Session(shop, session_id);
  CHECK(session["shipping_address_collection"] ==
        json({{"allowed_countries", {"DE", "FR", "AT"}}}));
  CHECK(session["phone_number_collection"] == json({{"enabled", true}}));
  CHECK(session["locale"] == "de");
  CHECK(session["shipping_options"] ==
        json::array({{{"shipping_amount", 0}, {"shipping_rate", "shr_1PaintlockTest"}}}));
  CHECK(session["customer_details"].is_null());

  // The fake refuses an address in a country the session does not ship to.
  json elsewhere = kBuyer;
  elsewhere["shipping_details"]["address"]["country"] = "US";
  Reply refused = PostJson(shop.stripe.base(), "/_test/sessions/" + session_id + "/pay", elsewhere);
  CHECK(refused.status == 400);
  CHECK(refused.json["error"]["param"] == "shipping_details.address.country");

  PayAs(shop, session_id, kBuyer);
  REQUIRE(Eventually([&, reservation = reservation] { return State(db, reservation) == "sold"; }));
  REQUIRE(
      Eventually([&, session_id = session_id] { return !KeptContact(db, session_id).empty(); }));
  CHECK(KeptContact(db, session_id) ==
        "Ada Lovelace|ada@example.com|+49 30 1234567|Ada L.|Hauptstrasse 17|Hinterhaus|Berlin|"
        "10115|DE");
  // The event carried the session as Stripe sends it: shipping under collected_information.
  bool completed_event_has_address = false;
  for (const auto& e : shop.stripe.Control("GET", "/_test/events")) {
    const json& object = e["data"]["object"];
    if (e["type"] == "checkout.session.completed" && object["id"] == session_id) {
      completed_event_has_address =
          object["collected_information"]["shipping_details"]["address"]["line1"] ==
              "Hauptstrasse 17" &&
          object["customer_details"]["email"] == "ada@example.com";
    }
  }
  CHECK(completed_event_has_address);

  for (const std::string& key : {reservation, session_id, std::string("p1")}) {
    CompletedProcess shown = Ctl(db, shop.stripe.base(), {"show", key});
    CHECK(shown.exit_code == 0);
    CHECK(shown.out.find("Ada Lovelace <ada@example.com>, +49 30 1234567") != std::string::npos);
    CHECK(shown.out.find("Ada L., Hauptstrasse 17, Hinterhaus, 10115, Berlin, DE") !=
          std::string::npos);
  }
  json shown = Ctl(db, shop.stripe.base(), {"show", reservation, "--json"}).Json();
  CHECK(shown["reservations"][0]["buyer_contact"]["postal_code"] == "10115");

  // Personal data is kept, never logged: the log says only that it was.
  const std::string log = shop.gateway.LogUpToNow();
  CHECK(log.find("sale_contact_kept") != std::string::npos);
  for (const char* personal : {"ada@example.com", "Hauptstrasse", "Lovelace", "1234567"}) {
    CHECK_MESSAGE(log.find(personal) == std::string::npos, personal);
  }
  CheckInvariants(db);
}

TEST_CASE("fulfilment: a lost webhook's buyer details are kept from the retrieved session") {
  TestDatabase db;
  Shop shop(db, kShipping);
  auto [reservation, session_id] = Bought(shop, {"p2"});
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  PayAs(shop, session_id, kBuyer);
  WebhooksSettled(shop, 1);
  REQUIRE(KeptContact(db, session_id).empty());
  // The buyer lands on the success page, which retrieves the session.
  Reply page = Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + session_id);
  CHECK(page.status == 303);
  CHECK(State(db, reservation) == "sold");
  CHECK(KeptContact(db, session_id) ==
        "Ada Lovelace|ada@example.com|+49 30 1234567|Ada L.|Hauptstrasse 17|Hinterhaus|Berlin|"
        "10115|DE");
  CheckInvariants(db);
}

TEST_CASE("fulfilment: by default the session asks for nothing more, and keeps the email") {
  TestDatabase db;
  Shop shop(db);
  auto [reservation, session_id] = Bought(shop, {"p3"});
  json session = Session(shop, session_id);
  CHECK(session["shipping_address_collection"].is_null());
  CHECK(session["phone_number_collection"] == json({{"enabled", false}}));
  CHECK(session["locale"].is_null());
  CHECK(session["shipping_options"] == json::array());
  Pay(shop, session_id);
  REQUIRE(
      Eventually([&, session_id = session_id] { return !KeptContact(db, session_id).empty(); }));
  CHECK(KeptContact(db, session_id) == "buyer@example.com");
  CompletedProcess shown = Ctl(db, shop.stripe.base(), {"show", reservation});
  CHECK(shown.out.find("<buyer@example.com>") != std::string::npos);
  CHECK(shown.out.find("ship to") != std::string::npos);
  CheckInvariants(db);
}

TEST_CASE("fulfilment: bad checkout settings stop the start, one line each") {
  TestDatabase db;
  Process p("gateway-bad-shipping", {BuildDir() + "/paintlock"},
            {{"DATABASE_URL", db.url()},
             {"STRIPE_SECRET_KEY", "sk_test_fulfilment"},
             {"PAINTLOCK_SHIPPING_COUNTRIES", "DE,Germany"},
             {"PAINTLOCK_COLLECT_PHONE", "yes"},
             {"PAINTLOCK_CHECKOUT_LOCALE", "klingon"},
             {"PAINTLOCK_SHIPPING_RATE", "rate_1"}});
  CHECK(p.Wait() == 2);
  const std::string log = p.Log();
  CHECK(log.find("PAINTLOCK_SHIPPING_COUNTRIES: \"GERMANY\" is not a two-letter") !=
        std::string::npos);
  CHECK(log.find("PAINTLOCK_COLLECT_PHONE: must be on or off") != std::string::npos);
  CHECK(log.find("PAINTLOCK_CHECKOUT_LOCALE") != std::string::npos);
  CHECK(log.find("PAINTLOCK_SHIPPING_RATE: must be a Stripe shipping rate id") !=
        std::string::npos);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "fulfilment: a painting's picture and description, imported and sold with") {
  const std::string json_file =
      WriteFile("fulfilment-pictures-" + std::to_string(getpid()) + ".json", R"json([
      {"id": "n1", "title": "New Study", "price_minor": 1000, "currency": "eur",
       "image_url": "https://images.example/n1.jpg", "description": "Oil on linen, 30 x 40 cm"}])json");
  CHECK(Ctl(db, stripe, {"catalog", "import", json_file}).exit_code == 0);
  Reply one = Request(shop.gateway.base(), "GET", "/v1/paintings/n1");
  CHECK(one.json["image_url"] == "https://images.example/n1.jpg");
  CHECK(one.json["description"] == "Oil on linen, 30 x 40 cm");
  Reply page = Request(shop.gateway.base(), "GET", "/v1/paintings?limit=1");  // n1 sorts first
  REQUIRE(page.json["data"].size() == 1);
  CHECK(page.json["data"][0]["id"] == "n1");
  CHECK(page.json["data"][0]["image_url"] == "https://images.example/n1.jpg");
  Reply p1 = Request(shop.gateway.base(), "GET", "/v1/paintings/p1");
  CHECK_FALSE(p1.json.contains("image_url"));  // absent, not empty
  CHECK_FALSE(p1.json.contains("description"));

  // The session's product carries them, as Stripe Checkout shows them.
  auto [reservation, session_id] = Bought(shop, {"n1"});
  json product = Session(shop, session_id)["line_items"]["data"][0]["price"]["product"];
  CHECK(product["name"] == "New Study");
  CHECK(product["description"] == "Oil on linen, 30 x 40 cm");
  CHECK(product["images"] == json({"https://images.example/n1.jpg"}));

  // CSV: a new picture and no description (an empty field is none).
  const std::string csv = WriteFile("fulfilment-pictures-" + std::to_string(getpid()) + ".csv",
                                    "id,title,price_minor,currency,image_url,description\n"
                                    "n2,Other Study,1000,eur,https://images.example/n2.jpg,\n");
  CHECK(Ctl(db, stripe, {"catalog", "import", csv, "--json"}).Json()["added"] == 1);
  CHECK(db.Scalar("SELECT image_url || ' ' || coalesce(description, 'none') FROM paintings "
                  "WHERE id = 'n2'") == "https://images.example/n2.jpg none");

  // Only https, bounded: the whole file is refused, nothing written.
  const std::string bad =
      WriteFile("fulfilment-http-" + std::to_string(getpid()) + ".json",
                R"([{"id": "n3", "title": "Third", "price_minor": 500, "currency": "eur",
           "image_url": "http://images.example/n3.jpg"},
          {"id": "n4", "title": "Fourth", "price_minor": 500, "currency": "eur",
           "description": ")" +
                    std::string(1001, 'x') + R"("}])");
  CompletedProcess refused = Ctl(db, stripe, {"catalog", "import", bad});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("n3: image_url must be an https:// URL") != std::string::npos);
  CHECK(refused.err.find("n4: description must be at most 1000 bytes") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM paintings WHERE id IN ('n3', 'n4')") == "0");
  CheckInvariants(db);
}

TEST_CASE("fulfilment: contacts forget blanks a buyer's details for good, and audits no address") {
  TestDatabase db;
  Shop shop(db, kShipping);
  const std::string stripe = shop.stripe.base();
  json grace = kBuyer;
  grace["customer_details"] = {{"name", "Grace Hopper"}, {"email", "grace@example.com"}};
  std::vector<std::string> sales;  // Ada's two sales, then Grace's
  for (const auto& [painting, buyer] :
       std::vector<std::pair<std::string, json>>{{"p3", kBuyer}, {"p4", kBuyer}, {"p5", grace}}) {
    auto [reservation, session_id] = Bought(shop, {painting});
    PayAs(shop, session_id, buyer);
    REQUIRE(Eventually([&, s = session_id] { return !KeptContact(db, s).empty(); }));
    sales.push_back(session_id);
  }
  const std::string grace_kept = KeptContact(db, sales[2]);
  auto forgotten = [&](const std::string& session) {
    return db.Scalar("SELECT forgotten_at IS NOT NULL FROM sale_contacts WHERE session_id = '" +
                     session + "'") == "t";
  };
  auto audits = [&] {
    return db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'contacts_forgotten'");
  };

  // Usage: exactly one selector and a reason; the email is never echoed back.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"contacts", "forget", "--reason", "x"},
        {"contacts", "forget", "--email", "ada@example.com", "--session", sales[0], "--reason",
         "x"},
        {"contacts", "forget", "--email", "ada@example.com"},
        {"contacts", "forget", "--session", "pi_123", "--reason", "x"},
        {"contacts", "forget", "--older-than", "soon", "--reason", "x"}}) {
    CompletedProcess r = Ctl(db, stripe, bad);
    CHECK(r.exit_code == 2);
    CHECK(OneLine(r.err));
    CHECK(r.err.find("ada@") == std::string::npos);
  }

  CompletedProcess dry = Ctl(db, stripe,
                             {"contacts", "forget", "--email", "ADA@Example.com", "--reason",
                              "erasure request", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out == "dry run: would forget the buyer details of 2 sale(s); nothing was changed\n");
  CHECK_FALSE(forgotten(sales[0]));
  CHECK(audits() == "0");

  CompletedProcess done =
      Ctl(db, stripe, {"contacts", "forget", "--email", "ADA@Example.com", "--reason", "erasure"});
  CHECK(done.exit_code == 0);
  CHECK(done.out == "forgot the buyer details of 2 sale(s)\n");
  for (int i : {0, 1}) {
    CHECK(forgotten(sales[i]));
    CHECK(KeptContact(db, sales[i]).empty());
  }
  CHECK_FALSE(forgotten(sales[2]));
  CHECK(KeptContact(db, sales[2]) == grace_kept);
  CHECK(audits() == "1");
  const std::string audit = db.Scalar(
      "SELECT actor || ' ' || reason || ' ' || details::text FROM audit_log "
      "WHERE action = 'contacts_forgotten'");
  CHECK(audit.find("paintlockctl erasure") == 0);
  CHECK(audit.find(R"("selector": "email")") != std::string::npos);
  CHECK(audit.find(R"("sales": 2)") != std::string::npos);
  CHECK(audit.find("ada") == std::string::npos);
  CHECK(Ctl(db, stripe, {"contacts", "forget", "--email", "ada@example.com", "--reason", "again"})
            .out == "forgot the buyer details of 0 sale(s) (none matched)\n");

  // The sale stays, its details do not come back: the success page re-reads
  // the session from Stripe and keeps its details, but not over a forgotten row.
  CompletedProcess shown = Ctl(db, stripe, {"show", sales[0]});
  CHECK(shown.out.find("(forgotten ") != std::string::npos);
  CHECK(shown.out.find("Lovelace") == std::string::npos);
  CHECK(shown.out.find("sold") != std::string::npos);
  Reply page = Request(shop.gateway.base(), "GET", "/v1/checkout/success?session_id=" + sales[0]);
  CHECK(page.status == 303);
  CHECK(KeptContact(db, sales[0]).empty());

  // A sale forgotten before its details arrived: its webhook keeps nothing.
  auto [late_reservation, late_session] = Bought(shop, {"p6"});
  CompletedProcess early =
      Ctl(db, stripe, {"contacts", "forget", "--session", late_session, "--reason", "asked early"});
  CHECK(early.out == "forgot the buyer details of 0 sale(s); marked " + late_session +
                         " forgotten before its details arrived\n");
  PayAs(shop, late_session, kBuyer);
  REQUIRE(Eventually([&, r = late_reservation] { return State(db, r) == "sold"; }));
  WebhooksSettled(shop);
  CHECK(forgotten(late_session));
  CHECK(KeptContact(db, late_session).empty());

  // A session id paintlock never saw (a typo) changes nothing: no tombstone,
  // no audit line, exit 1 and a line that says so.
  const std::string typo = late_session + "x";
  const std::string audits_before = audits();
  CompletedProcess unknown =
      Ctl(db, stripe, {"contacts", "forget", "--session", typo, "--reason", "typo"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("no reservation, audit line or Stripe event has session " + typo) !=
        std::string::npos);
  CHECK(unknown.out.empty());
  CHECK(KeptContact(db, typo).empty());
  CHECK(db.Scalar("SELECT count(*) FROM sale_contacts WHERE session_id = '" + typo + "'") == "0");
  CHECK(audits() == audits_before);

  // A retention policy: only details recorded longer ago than the duration.
  db.Exec(
      "UPDATE sale_contacts SET recorded_at = now() - interval '200 days' "
      "WHERE session_id = '" +
      sales[2] + "'");
  json retained =
      Ctl(db, stripe,
          {"contacts", "forget", "--older-than", "26w", "--reason", "retention", "--json"})
          .Json();
  CHECK(retained["forgotten"] == 1);
  CHECK(retained["selector"] == "older_than");
  CHECK(forgotten(sales[2]));

  const std::string log = shop.gateway.LogUpToNow();
  for (const char* personal : {"ada@example.com", "grace@example.com", "Hauptstrasse"}) {
    CHECK_MESSAGE(log.find(personal) == std::string::npos, personal);
  }
  CheckInvariants(db);
}
