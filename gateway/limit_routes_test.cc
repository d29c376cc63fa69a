// The rate-limit settings, as ParseConfig reads them, and a granted take's body.
#include "gateway/limit_routes.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/config.h"
#include "gateway/config_test_env.h"

using namespace paintlock::gateway;
using paintlock::gateway::testing::RequiredEnvPlus;

namespace {

Config Parse(std::map<std::string, std::string> vars, std::vector<std::string>* problems) {
  return ParseConfig(RequiredEnvPlus(std::move(vars)), problems);
}

}  // namespace

TEST_CASE("rate limits: by default checkouts are limited per visitor, generously") {
  std::vector<std::string> problems;
  Config c = Parse({}, &problems);
  CHECK(problems.empty());
  CHECK(c.checkout_rate_limit);
  REQUIRE(c.rate_buckets.size() == 1);
  CHECK(c.rate_buckets[0].name == "checkout");
  CHECK(c.rate_buckets[0].capacity >= 100);
}

TEST_CASE(
    "rate limits: PAINTLOCK_RATE_LIMITS adds buckets and may tighten checkout, the limit can be "
    "off") {
  std::vector<std::string> problems;
  Config c = Parse({{"PAINTLOCK_RATE_LIMITS", "api:100:10,checkout:10:0.2"},
                    {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"}},
                   &problems);
  CHECK(problems.empty());
  CHECK_FALSE(c.checkout_rate_limit);
  REQUIRE(c.rate_buckets.size() == 2);
  CHECK(c.rate_buckets[1].name == "checkout");
  CHECK(c.rate_buckets[1].capacity == 10);
  CHECK(ConfigHelp().find("PAINTLOCK_RATE_LIMITS") != std::string::npos);
  CHECK(ConfigHelp().find("PAINTLOCK_CHECKOUT_RATE_LIMIT") != std::string::npos);
}

TEST_CASE("rate limits: bad rate-limit settings are start-up problems, one line each") {
  std::vector<std::string> problems;
  Parse({{"PAINTLOCK_RATE_LIMITS", "api:100"}, {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "maybe"}},
        &problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].rfind("PAINTLOCK_RATE_LIMITS: \"api:100\"", 0) == 0);
  CHECK(problems[1].rfind("PAINTLOCK_CHECKOUT_RATE_LIMIT:", 0) == 0);
}

TEST_CASE("rate limits: database trouble on these endpoints says nothing of paintings") {
  for (auto kind : {paintlock::locks::DbFailureKind::kContended,
                    paintlock::locks::DbFailureKind::kUnavailable}) {
    HttpError e = ErrorFor(paintlock::locks::DbFailure{kind, "detail"}, Surface::kLimits);
    CHECK(e.status == 503);
    CHECK(e.retry_after_seconds > 0);
    CHECK(e.message.find("painting") == std::string::npos);
    CHECK(e.message.find("detail") == std::string::npos);
  }
  CHECK(ErrorFor(paintlock::locks::DbFailure{paintlock::locks::DbFailureKind::kInternal,
                                             "SELECT secret"},
                 Surface::kLimits)
            .status == 500);
}

TEST_CASE("a write whose answer was lost with the connection is not told as nothing changed") {
  namespace locks = paintlock::locks;
  locks::DbFailure lost{locks::DbFailureKind::kUnavailable, "server closed the connection", true};
  for (auto surface :
       {Surface::kLimits, Surface::kQuotas, Surface::kWebhooks, Surface::kPaintings}) {
    HttpError e = ErrorFor(lost, surface);
    CHECK(e.status == 503);
    CHECK(e.code == "outcome_unknown");
    CHECK(e.message.find("Nothing changed") == std::string::npos);
    CHECK(e.message.find("Nothing was reserved") == std::string::npos);
    CHECK(e.message.find("server closed") == std::string::npos);
  }
  locks::DbFailure refused{locks::DbFailureKind::kUnavailable, "connection refused"};
  CHECK(ErrorFor(refused, Surface::kLimits).code == "unavailable");
}

TEST_CASE("checkout limit: a misconfigured or undecided take admits the checkout, never silently") {
  namespace locks = paintlock::locks;
  const AdmitDecision unknown =
      DecideAdmission(locks::TakeOutcome{locks::UnknownBucket{"checkout"}});
  CHECK(unknown.admit);
  CHECK(unknown.log_event == "checkout_rate_limit_misconfigured");
  const AdmitDecision over = DecideAdmission(locks::TakeOutcome{locks::CostOverCapacity{1, 0}});
  CHECK(over.admit);
  CHECK(over.log_event == "checkout_rate_limit_misconfigured");
  const AdmitDecision db = DecideAdmission(
      locks::TakeOutcome{locks::DbFailure{locks::DbFailureKind::kUnavailable, "down"}});
  CHECK(db.admit);
  CHECK(db.log_event == "checkout_rate_limit_undecided");
  const AdmitDecision limited = DecideAdmission(locks::TakeOutcome{locks::RateLimited{"k", 0, 7}});
  CHECK_FALSE(limited.admit);
  CHECK(limited.retry_after_seconds == 7);
  CHECK(DecideAdmission(locks::TakeOutcome{locks::RateAllowed{"k", 3}}).log_event.empty());
}

TEST_CASE("rate limits: a granted take's body is the bytes the JSON object would give") {
  const std::vector<std::string> keys = {
      "api:alice",   "api:qu\"ote\\back/slash", "api:\x01\x1f ctl",
      "api:ünïcödé", "api:\xff\xfe not utf-8",  ""};
  for (const std::string& key : keys) {
    for (std::int64_t remaining : {std::int64_t{0}, std::int64_t{42}, std::int64_t{-1},
                                   std::numeric_limits<std::int64_t>::max()}) {
      CAPTURE(key);
      CAPTURE(remaining);
      const nlohmann::json object = {{"allowed", true}, {"key", key}, {"remaining", remaining}};
      CHECK(AllowedTakeBody(key, remaining) ==
            object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
}
