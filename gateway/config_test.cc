#include "gateway/config.h"

#include <doctest/doctest.h>

#include <map>

using namespace paintlock::gateway;

namespace {

using paintlock::base::MapEnv;

const std::map<std::string, std::string> kMinimal = {
    {"DATABASE_URL", "postgresql:///x"},
    {"STRIPE_SECRET_KEY", "sk_test_123"},
};

}  // namespace

TEST_CASE("defaults need only a database and a Stripe key") {
  std::vector<std::string> problems;
  Config c = ParseConfig(MapEnv(kMinimal), &problems);
  CHECK(problems.empty());
  CHECK(c.listen_host == "127.0.0.1");
  CHECK(c.listen_port == 8080);
  CHECK(c.hold_ttl == std::chrono::seconds(420));
  CHECK(c.session_ttl >= std::chrono::minutes(31));
  CHECK(c.stripe.api_base == "https://api.stripe.com");
  CHECK(c.cancel_url == "http://127.0.0.1:8080/shop/");
}

TEST_CASE("every problem is reported, one line each, without secrets") {
  std::vector<std::string> problems;
  ParseConfig(MapEnv({{"STRIPE_SECRET_KEY", "pk_live_secretish"},
                      {"PAINTLOCK_HOLD_SECONDS", "7m"},
                      {"PAINTLOCK_LISTEN", "8080"},
                      {"STRIPE_WEBHOOK_SECRET", "whsec_a, nope"},
                      {"PAINTLOCK_API_KEY", "short"}}),
              &problems);
  CHECK(problems.size() == 6);
  for (const auto& p : problems) CHECK(p.find("secretish") == std::string::npos);
  CHECK(problems[0].rfind("DATABASE_URL:", 0) == 0);
}

TEST_CASE("webhook secrets are a comma-separated list for rolling") {
  auto vars = kMinimal;
  vars["STRIPE_WEBHOOK_SECRET"] = "whsec_old, whsec_new";
  vars["PAINTLOCK_LISTEN"] = "0.0.0.0:9000";
  std::vector<std::string> problems;
  Config c = ParseConfig(MapEnv(vars), &problems);
  CHECK(problems.empty());
  CHECK(c.stripe_webhook_secrets == std::vector<std::string>{"whsec_old", "whsec_new"});
  CHECK(c.listen_port == 9000);
}

TEST_CASE("behind PgBouncer: unnamed statements and a direct URL for LISTEN") {
  auto vars = kMinimal;
  std::vector<std::string> problems;
  Config plain = ParseConfig(MapEnv(vars), &problems);
  CHECK(plain.database.statements == paintlock::locks::StatementMode::kNamed);
  CHECK(plain.listen_database_url.empty());

  vars["PAINTLOCK_DB_STATEMENTS"] = "unnamed";
  vars["PAINTLOCK_LISTEN_DATABASE_URL"] = "postgresql://h1:5432,h2:5432/x";
  Config pooled = ParseConfig(MapEnv(vars), &problems);
  CHECK(problems.empty());
  CHECK(pooled.database.statements == paintlock::locks::StatementMode::kUnnamed);
  CHECK(pooled.listen_database_url == "postgresql://h1:5432,h2:5432/x");

  vars["PAINTLOCK_DB_STATEMENTS"] = "prepared";
  ParseConfig(MapEnv(vars), &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].rfind("PAINTLOCK_DB_STATEMENTS:", 0) == 0);
}

TEST_CASE("PAINTLOCK_DB_OUTCOME_LOOKUP_MS: how long a lost write's outcome is looked up") {
  auto vars = kMinimal;
  std::vector<std::string> problems;
  CHECK(ParseConfig(MapEnv(vars), &problems).database.outcome_lookup_patience ==
        std::chrono::seconds(10));
  vars["PAINTLOCK_DB_OUTCOME_LOOKUP_MS"] = "2500";
  CHECK(ParseConfig(MapEnv(vars), &problems).database.outcome_lookup_patience ==
        std::chrono::milliseconds(2500));
  vars["PAINTLOCK_DB_OUTCOME_LOOKUP_MS"] = "0";
  CHECK(ParseConfig(MapEnv(vars), &problems).database.outcome_lookup_patience ==
        std::chrono::milliseconds(0));
  REQUIRE(problems.empty());
  for (const char* bad : {"-1", "60001", "10s"}) {
    problems.clear();
    vars["PAINTLOCK_DB_OUTCOME_LOOKUP_MS"] = bad;
    ParseConfig(MapEnv(vars), &problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].rfind("PAINTLOCK_DB_OUTCOME_LOOKUP_MS:", 0) == 0);
  }
}

TEST_CASE("STRIPE_API_VERSION pins the Stripe-Version sent, and must look like one") {
  auto vars = kMinimal;
  std::vector<std::string> problems;
  CHECK(ParseConfig(MapEnv(vars), &problems).stripe.stripe_version ==
        paintlock::stripe::kDefaultStripeVersion);
  vars["STRIPE_API_VERSION"] = "2025-03-31.basil";
  CHECK(ParseConfig(MapEnv(vars), &problems).stripe.stripe_version == "2025-03-31.basil");
  CHECK(problems.empty());
  for (const char* bad : {"latest", "2025-03-31 basil", "2025-3-31", "2025-03-31.Basil\n"}) {
    problems.clear();
    vars["STRIPE_API_VERSION"] = bad;
    ParseConfig(MapEnv(vars), &problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].rfind("STRIPE_API_VERSION:", 0) == 0);
  }
}

TEST_CASE("PAINTLOCK_ON_DATABASE_DOWN is refuse by default, sell on request, else a problem") {
  std::vector<std::string> problems;
  CHECK_FALSE(ParseConfig(MapEnv(kMinimal), &problems).sell_when_database_down);
  auto vars = kMinimal;
  vars["PAINTLOCK_ON_DATABASE_DOWN"] = "sell";
  CHECK(ParseConfig(MapEnv(vars), &problems).sell_when_database_down);
  vars["PAINTLOCK_ON_DATABASE_DOWN"] = "refuse";
  CHECK_FALSE(ParseConfig(MapEnv(vars), &problems).sell_when_database_down);
  REQUIRE(problems.empty());
  vars["PAINTLOCK_ON_DATABASE_DOWN"] = "Sell";
  ParseConfig(MapEnv(vars), &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].rfind("PAINTLOCK_ON_DATABASE_DOWN: must be refuse or sell", 0) == 0);
}

TEST_CASE("checkout settings: shipping countries, phone, locale and rate, each checked") {
  std::vector<std::string> problems;
  Config none = ParseConfig(MapEnv(kMinimal), &problems);
  CHECK(problems.empty());
  CHECK(none.checkout_collection.shipping_countries.empty());
  CHECK_FALSE(none.checkout_collection.collect_phone);
  CHECK(none.checkout_collection.locale.empty());
  CHECK(none.checkout_collection.shipping_rate.empty());

  auto vars = kMinimal;
  vars["PAINTLOCK_SHIPPING_COUNTRIES"] = " de,FR , at,DE";
  vars["PAINTLOCK_COLLECT_PHONE"] = "on";
  vars["PAINTLOCK_CHECKOUT_LOCALE"] = "pt-BR";
  vars["PAINTLOCK_SHIPPING_RATE"] = "shr_1NxYz";
  Config set = ParseConfig(MapEnv(vars), &problems);
  CHECK(problems.empty());
  CHECK(set.checkout_collection.shipping_countries == std::vector<std::string>{"DE", "FR", "AT"});
  CHECK(set.checkout_collection.collect_phone);
  CHECK(set.checkout_collection.locale == "pt-BR");
  CHECK(set.checkout_collection.shipping_rate == "shr_1NxYz");

  vars["PAINTLOCK_SHIPPING_COUNTRIES"] = "DE,GER";
  vars["PAINTLOCK_COLLECT_PHONE"] = "yes";
  vars["PAINTLOCK_CHECKOUT_LOCALE"] = "klingon";
  vars["PAINTLOCK_SHIPPING_RATE"] = "rate_1";
  ParseConfig(MapEnv(vars), &problems);
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].rfind("PAINTLOCK_SHIPPING_COUNTRIES: \"GER\"", 0) == 0);
  CHECK(problems[1].rfind("PAINTLOCK_COLLECT_PHONE:", 0) == 0);
  CHECK(problems[2].rfind("PAINTLOCK_CHECKOUT_LOCALE:", 0) == 0);
  CHECK(problems[3].rfind("PAINTLOCK_SHIPPING_RATE:", 0) == 0);

  problems.clear();
  vars = kMinimal;
  vars["PAINTLOCK_SHIPPING_COUNTRIES"] = "DE,KP";  // Stripe does not ship there
  ParseConfig(MapEnv(vars), &problems);
  CHECK(problems.size() == 1);
}
