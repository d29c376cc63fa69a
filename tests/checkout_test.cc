// POST /v1/checkout end to end: gateway + real PostgreSQL + the fake Stripe
// over HTTP, so the gateway's real Stripe client code runs.
#include <doctest/doctest.h>

#include <csignal>
#include <ctime>
#include <pqxx/pqxx>
#include <thread>

#include "tests/support/harness.h"
#include "tests/support/raw_client.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

Reply Checkout(const Gateway& gw, const json& paintings) {
  return PostJson(gw.base(), "/v1/checkout", {{"paintings", paintings}});
}

json CreateRequests(FakeStripe& stripe) {
  json out = json::array();
  for (const auto& r : stripe.Requests()) {
    if (r["method"] == "POST" && r["path"] == "/v1/checkout/sessions") out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("checkout creates a Stripe session priced from the catalogue") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  // A price in the request is ignored: prices come from the catalogue only.
  Reply r = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p2", "p1"}}, {"price_minor", 1}});
  REQUIRE(r.status == 201);
  const std::string id = r.json["reservation_id"];
  const std::string url = r.json["checkout_url"];
  CHECK(url.rfind(stripe.base() + "/pay/", 0) == 0);

  json sessions = stripe.Sessions();
  REQUIRE(sessions.size() == 1);
  const json& s = sessions[0];
  CHECK(s["url"] == url);
  CHECK(s["amount_total"] == 42000 + 18500);
  CHECK(s["currency"] == "eur");
  CHECK(s["client_reference_id"] == id);
  CHECK(s["metadata"]["reservation_id"] == id);
  CHECK(s["mode"] == "payment");
  CHECK(s["expires_at"].get<long long>() >= static_cast<long long>(std::time(nullptr)) + 30 * 60);
  CHECK(s["success_url"].get<std::string>().find(
            "/v1/checkout/success?session_id={CHECKOUT_SESSION_ID}") != std::string::npos);
  json detail =
      Request(stripe.base(), "GET",
              "/v1/checkout/sessions/" + s["id"].get<std::string>() + "?expand[]=line_items", "",
              "", {{"Authorization", std::string("Bearer ") + kStripeKey}})
          .json;
  REQUIRE(detail["line_items"]["data"].size() == 2);
  // The Idempotency-Key of the create is the reservation id.
  json creates = CreateRequests(stripe);
  REQUIRE(creates.size() == 1);
  CHECK(creates[0]["idempotency_key"] == id);

  Reply got = Request(gw.base(), "GET", "/v1/reservations/" + id, "", "", ApiKeyHeader());
  CHECK(got.json["stripe_session_id"] == s["id"]);
  CHECK(got.json["held_until"] == r.json["held_until"]);
  CheckInvariants(db);
}

TEST_CASE("an HTML form post is redirected to the Stripe page") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  Reply r = Request(gw.base(), "POST", "/v1/checkout", "painting=p6&painting=p7",
                    "application/x-www-form-urlencoded");
  CHECK(r.status == 303);
  json sessions = stripe.Sessions();
  REQUIRE(sessions.size() == 1);
  CHECK(r.Header("Location") == sessions[0]["url"]);
  CHECK(sessions[0]["amount_total"] == 9500 + 27500);

  // A form post that loses gets a readable page, with the same status.
  Reply lost = Request(gw.base(), "POST", "/v1/checkout", "painting=p7",
                       "application/x-www-form-urlencoded");
  CHECK(lost.status == 409);
  CHECK(lost.Header("Content-Type").find("text/html") == 0);
  CHECK(lost.body.find("being bought") != std::string::npos);
  CheckInvariants(db);
}

TEST_CASE("sold and unknown paintings are refused without a reservation") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  db.Exec("UPDATE paintings SET sold_at = now() WHERE id = 'p9'");
  Reply sold = Checkout(gw, {"p8", "p9"});
  CHECK(sold.status == 409);
  CHECK(sold.json["code"] == "painting_sold");
  CHECK(sold.json["painting"] == "p9");

  db.Exec(
      "UPDATE painting_locks SET sold_until = now() + interval '24 hours' WHERE painting_id = "
      "'p10'");
  CHECK(Checkout(gw, {"p10"}).json["code"] == "painting_sold");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p10").json["state"] == "sold");

  Reply unknown = Checkout(gw, {"p8", "nope"});
  CHECK(unknown.status == 404);
  CHECK(unknown.json["code"] == "painting_not_found");
  CHECK(unknown.json["painting"] == "nope");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/nope").status == 404);

  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "0");
  CHECK(stripe.Sessions().empty());
}

TEST_CASE("bad requests get a clear 4xx and change nothing") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  struct Case {
    const char* what;
    std::string body;
    std::string content_type;
    int status;
    const char* code;
  };
  json hundred_and_one = json::array();
  for (int i = 0; i < 101; ++i) hundred_and_one.push_back("x" + std::to_string(i));
  const std::vector<Case> cases = {
      {"empty cart", R"({"paintings": []})", "application/json", 400, "invalid_request"},
      {"duplicates", R"({"paintings": ["p1", "p1"]})", "application/json", 400, "invalid_request"},
      {"101 items", json{{"paintings", hundred_and_one}}.dump(), "application/json", 400,
       "invalid_request"},
      {"malformed JSON", R"({"paintings": ["p1")", "application/json", 400, "invalid_request"},
      {"not an object", R"(["p1"])", "application/json", 400, "invalid_request"},
      {"paintings not a list", R"({"paintings": "p1"})", "application/json", 400,
       "invalid_request"},
      {"non-string id", R"({"paintings": [1]})", "application/json", 400, "invalid_request"},
      {"bad id", R"({"paintings": ["../etc"]})", "application/json", 400, "invalid_request"},
      {"no paintings field", R"({})", "application/json", 400, "invalid_request"},
      {"empty form", "", "application/x-www-form-urlencoded", 400, "invalid_request"},
      {"bad escape in form", "painting=%zz", "application/x-www-form-urlencoded", 400,
       "invalid_request"},
      {"wrong content type", "p1", "text/plain", 415, "unsupported_media_type"},
      {"huge body", std::string(200 * 1024, 'x'), "application/json", 413, "request_too_large"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    Reply r = Request(gw.base(), "POST", "/v1/checkout", c.body, c.content_type);
    CHECK(r.status == c.status);
    if (c.content_type == "application/x-www-form-urlencoded") {
      CHECK(r.body.find("data-code=\"" + std::string(c.code) + "\"") != std::string::npos);
    } else {
      REQUIRE(r.json.is_object());
      CHECK(r.json["code"] == c.code);
      CHECK(!r.json["message"].get<std::string>().empty());
      CHECK(r.Header("Content-Type").find("application/json") == 0);
    }
  }
  Reply unknown_route = Request(gw.base(), "GET", "/v1/nothing-here");
  CHECK(unknown_route.status == 404);
  CHECK(unknown_route.json["code"] == "not_found");
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "0");
  CHECK(stripe.Sessions().empty());
}

TEST_CASE("Stripe 500s and 429s are retried with one idempotency key: exactly one session") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"STRIPE_MAX_RETRIES", "3"}}});
  stripe.Control("POST", "/_test/faults", {{"fail_next", 2}, {"status", 500}});
  Reply r = Checkout(gw, {"p11"});
  REQUIRE(r.status == 201);
  json creates = CreateRequests(stripe);
  CHECK(creates.size() == 3);
  for (const auto& c : creates) CHECK(c["idempotency_key"] == r.json["reservation_id"]);
  CHECK(stripe.Sessions().size() == 1);

  stripe.Control("POST", "/_test/faults", {{"fail_next", 1}, {"status", 429}});
  Reply limited = Checkout(gw, {"p10"});
  REQUIRE(limited.status == 201);
  creates = CreateRequests(stripe);
  CHECK(creates.size() == 5);
  CHECK(creates[3]["idempotency_key"] == limited.json["reservation_id"]);
  CHECK(creates[4]["idempotency_key"] == limited.json["reservation_id"]);
  CHECK(stripe.Sessions().size() == 2);
  CheckInvariants(db);
}

TEST_CASE("a Stripe timeout is retried with the same key and replays the one session") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"STRIPE_MAX_RETRIES", "6"}, {"STRIPE_TIMEOUT_MS", "600"}}});
  // Stripe does the work but answers too late for the client.
  stripe.Control("POST", "/_test/faults", {{"delay_next", 1}, {"delay_ms", 1500}});
  Reply r = Checkout(gw, {"p12"});
  REQUIRE(r.status == 201);
  json sessions = stripe.Sessions();
  REQUIRE(sessions.size() == 1);
  CHECK(r.json["checkout_url"] == sessions[0]["url"]);
  json creates = CreateRequests(stripe);
  CHECK(creates.size() >= 2);
  for (const auto& c : creates) CHECK(c["idempotency_key"] == r.json["reservation_id"]);
  CheckInvariants(db);
}

TEST_CASE("Stripe down: 503 with Retry-After, the reservation released, the painting free") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"STRIPE_MAX_RETRIES", "2"}}});
  stripe.Control("POST", "/_test/faults", {{"fail_next", 3}, {"status", 503}});
  Reply r = Checkout(gw, {"p3"});
  CHECK(r.status == 503);
  CHECK(r.json["code"] == "stripe_unavailable");
  CHECK(!r.Header("Retry-After").empty());
  CHECK(CreateRequests(stripe).size() == 3);
  CHECK(db.Scalar("SELECT state || ':' || released_reason FROM reservations") ==
        "released:stripe_unavailable");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p3").json["state"] == "available");
  // Stripe is back: the next buyer gets it.
  CHECK(Checkout(gw, {"p3"}).status == 201);
  CheckInvariants(db);
}

TEST_CASE(
    "a buyer who left while the paintings were reserved holds nothing, and no session is made") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  {
    // The reserve waits for this row lock, so it is in flight when the buyer leaves.
    pqxx::connection blocker(db.url());
    pqxx::work hold(blocker);
    hold.exec("SELECT 1 FROM painting_locks WHERE painting_id = 'p5' FOR UPDATE");
    {
      RawClient buyer(gw.port());
      const std::string body = R"({"paintings":["p5"]})";
      REQUIRE(
          buyer.Send("POST /v1/checkout HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body));
      REQUIRE(Eventually([&] { return db.LockWaiters() == "1"; }));
    }  // the buyer closes its connection
    hold.abort();
  }
  // The hold was made, found without a buyer, and released before Stripe was asked.
  REQUIRE(Eventually([&] { return !gw.process().Events("checkout_client_gone").empty(); }));
  CHECK(gw.process().Events("checkout_client_gone")[0].value("released", false));
  CHECK(db.Scalar("SELECT state || ':' || released_reason FROM reservations") ==
        "released:client_gone");
  CHECK(CreateRequests(stripe).empty());
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p5").json["state"] == "available");
  // The next buyer, who stays, gets it at once rather than after the hold.
  CHECK(Checkout(gw, {"p5"}).status == 201);
  CheckInvariants(db);
}

TEST_CASE("Stripe unreachable: 503, nothing held") {
  TestDatabase db;
  Gateway gw(db, "http://127.0.0.1:" + std::to_string(FreeLoopbackPort()),
             {{{"STRIPE_MAX_RETRIES", "1"}}});
  Reply r = Checkout(gw, {"p4"});
  CHECK(r.status == 503);
  CHECK(r.json["code"] == "stripe_unavailable");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p4").json["state"] == "available");
  CheckInvariants(db);
}

TEST_CASE("Stripe refusing the session: 502 stripe_error, the reservation released") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  stripe.Control("POST", "/_test/faults", {{"fail_next", 1}, {"status", 400}});
  Reply r = Checkout(gw, {"p5"});
  CHECK(r.status == 502);
  CHECK(r.json["code"] == "stripe_error");
  CHECK(CreateRequests(stripe).size() == 1);  // a 400 is not retried
  CHECK(db.Scalar("SELECT state || ':' || released_reason FROM reservations") ==
        "released:stripe_error");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p5").json["state"] == "available");
}

TEST_CASE(
    "a reservation that lapses and is taken while Stripe answers: session expired, buyer gets "
    "409") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"STRIPE_TIMEOUT_MS", "10000"}}});
  stripe.Control("POST", "/_test/faults", {{"delay_next", 1}, {"delay_ms", 2500}});
  Reply slow;
  std::thread buyer([&] { slow = Checkout(gw, {"p6"}); });
  // While Stripe is slow, the hold lapses and another caller takes p6.
  REQUIRE(Eventually([&] { return db.Scalar("SELECT count(*) FROM reservations") == "1"; }));
  db.Exec(
      "UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE painting_id = "
      "'p6'");
  Reply other = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p6"}}}, ApiKeyHeader());
  REQUIRE(other.status == 201);
  buyer.join();
  CHECK(slow.status == 409);
  CHECK(slow.json["code"] == "painting_reserved");
  CHECK(slow.json["free_at"] == other.json["held_until"]);
  json sessions = stripe.Sessions();
  REQUIRE(sessions.size() == 1);
  CHECK(sessions[0]["status"] == "expired");
  CheckInvariants(db);
}

TEST_CASE("health and readiness") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  Reply health = Request(gw.base(), "GET", "/healthz");
  CHECK(health.status == 200);
  CHECK(health.Header("X-Request-Id").size() >= 8);
  CHECK(Request(gw.base(), "GET", "/readyz").json["status"] == "ready");
  Reply traced =
      Request(gw.base(), "GET", "/v1/paintings", "", "", {{"X-Request-Id", "trace-me-12345"}});
  CHECK(traced.Header("X-Request-Id") == "trace-me-12345");
  CHECK(traced.json["paintings"].size() == 12);
  // Every log line is a JSON object; the request's lines carry its id.
  CHECK(Eventually([&] {
    return gw.process().Log().find("\"request_id\":\"trace-me-12345\"") != std::string::npos;
  }));
}

TEST_CASE("SIGTERM drains an in-flight request and exits cleanly") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"STRIPE_TIMEOUT_MS", "10000"}}});
  stripe.Control("POST", "/_test/faults", {{"delay_next", 1}, {"delay_ms", 1500}});
  Reply r;
  std::thread buyer([&] { r = Checkout(gw, {"p7"}); });
  REQUIRE(Eventually([&] { return db.Scalar("SELECT count(*) FROM reservations") == "1"; }));
  gw.process().Signal(SIGTERM);
  buyer.join();
  CHECK(r.status == 201);  // answered, not cut off
  CHECK(gw.process().Wait() == 0);
  CHECK(!gw.process().Events("stopped").empty());
}

// httplib's own socket options set SO_REUSEPORT, under which a second server
// binds a taken port and the kernel splits connections between the two: a
// buyer's checkout was once answered by a fake Stripe sharing the gateway's
// port. Our servers bind with SO_REUSEADDR only (base/http_server.h).
TEST_CASE("a port another server listens on: start-up fails and says so, never shares it") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  const std::string taken = "127.0.0.1:" + std::to_string(gw.port());

  Process second("gateway-on-taken-port", {BuildDir() + "/paintlock"},
                 {{"DATABASE_URL", db.url()},
                  {"STRIPE_SECRET_KEY", kStripeKey},
                  {"STRIPE_API_BASE", stripe.base()},
                  {"PAINTLOCK_LISTEN", taken}});
  CHECK(second.Wait() == 1);
  CHECK(second.Log().find("cannot listen on " + taken) != std::string::npos);

  Process fake("fake-stripe-on-taken-port", {BuildDir() + "/fake-stripe", "--listen", taken}, {});
  CHECK(fake.Wait() == 1);
  CHECK(fake.Events("listen_failed").size() == 1);

  CHECK(Request(gw.base(), "GET", "/healthz").status == 200);  // the first one is unharmed
}

TEST_CASE("start-up refuses a bad configuration with one line per problem") {
  TestDatabase db;
  Process p("gateway-bad-config", {BuildDir() + "/paintlock"},
            {{"DATABASE_URL", db.url()},
             {"STRIPE_SECRET_KEY", "pk_live_wrong"},
             {"PAINTLOCK_HOLD_SECONDS", "soon"},
             {"PAINTLOCK_LISTEN", "nowhere"}});
  CHECK(p.Wait() == 2);
  const std::string log = p.Log();
  CHECK(log.find("STRIPE_SECRET_KEY") != std::string::npos);
  CHECK(log.find("PAINTLOCK_HOLD_SECONDS") != std::string::npos);
  CHECK(log.find("PAINTLOCK_LISTEN") != std::string::npos);
  CHECK(log.find("pk_live_wrong") == std::string::npos);  // a secret is named, never echoed
}
