// Daily quotas and licences under real concurrency: real PostgreSQL, real
// gateway processes, real concurrent HTTP clients, signed webhooks.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <functional>
#include <memory>

#include "locks/licenses.h"
#include "tests/support/harness.h"
#include "tests/support/outcome_tally.h"
#include "webhooks/signature.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

constexpr const char* kVisitorKey = "quota-test-visitor-key-0123456789";
constexpr const char* kLicenseSecret = "quota-test-licence-secret-0123456789abcdef";

GatewayOptions QuotaGateway(std::map<std::string, std::string> extra = {}) {
  GatewayOptions o;
  o.env = {{"PAINTLOCK_VISITOR_KEY", kVisitorKey},
           {"PAINTLOCK_LICENSE_SECRET", kLicenseSecret},
           {"PAINTLOCK_HTTP_THREADS", "64"}};
  for (auto& [k, v] : extra) o.env[k] = v;
  return o;
}

Reply Consume(const std::string& base, const std::string& quota = "downloads",
              const httplib::Headers& headers = {}, const std::string& body = "") {
  return Request(base, "POST", "/v1/quotas/" + quota + "/consume", body, "application/json",
                 headers);
}

Reply ConsumeAs(const std::string& base, const std::string& subject,
                const std::string& quota = "downloads") {
  return Consume(base, quota, ApiKeyHeader(), json{{"subject", subject}}.dump());
}

std::string QuotaUsed(TestDatabase& db, const std::string& where = "true") {
  return db.Scalar("SELECT coalesce(sum(used), 0) FROM quota_usage WHERE " + where);
}

json SubscriptionEvent(const std::string& event_id, const std::string& type,
                       const std::string& subscription, const std::string& status,
                       std::int64_t created, std::int64_t period_end = 0) {
  json object = {{"id", subscription},
                 {"object", "subscription"},
                 {"customer", "cus_" + subscription.substr(4)},
                 {"status", status}};
  if (period_end) object["current_period_end"] = period_end;
  return {{"id", event_id},     {"object", "event"}, {"type", type},
          {"created", created}, {"livemode", false}, {"data", {{"object", object}}}};
}

Reply Deliver(const std::string& base, const json& event) {
  const std::string body = event.dump();
  httplib::Headers h = {{"Stripe-Signature", paintlock::webhooks::SignatureHeader(
                                                 kWebhookSecret, std::time(nullptr), body)}};
  return Request(base, "POST", "/v1/webhooks/stripe", body, "application/json", h);
}

std::string KeyOf(const std::string& subscription) {
  return paintlock::locks::DeriveLicenseKey(kLicenseSecret, subscription);
}

// Sends `total` consume requests from `threads` keep-alive clients released
// at once, spread over `bases`; request j is made by thread j % threads with
// the headers and body `request(j)` gives, and its answer goes to done(j, …).
struct Post {
  httplib::Headers headers;
  std::string body;
};
void Hammer(const std::vector<std::string>& bases, int threads, int total,
            const std::function<Post(int)>& request,
            const std::function<void(int, const Reply&)>& done) {
  RunConcurrently(threads, [&](int t) {
    httplib::Client client(bases[t % bases.size()]);
    client.set_keep_alive(true);
    client.set_read_timeout(30, 0);
    for (int j = t; j < total; j += threads) {
      const Post p = request(j);
      auto res = client.Post("/v1/quotas/downloads/consume", p.headers, p.body, "application/json");
      Reply r;
      if (res) {
        r.status = res->status;
        r.body = res->body;
        r.headers = res->headers;
        r.json = json::parse(res->body, nullptr, false);
      }
      done(j, r);
    }
  });
}

const std::int64_t kNow = static_cast<std::int64_t>(std::time(nullptr));
const std::int64_t kInThirtyDays = kNow + 30 * 86400;

}  // namespace

TEST_CASE(
    "quota: twelve requests at once from one visitor: exactly five allowed, seven refused, the "
    "count at five") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway());

  OutcomeTally tally;
  std::vector<Reply> replies(12);
  RunConcurrently(12, [&](int i) { replies[i] = Consume(gw.base()); });
  std::vector<int> used;
  for (const auto& r : replies) {
    tally.Add(ConsumeOutcome(r), r);
    if (r.status == 200) used.push_back(r.json["used"]);
    if (r.status == 429) {
      CHECK(r.json["used"] == 5);
      CHECK(r.json["limit"] == 5);
      CHECK(std::stoi(r.Header("Retry-After")) > 0);
      CHECK(r.json["message"].get<std::string>().find("midnight (UTC)") != std::string::npos);
    }
  }
  CHECK(tally.granted() == 5);
  CHECK(tally.refused() == 7);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  std::sort(used.begin(), used.end());
  CHECK(used == std::vector<int>{1, 2, 3, 4, 5});  // each allowed request saw its own count
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "1");
  CHECK(QuotaUsed(db) == "5");
  // The raw address is never stored: the subject is a keyed hash.
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage WHERE subject LIKE '%127.0.0.1%'") == "0");
  CHECK(gw.LogUpToNow().find("127.0.0.1\"") == std::string::npos);
  CheckInvariants(db);
}

TEST_CASE("quota: two gateways sharing the visitor key count one visitor once") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway one(db, stripe.base(), QuotaGateway());
  Gateway two(db, stripe.base(), QuotaGateway());
  OutcomeTally tally;
  RunConcurrently(12, [&](int i) {
    const Reply r = Consume(i % 2 ? one.base() : two.base());
    tally.Add(ConsumeOutcome(r), r);
  });
  CHECK(tally.granted() == 5);
  CHECK(tally.refused() == 7);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "1");
  CHECK(QuotaUsed(db) == "5");
}

TEST_CASE(
    "quota: a hundred visitors behind a trusted proxy, twelve requests each at once: five each") {
  TestDatabase db;
  FakeStripe stripe;
  auto options = QuotaGateway({{"PAINTLOCK_TRUSTED_PROXIES", "127.0.0.1"},
                               {"PAINTLOCK_HTTP_THREADS", "160"},
                               {"PAINTLOCK_DB_POOL", "16"}});
  Gateway one(db, stripe.base(), options);
  Gateway two(db, stripe.base(), options);
  constexpr int kVisitors = 100, kEach = 12, kThreads = 120;
  std::vector<std::unique_ptr<OutcomeTally>> tallies;
  for (int v = 0; v < kVisitors; ++v) tallies.push_back(std::make_unique<OutcomeTally>());
  std::atomic<int> no_answer{0};
  // Request j is visitor j % 100: each visitor's twelve requests run on six
  // threads, through both gateways.
  Hammer(
      {one.base(), two.base()}, kThreads, kVisitors * kEach,
      [&](int j) {
        return Post{{{"X-Forwarded-For", "203.0.113." + std::to_string(j % kVisitors)}}, ""};
      },
      [&](int j, const Reply& r) {
        if (r.status == 0) ++no_answer;
        tallies[j % kVisitors]->Add(ConsumeOutcome(r), r);
      });
  CHECK(no_answer == 0);
  int exact = 0;
  for (int v = 0; v < kVisitors; ++v) {
    if (tallies[v]->granted() == 5 && tallies[v]->refused() == 7 && tallies[v]->other() == 0) {
      ++exact;
    }
  }
  CHECK(exact == kVisitors);
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "100");
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage WHERE used = 5") == "100");
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage WHERE subject LIKE '%203.0.113%'") == "0");
}

TEST_CASE(
    "quota: a server-to-server caller names its subjects, each counted apart from the caller") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway());
  std::vector<std::unique_ptr<OutcomeTally>> tallies;
  for (int s = 0; s < 10; ++s) tallies.push_back(std::make_unique<OutcomeTally>());
  Hammer(
      {gw.base()}, 40, 80,
      [](int j) {
        httplib::Headers h = ApiKeyHeader();
        return Post{h, json{{"subject", "user-" + std::to_string(j % 10)}}.dump()};
      },
      [&](int j, const Reply& r) { tallies[j % 10]->Add(ConsumeOutcome(r), r); });
  for (const auto& t : tallies) {
    CHECK(t->granted() == 5);
    CHECK(t->refused() == 3);
  }
  CHECK(
      db.Scalar("SELECT count(*) FROM quota_usage WHERE subject = 'subject:user-3' AND used = 5") ==
      "1");
  // The caller's own address still has its whole quota.
  Reply own = Consume(gw.base());
  CHECK(own.status == 200);
  CHECK(own.json["used"] == 1);
}

TEST_CASE(
    "quota: a refused request is not counted, and a new day resets the count with no job having "
    "run") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway());
  for (int i = 1; i <= 5; ++i) {
    Reply r = Consume(gw.base());
    REQUIRE(r.status == 200);
    CHECK(r.json["used"] == i);
    CHECK(r.json["remaining"] == 5 - i);
  }
  const std::string resets_at = db.Scalar(
      "SELECT paintlock_rfc3339(((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE "
      "'UTC')");
  for (int i = 0; i < 3; ++i) {
    Reply r = Consume(gw.base());
    CHECK(r.status == 429);
    CHECK(r.json["used"] == 5);
    CHECK(r.json["resets_at"] == resets_at);
  }
  CHECK(QuotaUsed(db) == "5");
  const std::string last_at = db.Scalar("SELECT last_at FROM quota_usage");

  Reply usage = Request(gw.base(), "GET", "/v1/quotas/downloads");
  CHECK(usage.status == 200);
  CHECK(usage.json["used"] == 5);
  CHECK(usage.json["remaining"] == 0);
  CHECK(db.Scalar("SELECT last_at FROM quota_usage") == last_at);  // refusals wrote nothing

  // Yesterday's row: nothing but the stored day changes.
  db.Exec("UPDATE quota_usage SET day = day - 1");
  CHECK(Request(gw.base(), "GET", "/v1/quotas/downloads").json["used"] == 0);
  Reply fresh = Consume(gw.base());
  CHECK(fresh.status == 200);
  CHECK(fresh.json["used"] == 1);
  CHECK(QuotaUsed(db) == "1");
  CHECK(db.Scalar("SELECT day = (now() AT TIME ZONE 'UTC')::date FROM quota_usage") == "t");
  CheckInvariants(db);
}

TEST_CASE("quota: each quota's day is its own time zone's day") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(
      db, stripe.base(),
      QuotaGateway({{"PAINTLOCK_QUOTAS", "east:3:Pacific/Kiritimati,west:3:Pacific/Pago_Pago"}}));
  for (const char* zone : {"Pacific/Kiritimati", "Pacific/Pago_Pago"}) {
    const std::string quota = std::string(zone) == "Pacific/Kiritimati" ? "east" : "west";
    Reply r = Consume(gw.base(), quota);
    REQUIRE(r.status == 200);
    const std::string z = std::string("'") + zone + "'";
    CHECK(r.json["resets_at"] == db.Scalar("SELECT paintlock_rfc3339(((now() AT TIME ZONE " + z +
                                           ")::date + 1)::timestamp AT TIME ZONE " + z + ")"));
    CHECK(db.Scalar("SELECT day = (now() AT TIME ZONE " + z +
                    ")::date FROM quota_usage WHERE quota = '" + quota + "'") == "t");
  }
  // UTC+14 and UTC-11 are 25 hours apart: never on the same calendar day.
  CHECK(db.Scalar("SELECT (SELECT day FROM quota_usage WHERE quota = 'east') > "
                  "(SELECT day FROM quota_usage WHERE quota = 'west')") == "t");
  Reply other = Consume(gw.base(), "downloads");
  CHECK(other.status == 404);
  CHECK(other.json["code"] == "quota_not_found");
  CHECK(other.json["quotas"] == json({"east", "west"}));
}

TEST_CASE("quota: a quota with limit 0 is for licence holders only") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway({{"PAINTLOCK_QUOTAS", "downloads:5:UTC,hd:0:UTC"}}));
  Reply r = Consume(gw.base(), "hd");
  CHECK(r.status == 429);
  CHECK(r.json["used"] == 0);
  CHECK(r.json["message"].get<std::string>().find("licence holders only") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "0");
  REQUIRE(Deliver(gw.base(), SubscriptionEvent("evt_hd", "customer.subscription.created", "sub_hd",
                                               "active", kNow, kInThirtyDays))
              .status == 200);
  Reply licensed = Consume(gw.base(), "hd", {{"X-License-Key", KeyOf("sub_hd")}});
  CHECK(licensed.status == 200);
  CHECK(licensed.json["licensed"] == true);
}

TEST_CASE(
    "quota: a subscriber is never refused or counted, and after cancellation the key stops within "
    "the cache bound") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway({{"PAINTLOCK_LICENSE_CACHE_SECONDS", "1"}}));
  const std::string sub = "sub_Pro1";
  const std::string key = KeyOf(sub);

  // Not yet a licence: the key is refused and nothing is counted.
  Reply early = Consume(gw.base(), "downloads", {{"X-License-Key", key}});
  CHECK(early.status == 401);
  CHECK(early.json["code"] == "license_invalid");

  Reply created = Deliver(gw.base(), SubscriptionEvent("evt_c1", "customer.subscription.created",
                                                       sub, "active", kNow - 10, kInThirtyDays));
  REQUIRE(created.status == 200);
  CHECK(created.json["outcome"] == "created");
  CHECK(db.Scalar("SELECT key_sha256 FROM licenses") == paintlock::locks::LicenseKeyDigest(key));
  CHECK(db.Scalar("SELECT count(*) FROM licenses WHERE key_sha256 LIKE '%" + key.substr(4, 12) +
                  "%'") == "0");

  // The negative answer above may be cached for up to 1 s.
  REQUIRE(Eventually(
      [&] {
        Reply r = Request(gw.base(), "GET", "/v1/licenses/" + key);
        return r.status == 200 && r.json["valid"] == true;
      },
      std::chrono::milliseconds(5000)));
  OutcomeTally tally;
  RunConcurrently(20, [&](int i) {
    httplib::Headers h = i % 2 ? httplib::Headers{{"X-License-Key", key}}
                               : httplib::Headers{{"Authorization", "License " + key}};
    Reply r = Consume(gw.base(), "downloads", h);
    if (r.status == 200) CHECK(r.json["licensed"] == true);
    tally.Add(ConsumeOutcome(r), r);
  });
  CHECK(tally.granted() == 20);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "0");
  Reply header_check = Request(gw.base(), "GET", "/v1/license", "", "", {{"X-License-Key", key}});
  CHECK(header_check.status == 200);
  CHECK(header_check.json["valid"] == true);
  CHECK(header_check.json["status"] == "active");

  Reply deleted = Deliver(gw.base(), SubscriptionEvent("evt_d1", "customer.subscription.deleted",
                                                       sub, "canceled", kNow, kInThirtyDays));
  REQUIRE(deleted.status == 200);
  CHECK(deleted.json["outcome"] == "updated");
  const auto t0 = std::chrono::steady_clock::now();
  const bool stopped = Eventually(
      [&] {
        Reply r = Request(gw.base(), "GET", "/v1/licenses/" + key);
        return r.status == 200 && r.json["valid"] == false;
      },
      std::chrono::milliseconds(1000 + 4000));  // the bound, plus slack for a loaded machine
  CHECK(stopped);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(5000));
  Reply after = Request(gw.base(), "GET", "/v1/licenses/" + key);
  CHECK(after.json["status"] == "canceled");

  Reply refused = Consume(gw.base(), "downloads", {{"X-License-Key", key}});
  CHECK(refused.status == 403);
  CHECK(refused.json["code"] == "license_inactive");
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "0");
  // Without the key, the former subscriber has the free quota like anyone.
  CHECK(Consume(gw.base()).json["used"] == 1);
}

TEST_CASE(
    "quota: subscription events applied twice or in any order leave the licence as in order") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway());
  // In order: created incomplete, activated in the same second, a failed
  // renewal, then paid with a new period end.
  struct Step {
    const char* type;
    const char* status;
    std::int64_t created, period_end;
  };
  const std::vector<Step> steps = {
      {"customer.subscription.created", "incomplete", kNow - 100, kNow + 1000},
      {"customer.subscription.updated", "active", kNow - 100, kNow + 1000},
      {"customer.subscription.updated", "past_due", kNow - 50, kNow + 1000},
      {"customer.subscription.updated", "active", kNow - 10, kInThirtyDays}};
  std::vector<int> order = {0, 1, 2, 3};
  int permutation = 0;
  do {
    const std::string sub = "sub_perm" + std::to_string(permutation);
    for (int i : order) {
      const Step& s = steps[i];
      json event =
          SubscriptionEvent("evt_p" + std::to_string(permutation) + "_" + std::to_string(i), s.type,
                            sub, s.status, s.created, s.period_end);
      REQUIRE(Deliver(gw.base(), event).status == 200);
      Reply again = Deliver(gw.base(), event);  // Stripe delivers at least once
      CHECK(again.json["outcome"] == "duplicate");
    }
    CHECK(db.Scalar(
              "SELECT status || ' ' || extract(epoch FROM current_period_end)::bigint || ' ' || "
              "updated_from_event_id FROM licenses WHERE subscription_id = '" +
              sub + "'") == "active " + std::to_string(kInThirtyDays) + " evt_p" +
                                std::to_string(permutation) + "_3");
    ++permutation;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(permutation == 24);

  // A cancellation is final, whatever arrives after it and however it is stamped.
  REQUIRE(Deliver(gw.base(), SubscriptionEvent("evt_x1", "customer.subscription.deleted",
                                               "sub_gone", "canceled", kNow - 500))
              .status == 200);
  Reply late = Deliver(gw.base(), SubscriptionEvent("evt_x2", "customer.subscription.updated",
                                                    "sub_gone", "active", kNow, kInThirtyDays));
  CHECK(late.json["outcome"] == "stale");
  CHECK(db.Scalar("SELECT status FROM licenses WHERE subscription_id = 'sub_gone'") == "canceled");
  Reply gone = Request(gw.base(), "GET", "/v1/licenses/" + KeyOf("sub_gone"));
  CHECK(gone.status == 200);
  CHECK(gone.json["valid"] == false);
  CHECK(db.Scalar("SELECT count(*) FROM stripe_events WHERE subscription_id IS NOT NULL") ==
        std::to_string(24 * 4 + 2));
  CHECK(db.Scalar("SELECT count(*) FROM stripe_events WHERE outcome = 'applying'") == "0");
  CheckInvariants(db);
}

TEST_CASE("quota: bad input gets a clear 4xx and changes nothing") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway());
  auto expect = [&](const Reply& r, int status, const std::string& code) {
    CHECK_MESSAGE(r.status == status, r.body);
    REQUIRE(r.json.is_object());
    if (!code.empty()) CHECK_MESSAGE(r.json.value("code", "") == code, r.body);
    CHECK(!r.json.value("message", "").empty());
  };
  expect(Consume(gw.base(), "uploads"), 404, "quota_not_found");
  expect(Consume(gw.base(), "Downloads"), 404, "quota_not_found");
  expect(Request(gw.base(), "GET", "/v1/quotas/uploads"), 404, "quota_not_found");
  // Naming a subject needs the API key; a wrong key is never ignored.
  expect(Consume(gw.base(), "downloads", {}, R"({"subject": "alice"})"), 401, "unauthorized");
  expect(Consume(gw.base(), "downloads", {{"Authorization", "Bearer wrong-key-0123456789"}}), 401,
         "unauthorized");
  expect(Request(gw.base(), "GET", "/v1/quotas/downloads?subject=alice"), 401, "unauthorized");
  for (const char* body : {R"({"subject": ""})", R"({"subject": "tab\there"})", R"({"subject": 7})",
                           R"({"subjet": "typo"})", "[]", "{oops"}) {
    expect(Consume(gw.base(), "downloads", ApiKeyHeader(), body), 400, "invalid_request");
  }
  expect(ConsumeAs(gw.base(), std::string(129, 'x')), 400, "invalid_request");
  expect(Request(gw.base(), "POST", "/v1/quotas/downloads/consume", R"({"subject": "a"})",
                 "text/plain", ApiKeyHeader()),
         415, "unsupported_media_type");
  // Forged, malformed and duplicated licence keys.
  expect(Consume(gw.base(), "downloads", {{"X-License-Key", "plk_" + std::string(64, 'f')}}), 401,
         "license_invalid");
  expect(Consume(gw.base(), "downloads", {{"Authorization", "License not-a-key"}}), 401,
         "license_invalid");
  expect(
      Consume(gw.base(), "downloads",
              {{"Authorization", "License " + KeyOf("sub_a")}, {"X-License-Key", KeyOf("sub_b")}}),
      400, "invalid_request");
  expect(Request(gw.base(), "GET", "/v1/licenses/plk_" + std::string(64, 'f')), 404,
         "license_not_found");
  expect(Request(gw.base(), "GET", "/v1/licenses/nonsense"), 404, "license_not_found");
  expect(Request(gw.base(), "GET", "/v1/license"), 401, "license_missing");
  // Oversized headers and bodies.
  expect(Consume(gw.base(), "downloads", {{"X-License-Key", std::string(300, 'k')}}), 431,
         "header_too_large");
  expect(Consume(gw.base(), "downloads", {{"Authorization", "Bearer " + std::string(2000, 'k')}}),
         431, "header_too_large");
  expect(Consume(gw.base(), "downloads", {{"X-Padding", std::string(20000, 'p')}}), 431,
         "headers_too_large");  // the whole header section is over PAINTLOCK_MAX_HEADER_BYTES
  expect(Consume(gw.base(), "downloads", ApiKeyHeader(),
                 "{\"subject\": \"" + std::string(2000, 'x') + "\"}"),
         413, "request_too_large");
  expect(Consume(gw.base(), "downloads", {}, std::string(200 * 1024, ' ')), 413, "");

  CHECK(db.Scalar("SELECT count(*) FROM quota_usage") == "0");
  CHECK(db.Scalar("SELECT count(*) FROM licenses") == "0");
  // Still served after all that.
  CHECK(Consume(gw.base()).status == 200);
}

TEST_CASE(
    "quota: subscription webhooks are verified, and refused for retry without a licence secret") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway without(db, stripe.base(), QuotaGateway({{"PAINTLOCK_LICENSE_SECRET", ""}}));
  json event =
      SubscriptionEvent("evt_n1", "customer.subscription.created", "sub_n1", "active", kNow);
  Reply r = Deliver(without.base(), event);
  CHECK(r.status == 503);
  CHECK(r.json["code"] == "licenses_not_configured");
  CHECK(db.Scalar("SELECT count(*) FROM stripe_events") == "0");  // so Stripe's retry applies it

  Gateway with(db, stripe.base(), QuotaGateway());
  const std::string body = event.dump();
  Reply forged = Request(
      with.base(), "POST", "/v1/webhooks/stripe", body, "application/json",
      {{"Stripe-Signature", paintlock::webhooks::SignatureHeader("whsec_wrong", kNow, body)}});
  CHECK(forged.status == 400);
  CHECK(db.Scalar("SELECT count(*) FROM licenses") == "0");
  json broken = event;
  broken["data"]["object"].erase("customer");
  CHECK(Deliver(with.base(), broken).status == 400);
  CHECK(Deliver(with.base(), event).json["outcome"] == "created");
}

TEST_CASE("quota: a bad quota configuration stops the gateway at start-up with a clear message") {
  TestDatabase db;
  auto start = [&](const std::string& quotas) {
    auto p = std::make_unique<Process>(
        "gateway", std::vector<std::string>{BuildDir() + "/paintlock"},
        std::map<std::string, std::string>{{"DATABASE_URL", db.url()},
                                           {"PAINTLOCK_LISTEN", "127.0.0.1:0"},
                                           {"STRIPE_SECRET_KEY", kStripeKey},
                                           {"PAINTLOCK_QUOTAS", quotas}});
    CHECK(p->Wait() == 2);
    return p->Log();
  };
  const std::string syntax = start("downloads:many:UTC");
  CHECK(syntax.find("PAINTLOCK_QUOTAS: downloads: the limit must be a whole number") !=
        std::string::npos);
  const std::string zone = start("downloads:5:Europe/Pariss");
  CHECK(zone.find("PAINTLOCK_QUOTAS: the database knows no time zone \"Europe/Pariss\"") !=
        std::string::npos);
}

namespace {

struct CtlResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  json json_output;    // stdout parsed, when it is JSON
};

CtlResult Ctl(const TestDatabase& db, const std::vector<std::string>& args,
              std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv = {BuildDir() + "/paintlockctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  env.emplace("DATABASE_URL", db.url());
  Process p("paintlockctl", argv, env);
  CtlResult r;
  r.exit_code = p.Wait();
  r.output = p.Log();
  r.json_output = json::parse(r.output, nullptr, false);
  return r;
}

}  // namespace

TEST_CASE(
    "quota: paintlockctl shows and resets a subject's count, and lists licences with their keys") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), QuotaGateway());
  for (int i = 0; i < 3; ++i) REQUIRE(ConsumeAs(gw.base(), "user-7").status == 200);
  REQUIRE(Consume(gw.base()).status == 200);

  CtlResult shown = Ctl(db, {"quota", "show", "downloads", "user-7", "--json"});
  CHECK(shown.exit_code == 0);
  REQUIRE_MESSAGE(shown.json_output.is_object(), shown.output);
  CHECK(shown.json_output["used"] == 3);
  CHECK(shown.json_output["remaining"] == 2);
  CHECK(shown.json_output["subject"] == "subject:user-7");
  // The visitor at an address, hashed with the gateways' key.
  CtlResult by_ip = Ctl(db, {"quota", "show", "downloads", "ip:127.0.0.1", "--json"},
                        {{"PAINTLOCK_VISITOR_KEY", kVisitorKey}});
  CHECK(by_ip.exit_code == 0);
  CHECK(by_ip.json_output["used"] == 1);
  CtlResult table = Ctl(db, {"quota", "show", "downloads", "subject:user-7"});
  CHECK(table.exit_code == 0);
  CHECK(table.output.find("3 of 5") != std::string::npos);

  CtlResult reset =
      Ctl(db, {"quota", "reset", "downloads", "user-7", "--reason", "support ticket 12"});
  CHECK_MESSAGE(reset.exit_code == 0, reset.output);
  CHECK(reset.output.find("3 used today") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM quota_usage WHERE subject = 'subject:user-7'") == "0");
  CHECK(db.Scalar("SELECT reason FROM audit_log WHERE action = 'quota_reset'") ==
        "support ticket 12");
  CHECK(ConsumeAs(gw.base(), "user-7").json["used"] == 1);

  CHECK(Ctl(db, {"quota", "show", "uploads", "user-7"}).exit_code == 2);
  CHECK(Ctl(db, {"quota", "show", "downloads"}).exit_code == 2);
  CHECK(Ctl(db, {"quota", "show", "downloads", "visitor:nothex"}).exit_code == 2);
  CHECK(Ctl(db, {"quota", "show", "downloads", "ip:127.0.0.1"}).exit_code == 1);  // no visitor key
  CHECK(Ctl(db, {"quota", "reset", "downloads", "user-7", "--bogus"}).exit_code == 2);
  CtlResult help = Ctl(db, {"quota", "reset", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("Usage: paintlockctl quota reset") != std::string::npos);

  REQUIRE(Deliver(gw.base(), SubscriptionEvent("evt_l1", "customer.subscription.created",
                                               "sub_Ctl1", "active", kNow, kInThirtyDays))
              .status == 200);
  CtlResult listed = Ctl(db, {"licenses", "--json"});
  CHECK(listed.exit_code == 0);
  REQUIRE_MESSAGE(listed.json_output.is_object(), listed.output);
  CHECK(listed.json_output["count"] == 1);
  CHECK(listed.json_output["active"] == 1);
  CHECK(listed.json_output["licenses"][0]["subscription_id"] == "sub_Ctl1");
  CHECK(!listed.json_output["licenses"][0].contains("key"));
  CHECK(listed.output.find(KeyOf("sub_Ctl1")) == std::string::npos);

  CtlResult keys = Ctl(db, {"licenses", "--keys"}, {{"PAINTLOCK_LICENSE_SECRET", kLicenseSecret}});
  CHECK(keys.exit_code == 0);
  CHECK(keys.output.find(KeyOf("sub_Ctl1")) != std::string::npos);
  CHECK(keys.output.find("1 licence, 1 active") != std::string::npos);
  CtlResult rolled = Ctl(db, {"licenses", "--keys", "--json"},
                         {{"PAINTLOCK_LICENSE_SECRET", std::string(kLicenseSecret) + "-new"}});
  CHECK(rolled.json_output["licenses"][0]["key_matches_secret"] == false);
  CHECK(Ctl(db, {"licenses", "--keys"}).exit_code == 1);  // no secret
  CHECK(Ctl(db, {"licenses", "extra"}).exit_code == 2);
  CHECK(Ctl(db, {"licenses", "--customer", "cus_other"}).output.find("no licences") !=
        std::string::npos);
}
