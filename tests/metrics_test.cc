// GET /metrics through the real gateway, PostgreSQL and the fake Stripe:
// what traffic is counted, how the endpoint is protected, and that
// Prometheus's own checker (promtool, Debian's prometheus package) accepts a
// scrape taken after a realistic mix of traffic.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

// Sample lines of a scrape: the series (name and labels, as written) → value.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

std::optional<double> Value(const std::map<std::string, double>& samples,
                            const std::string& series) {
  auto it = samples.find(series);
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

Reply Scrape(const std::string& base) {
  Reply r = Request(base, "GET", "/metrics", "", "", ApiKeyHeader());
  REQUIRE(r.status == 200);
  CHECK(r.Header("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  return r;
}

// `promtool check metrics` on `text`: its exit code and what it printed.
CompletedProcess Promtool(const std::string& text) {
  const std::string path =
      BuildDir() + "/test-logs/metrics-scrape-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << text;
  return RunToCompletion({"/bin/sh", "-c", "promtool check metrics < '" + path + "'"}, {});
}

constexpr const char* kApiKeyMetrics = "api-key";

// The series of paintlock_http_requests_total for one route, method and status.
std::string Http(const std::string& route, const std::string& method, const std::string& status) {
  return "paintlock_http_requests_total{route=\"" + route + "\",method=\"" + method +
         "\",status=\"" + status + "\"}";
}

}  // namespace

TEST_CASE("metrics: a scrape after traffic counts it by route, outcome and endpoint") {
  TestDatabase db;
  Shop shop(db, {{"PAINTLOCK_METRICS", kApiKeyMetrics}});
  const std::string base = shop.gateway.base();

  // Stripe fails the first session create once: the client retries it.
  shop.stripe.Control("POST", "/_test/faults",
                      {{"fail_next", 1}, {"status", 500}, {"path_prefix", "/v1/checkout/"}});
  Reply bought = PostJson(base, "/v1/checkout", {{"paintings", {"p1"}}});
  REQUIRE(bought.status == 201);
  Reply refused = PostJson(base, "/v1/checkout", {{"paintings", {"p1", "p2"}}});
  REQUIRE(refused.status == 409);
  CHECK(refused.json["code"] == "painting_reserved");
  CHECK(PostJson(base, "/v1/checkout", {{"paintings", {"p999"}}}).status == 404);
  CHECK(Request(base, "GET", "/v1/paintings/p2").status == 200);
  CHECK(Request(base, "GET", "/v1/paintings/p3").status == 200);
  CHECK(Request(base, "GET", "/no/such/route").status == 404);
  CHECK(Request(base, "POST", "/v1/webhooks/stripe", R"({"type":"x"})", "application/json",
                {{"Stripe-Signature", "t=1,v1=00"}})
            .status == 400);

  // Before the payment: the hold is live.
  auto before = Samples(Scrape(base).body);
  CHECK(Value(before, R"(paintlock_holds{condition="live",stuck="false"})") == 1);
  CHECK(Value(before, "paintlock_holds_read_ok") == 1);

  const json sessions = shop.stripe.Sessions();
  REQUIRE(sessions.size() == 1);
  shop.stripe.Control("POST", "/_test/sessions/" + sessions[0]["id"].get<std::string>() + "/pay",
                      {{"payment_status", "paid"}});
  const std::string completed =
      R"(paintlock_webhook_events_total{type="checkout.session.completed",outcome="sold"})";
  std::map<std::string, double> s;
  CHECK(Eventually([&] {
    s = Samples(Scrape(base).body);
    return Value(s, completed) == 1;
  }));

  CHECK(Value(s, "paintlock_reservations_granted_total") == 1);
  CHECK(Value(s, R"(paintlock_reservations_refused_total{reason="painting_reserved"})") == 1);
  // An unknown painting is refused by the catalogue read, before any reservation attempt.
  CHECK(Value(s, R"(paintlock_reservations_refused_total{reason="painting_unknown"})") == 0);
  CHECK(Value(s, R"(paintlock_reservations_refused_total{reason="painting_sold"})") == 0);

  CHECK(Value(s, Http("/v1/checkout", "POST", "201")) == 1);
  CHECK(Value(s, Http("/v1/checkout", "POST", "409")) == 1);
  CHECK(Value(s, Http("/v1/paintings/{}", "GET", "200")) == 2);
  CHECK(Value(s, Http("unmatched", "GET", "404")) == 1);
  CHECK(
      Value(
          s,
          R"(paintlock_http_request_duration_seconds_count{route="/v1/checkout",method="POST"})") ==
      3);
  CHECK(
      Value(
          s,
          R"(paintlock_http_request_duration_seconds_bucket{route="/v1/checkout",method="POST",le="+Inf"})") ==
      3);
  for (const auto& sample : s) {  // (no structured binding: doctest's CHECK captures it)
    CHECK_MESSAGE(sample.first.find("p2") == std::string::npos, sample.first);  // never a raw path
  }

  CHECK(Value(s, completed) == 1);
  CHECK(Value(s,
              R"(paintlock_webhook_events_total{type="unverified",outcome="invalid_signature"})") ==
        1);

  CHECK(
      Value(
          s,
          R"(paintlock_stripe_requests_total{endpoint="POST /v1/checkout/sessions",status="500"})") ==
      1);
  CHECK(
      Value(
          s,
          R"(paintlock_stripe_requests_total{endpoint="POST /v1/checkout/sessions",status="200"})") ==
      1);
  CHECK(Value(s, R"(paintlock_stripe_retries_total{endpoint="POST /v1/checkout/sessions"})") == 1);
  CHECK(
      Value(
          s,
          R"(paintlock_stripe_request_duration_seconds_count{endpoint="POST /v1/checkout/sessions"})") ==
      2);

  CHECK(Value(s, "paintlock_db_pool_size") == 8);  // the harness's PAINTLOCK_DB_POOL
  CHECK(Value(s, "paintlock_db_pool_waiting") == 0);
  CHECK(Value(s, R"(paintlock_db_pool_connections{state="in_use"})") >= 0);
  CHECK(Value(s, "paintlock_availability_streams_open") == 0);
  CHECK(Value(s, "paintlock_offline_checkouts_total") == 0);
  CHECK(Value(s, R"(paintlock_late_payments_total{outcome="accepted"})") == 0);
  CHECK(Value(s, R"(paintlock_late_payments_total{outcome="refunded"})") == 0);
  CheckInvariants(db);
}

TEST_CASE("metrics: requests the reactor answers count under the routes a worker's would") {
  TestDatabase db;
  constexpr int kAsyncConnections = 8;
  Gateway gw(db, kNoStripe,
             {{{"PAINTLOCK_METRICS", kApiKeyMetrics},
               {"PAINTLOCK_RATE_LIMITS", "api:5:0.001"},
               {"PAINTLOCK_DB_ASYNC_CONNECTIONS", std::to_string(kAsyncConnections)}}});
  const std::string base = gw.base();
  // A connection still being set up shows the statement it is preparing, which may be the
  // reserve's: count only once all of them have prepared every statement.
  REQUIRE(Eventually([&] {
    return Value(Samples(Scrape(base).body), "paintlock_db_async_ready") == kAsyncConnections;
  }));
  // Without an Idempotency-Key the reactor answers; with one, a worker.
  REQUIRE(PostJson(base, "/v1/reservations", {{"paintings", {"p1"}}}, ApiKeyHeader()).status ==
          201);
  CHECK(db.Scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND application_name = 'paintlock-async' "
                  "AND query LIKE '%paintlock_reserve_on_sale%'") == "1");
  httplib::Headers keyed = ApiKeyHeader();
  keyed.emplace("Idempotency-Key", "metrics-worker-reserve");
  REQUIRE(PostJson(base, "/v1/reservations", {{"paintings", {"p2"}}}, keyed).status == 201);
  REQUIRE(PostJson(base, "/v1/ratelimits/api:caller/take", json::object(), ApiKeyHeader()).status ==
          200);

  const auto s = Samples(Scrape(base).body);
  CHECK(Value(s, Http("/v1/reservations", "POST", "201")) == 2);
  CHECK(Value(s, Http("/v1/ratelimits/{}/take", "POST", "200")) == 1);
  CHECK(!Value(s, Http("unmatched", "POST", "201")));
}

TEST_CASE("metrics: requests the edge refuses before any handler are counted by reason") {
  TestDatabase db;
  Gateway gw(db, "http://127.0.0.1:9", {{{"PAINTLOCK_METRICS", kApiKeyMetrics}}});
  const std::string base = gw.base();
  CHECK(Scrape(base).body.find("# TYPE paintlock_edge_refusals_total counter") !=
        std::string::npos);

  // A header section over the 16 KiB limit, and an expectation the edge cannot meet.
  Reply big = Request(base, "GET", "/v1/paintings", "", "", {{"X-Big", std::string(20000, 'a')}});
  CHECK(big.status == 431);
  Reply expect = Request(base, "POST", "/v1/checkout", R"({"paintings":["p1"]})",
                         "application/json", {{"Expect", "202-accepted"}});
  CHECK(expect.status == 417);
  CHECK(Request(base, "GET", "/v1/paintings/p1").status == 200);  // answered: not a refusal

  const auto s = Samples(Scrape(base).body);
  CHECK(Value(s, R"(paintlock_edge_refusals_total{reason="headers_too_large"})") == 1);
  CHECK(Value(s, R"(paintlock_edge_refusals_total{reason="expectation_failed"})") == 1);
  CHECK(Value(s, R"(paintlock_edge_refusals_total{reason="invalid_request"})") == std::nullopt);
  CHECK(Value(s, Http("/v1/paintings/{}", "GET", "200")) == 1);
  CHECK(Value(s, Http("/v1/checkout", "POST", "417")) == std::nullopt);  // no handler saw it
}

TEST_CASE("metrics: off answers 404, api-key refuses a scrape without the key") {
  TestDatabase db;
  FakeStripe stripe;
  {
    Gateway off(db, stripe.base());
    CHECK(Request(off.base(), "GET", "/metrics", "", "", ApiKeyHeader()).status == 404);
  }
  Gateway keyed(db, stripe.base(), {{{"PAINTLOCK_METRICS", kApiKeyMetrics}}});
  Reply anonymous = Request(keyed.base(), "GET", "/metrics");
  CHECK(anonymous.status == 401);
  CHECK(anonymous.json["code"] == "unauthorized");
  CHECK(Request(keyed.base(), "GET", "/metrics", "", "",
                {{"Authorization", "Bearer not-the-key-0123456789"}})
            .status == 401);
  Reply scraped = Scrape(keyed.base());
  CHECK(scraped.body.find("# TYPE paintlock_http_requests_total counter\n") != std::string::npos);
}

TEST_CASE("metrics: listen serves them open on their own address and nowhere else") {
  TestDatabase db;
  FakeStripe stripe;
  const int metrics_port = FreeLoopbackPort();
  const std::string metrics_base = "http://127.0.0.1:" + std::to_string(metrics_port);
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_METRICS", "listen"},
               {"PAINTLOCK_METRICS_LISTEN", "127.0.0.1:" + std::to_string(metrics_port)}}});
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p1").status == 200);
  CHECK(Request(gw.base(), "GET", "/metrics", "", "", ApiKeyHeader()).status == 404);
  Reply open = Request(metrics_base, "GET", "/metrics");
  REQUIRE(open.status == 200);
  CHECK(open.Header("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  auto s = Samples(open.body);
  CHECK(Value(s, Http("/v1/paintings/{}", "GET", "200")) == 1);
  // The gateway's 404 for /metrics is counted; the listener's own scrapes are not.
  CHECK(Value(s, Http("unmatched", "GET", "404")) == 1);
  CHECK(Request(metrics_base, "GET", "/v1/paintings/p1").status == 404);
}

TEST_CASE("metrics: promtool check metrics accepts a scrape after a realistic mix of traffic") {
  TestDatabase db;
  Shop shop(db, {{"PAINTLOCK_METRICS", kApiKeyMetrics}});
  const std::string base = shop.gateway.base();
  // Checkouts (one paid, one refused, one of an unknown painting), the server
  // API (a reservation taken and released), a webhook refused, reads and a 404.
  Reply bought = PostJson(base, "/v1/checkout", {{"paintings", {"p1"}}});
  REQUIRE(bought.status == 201);
  CHECK(PostJson(base, "/v1/checkout", {{"paintings", {"p1"}}}).status == 409);
  CHECK(PostJson(base, "/v1/checkout", {{"paintings", {"p998"}}}).status == 404);
  Reply held = PostJson(base, "/v1/reservations", {{"paintings", {"p2"}}}, ApiKeyHeader());
  REQUIRE(held.status == 201);
  CHECK(Request(base, "DELETE",
                "/v1/reservations/" + held.json["reservation_id"].get<std::string>(), "", "",
                ApiKeyHeader())
            .status == 200);
  CHECK(Request(base, "GET", "/v1/paintings").status == 200);
  CHECK(Request(base, "GET", "/healthz").status == 200);
  CHECK(Request(base, "GET", "/nothing/here").status == 404);
  CHECK(Request(base, "POST", "/v1/webhooks/stripe", "{}", "application/json",
                {{"Stripe-Signature", "t=1,v1=00"}})
            .status == 400);
  const json sessions = shop.stripe.Sessions();
  REQUIRE(sessions.size() == 1);
  shop.stripe.Control("POST", "/_test/sessions/" + sessions[0]["id"].get<std::string>() + "/pay",
                      {{"payment_status", "paid"}});
  std::string text;
  CHECK(Eventually([&] {
    text = Scrape(base).body;
    return text.find(R"(type="checkout.session.completed")") != std::string::npos;
  }));

  const CompletedProcess checked = Promtool(text);
  INFO("promtool said: " << checked.out << checked.err);
  CHECK(checked.exit_code == 0);
  CHECK(text.find("# TYPE paintlock_stripe_request_duration_seconds histogram\n") !=
        std::string::npos);

  // Every metric the shipped alert rules read is one the gateway exports (their
  // own unit tests, `promtool test rules`, run on made-up series of those names).
  std::ifstream rules_file(SourceDir() + "/deploy/prometheus/paintlock-alerts.yml");
  REQUIRE(rules_file);
  const std::string rules((std::istreambuf_iterator<char>(rules_file)),
                          std::istreambuf_iterator<char>());
  const std::regex metric_name(R"(paintlock_[a-z_]+)");
  const std::regex histogram_part(R"(_(bucket|count|sum)$)");
  std::set<std::string> names;
  for (std::sregex_iterator it(rules.begin(), rules.end(), metric_name), end; it != end; ++it) {
    names.insert(std::regex_replace(it->str(), histogram_part, ""));
  }
  CHECK(names.size() >= 10);
  for (const std::string& name : names) {
    CHECK_MESSAGE(text.find("# TYPE " + name + " ") != std::string::npos, name);
  }
  CheckInvariants(db);
}
