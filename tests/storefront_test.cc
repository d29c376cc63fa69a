// The storefront side end to end: CORS on the public endpoints, the
// form-post paths, /paintlock.js, and the live availability stream across two
// gateway processes sharing one database, with real PostgreSQL LISTEN/NOTIFY.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "locks/availability_feed.h"
#include "locks/reservations.h"
#include "tests/support/harness.h"
#include "tests/support/stream_client.h"

using namespace paintlock::testing;
using nlohmann::json;
using std::chrono::milliseconds;
namespace locks = paintlock::locks;

namespace {

constexpr const char* kShop = "https://shop.example";

int OpenStreams(const Gateway& gw) {
  Reply r = Request(gw.base(), "GET", "/readyz");
  return r.json.is_object() && r.json.contains("open_streams") ? r.json["open_streams"].get<int>()
                                                               : -1;
}

httplib::Result Options(const Gateway& gw, const std::string& path,
                        const httplib::Headers& headers) {
  httplib::Client client(gw.base());
  client.set_connection_timeout(5, 0);
  return client.Options(path.c_str(), headers);
}

// A shop: one database, the fake Stripe delivering webhooks to gateway `a`,
// and gateways `a` and `b` on the same database.
struct TwoGateways {
  explicit TwoGateways(std::map<std::string, std::string> env = {})
      : port(FreeLoopbackPort()),
        stripe("http://127.0.0.1:" + std::to_string(port) + "/v1/webhooks/stripe"),
        a(db, stripe.base(), GatewayOptions{env, port}),
        b(db, stripe.base(), GatewayOptions{env, 0}) {}
  TestDatabase db;
  int port;
  FakeStripe stripe;
  Gateway a;
  Gateway b;
};

}  // namespace

TEST_CASE(
    "storefront: CORS: an allowed origin may call the public endpoints, others get no CORS "
    "headers") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_ALLOWED_ORIGINS", std::string(kShop) + ",http://127.0.0.1:3000"}}});

  Reply allowed = Request(gw.base(), "GET", "/v1/paintings", "", "", {{"Origin", kShop}});
  CHECK(allowed.status == 200);
  CHECK(allowed.Header("Access-Control-Allow-Origin") == kShop);
  CHECK(allowed.Header("Vary") == "Origin");

  Reply checkout =
      PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p1"}}}, {{"Origin", kShop}});
  CHECK(checkout.status == 201);
  CHECK(checkout.Header("Access-Control-Allow-Origin") == kShop);
  // A conflict's Retry-After must be readable by the page.
  Reply lost = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p1"}}}, {{"Origin", kShop}});
  CHECK(lost.status == 409);
  CHECK(lost.Header("Access-Control-Allow-Origin") == kShop);
  CHECK(lost.Header("Access-Control-Expose-Headers").find("Retry-After") != std::string::npos);
  CHECK(!lost.Header("Retry-After").empty());

  // Another origin is served (the browser hides the answer), without CORS.
  Reply refused =
      Request(gw.base(), "GET", "/v1/paintings/p2", "", "", {{"Origin", "https://evil.example"}});
  CHECK(refused.status == 200);
  CHECK(refused.Header("Access-Control-Allow-Origin").empty());
  // Private endpoints never get CORS headers, whatever the origin.
  httplib::Headers with_key = ApiKeyHeader();
  with_key.emplace("Origin", kShop);
  Reply private_api = Request(
      gw.base(), "GET", "/v1/reservations/" + checkout.json["reservation_id"].get<std::string>(),
      "", "", with_key);
  CHECK(private_api.status == 200);
  CHECK(private_api.Header("Access-Control-Allow-Origin").empty());

  SUBCASE("preflight from an allowed origin") {
    auto r = Options(gw, "/v1/checkout",
                     {{"Origin", "http://127.0.0.1:3000"},
                      {"Access-Control-Request-Method", "POST"},
                      {"Access-Control-Request-Headers", "content-type"}});
    REQUIRE(r);
    CHECK(r->status == 204);
    CHECK(r->get_header_value("Access-Control-Allow-Origin") == "http://127.0.0.1:3000");
    CHECK(r->get_header_value("Access-Control-Allow-Methods") == "POST, OPTIONS");
    CHECK(r->get_header_value("Access-Control-Allow-Headers").find("Content-Type") !=
          std::string::npos);
    CHECK(!r->get_header_value("X-Request-Id").empty());
  }
  SUBCASE("preflight from another origin is refused") {
    auto r =
        Options(gw, "/v1/paintings/stream",
                {{"Origin", "https://evil.example"}, {"Access-Control-Request-Method", "GET"}});
    REQUIRE(r);
    CHECK(r->status == 403);
    json body = json::parse(r->body);
    CHECK(body["code"] == "origin_not_allowed");
    CHECK(body["message"].get<std::string>().find("PAINTLOCK_ALLOWED_ORIGINS") !=
          std::string::npos);
    CHECK(r->get_header_value("Access-Control-Allow-Origin").empty());
  }
  SUBCASE("the stream and the script carry CORS too") {
    StreamClient stream(gw.port(), std::string("Origin: ") + kShop + "\r\n");
    CHECK(stream.Status() == 200);
    CHECK(stream.head().find(std::string("Access-Control-Allow-Origin: ") + kShop) !=
          std::string::npos);
    Reply script = Request(gw.base(), "GET", "/paintlock.js", "", "", {{"Origin", kShop}});
    CHECK(script.status == 200);
    CHECK(script.Header("Access-Control-Allow-Origin") == kShop);
  }
  CheckInvariants(db);
}

TEST_CASE(
    "storefront: /paintlock.js is the compiled-in script, cacheable and revalidated by ETag") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  Reply r = Request(gw.base(), "GET", "/paintlock.js");
  REQUIRE(r.status == 200);
  CHECK(r.Header("Content-Type") == "text/javascript; charset=utf-8");
  CHECK(r.Header("Cache-Control") == "public, max-age=300");
  CHECK(r.body.find("data-paintlock-painting") != std::string::npos);
  const std::string etag = r.Header("ETag");
  REQUIRE(etag.size() == 18);
  Reply again = Request(gw.base(), "GET", "/paintlock.js", "", "", {{"If-None-Match", etag}});
  CHECK(again.status == 304);
  CHECK(again.body.empty());
}

TEST_CASE(
    "storefront: form posts: 303 to Stripe, the HTML page on a conflict, or "
    "PAINTLOCK_UNAVAILABLE_URL") {
  TestDatabase db;
  FakeStripe stripe;
  const std::string form = "application/x-www-form-urlencoded";
  SUBCASE("without an unavailable URL: a readable page") {
    Gateway gw(db, stripe.base());
    Reply won = Request(gw.base(), "POST", "/v1/checkout", "painting=p4", form);
    CHECK(won.status == 303);
    CHECK(won.Header("Location").rfind(stripe.base() + "/pay/cs_", 0) == 0);
    Reply lost = Request(gw.base(), "POST", "/v1/checkout", "painting=p4", form);
    CHECK(lost.status == 409);
    CHECK(lost.Header("Content-Type").rfind("text/html", 0) == 0);
    CHECK(lost.body.find("data-code=\"painting_reserved\"") != std::string::npos);
    CHECK(lost.body.find("will be free again at") != std::string::npos);
  }
  SUBCASE("with an unavailable URL: 303 there, with painting, code and free_at") {
    Gateway gw(db, stripe.base(),
               {{{"PAINTLOCK_UNAVAILABLE_URL", "https://shop.example/taken?lang=en"}}});
    Reply won = Request(gw.base(), "POST", "/v1/checkout", "painting=p4", form);
    CHECK(won.status == 303);
    CHECK(won.Header("Location").rfind(stripe.base() + "/pay/cs_", 0) == 0);
    const std::string free_at = db.Scalar(
        "SELECT paintlock_rfc3339(held_until) FROM painting_locks WHERE painting_id = 'p4'");

    Reply lost = Request(gw.base(), "POST", "/v1/checkout", "painting=p4&painting=p5", form);
    CHECK(lost.status == 303);
    // The gateway sends free_at=…T14%3A05%3A09Z; httplib's client decodes Location.
    CHECK(lost.Header("Location") ==
          "https://shop.example/taken?lang=en&painting=p4&code=painting_reserved&free_at=" +
              free_at);

    db.Exec("UPDATE paintings SET sold_at = now() WHERE id = 'p6'");
    Reply sold = Request(gw.base(), "POST", "/v1/checkout", "painting=p6", form);
    CHECK(sold.status == 303);
    CHECK(sold.Header("Location") ==
          "https://shop.example/taken?lang=en&painting=p6&code=painting_sold");

    // Not a conflict: the page, as before (the shop's page is for taken paintings).
    Reply bad = Request(gw.base(), "POST", "/v1/checkout", "painting=nope!", form);
    CHECK(bad.status == 400);
    // JSON callers are never redirected.
    Reply json_lost = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p4"}}});
    CHECK(json_lost.status == 409);
    CHECK(json_lost.json["code"] == "painting_reserved");
  }
  CheckInvariants(db);
}

TEST_CASE("storefront: a change made through one gateway reaches the stream clients of another") {
  TwoGateways shop(std::map<std::string, std::string>{{"PAINTLOCK_STREAM_HEARTBEAT_SECONDS", "1"}});
  StreamClient on_b(shop.b.port());
  REQUIRE(on_b.Status() == 200);
  CHECK(on_b.head().find("Content-Type: text/event-stream") != std::string::npos);
  // First everything: all twelve paintings of the sample catalogue.
  const auto snapshot = on_b.WaitForSnapshot(12);
  REQUIRE(snapshot.size() == 12);
  for (int i = 1; i <= 12; ++i) CHECK(snapshot.at("p" + std::to_string(i)) == "available");
  StreamClient on_a(shop.a.port());
  REQUIRE(on_a.WaitForSnapshot(12).size() == 12);

  Reply started = PostJson(shop.a.base(), "/v1/checkout", {{"paintings", {"p7"}}});
  REQUIRE(started.status == 201);
  auto reserved = on_b.WaitFor("p7", "reserved");
  REQUIRE(reserved);
  CHECK(reserved->Json()["free_at"] == started.json["held_until"]);
  REQUIRE(on_a.WaitFor("p7", "reserved"));

  // The buyer pays: the webhook reaches gateway a, the stream of b says sold.
  const std::string session = shop.stripe.Sessions()[0]["id"];
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/pay", {{"payment_status", "paid"}});
  auto sold = on_b.WaitFor("p7", "sold");
  REQUIRE(sold);
  CHECK_FALSE(sold->Json().contains("free_at"));
  // Only p7 ever changed after the first twelve.
  size_t painting_events = 0;
  for (const auto& e : on_b.events()) {
    if (e.event != "painting") continue;
    ++painting_events;
    if (painting_events > 12) CHECK(e.Json()["id"] == "p7");
  }
  CHECK(painting_events == 14);
  CheckInvariants(shop.db);
}

TEST_CASE("storefront: a new stream gets every painting of a large catalogue once, then changes") {
  TestDatabase db;
  // 3,000 more paintings: about 300 KB owed to the stream. Nobody watched
  // when the gateway started, so the board waits for its first read and the
  // reactor pushes all of it, in slices (Pushed::Next): each painting once.
  db.Exec(
      "INSERT INTO paintings (id, title, price_minor, currency) "
      "SELECT 'big-' || i, 'Big ' || i, 1000, 'eur' FROM generate_series(1, 3000) i");
  const size_t all = std::stoul(db.Scalar("SELECT count(*) FROM paintings"));
  REQUIRE(all == 3012);
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  StreamClient stream(gw.port());
  REQUIRE(stream.Status() == 200);
  const auto snapshot = stream.WaitForSnapshot(all);
  REQUIRE(snapshot.size() == all);
  CHECK(snapshot.at("big-1") == "available");
  CHECK(snapshot.at("big-3000") == "available");
  CHECK(snapshot.at("p12") == "available");
  // Then only what changes.
  REQUIRE(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"big-2999"}}}).status == 201);
  REQUIRE(stream.WaitFor("big-2999", "reserved"));
  size_t painting_events = 0;
  for (const auto& e : stream.events()) painting_events += e.event == "painting" ? 1 : 0;
  CHECK(painting_events == all + 1);
}

TEST_CASE(
    "storefront: a lapsed hold shows as available with no write, scheduled from the database "
    "clock") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"PAINTLOCK_HOLD_SECONDS", "2"}}});
  StreamClient client(gw.port());
  REQUIRE(client.WaitForSnapshot(12).at("p5") == "available");
  Reply held = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p5"}}}, ApiKeyHeader());
  REQUIRE(held.status == 201);
  REQUIRE(client.WaitFor("p5", "reserved"));
  REQUIRE(client.WaitFor("p5", "available", milliseconds(15000)));
  // Nothing was written: the reservation still says held, the lock names it.
  const std::string id = held.json["reservation_id"];
  CHECK(db.Scalar("SELECT state FROM reservations WHERE id = '" + id + "'") == "held");
  CHECK(db.Scalar("SELECT holder FROM painting_locks WHERE painting_id = 'p5'") == id);
  CheckInvariants(db);
}

TEST_CASE(
    "storefront: Last-Event-ID: a reconnect gets what changed since, an unknown id everything") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  std::string last_id;
  {
    StreamClient first(gw.port());
    int seen = 0;
    REQUIRE(first.WaitFor([&](const SseEvent& e) {
      if (e.event == "painting") last_id = e.id;
      return e.event == "painting" && ++seen == 12;
    }));
  }
  REQUIRE(!last_id.empty());
  REQUIRE(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p3"}}}).status == 201);

  StreamClient resumed(gw.port(), "Last-Event-ID: " + last_id + "\r\n");
  auto first_event = resumed.WaitFor([](const SseEvent& e) { return e.event == "painting"; });
  REQUIRE(first_event);
  CHECK(first_event->Is("p3", "reserved"));

  StreamClient stranger(gw.port(), "Last-Event-ID: 0123456789ab-3\r\n");
  auto everything = stranger.WaitFor([](const SseEvent& e) { return e.event == "painting"; });
  REQUIRE(everything);
  REQUIRE(stranger.WaitFor("p3", "reserved"));
  int paintings = 0;
  for (const auto& e : stranger.events()) paintings += e.event == "painting";
  CHECK(paintings == 12);
  CheckInvariants(db);
}

TEST_CASE(
    "storefront: streams are bounded, send heartbeats, and clients that vanish leak nothing") {
  TestDatabase db;
  FakeStripe stripe;
  constexpr int kMax = 40;
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_MAX_STREAMS", std::to_string(kMax)},
               {"PAINTLOCK_STREAM_HEARTBEAT_SECONDS", "1"},
               {"PAINTLOCK_HTTP_THREADS", "4"}}});
  {
    std::vector<std::unique_ptr<StreamClient>> open;
    for (int i = 0; i < kMax; ++i) {
      open.push_back(std::make_unique<StreamClient>(gw.port()));
      REQUIRE(open.back()->Status() == 200);
    }
    CHECK(OpenStreams(gw) == kMax);
    StreamClient fifth(gw.port());
    CHECK(fifth.Status() == 503);
    CHECK(fifth.WholeBody().find("\"code\":\"too_many_streams\"") != std::string::npos);
    CHECK(fifth.head().find("Retry-After: 10") != std::string::npos);
    // Idle streams get a comment line now and then, which is also how a
    // vanished client is found.
    CHECK(open[0]->WaitFor([](const SseEvent& e) { return e.comment; }, milliseconds(5000)));
    // Streams have threads of their own: ordinary requests are still served.
    CHECK(Request(gw.base(), "GET", "/v1/paintings").status == 200);
  }  // all of them vanish at once
  CHECK(Eventually([&] { return OpenStreams(gw) == 0; }, milliseconds(15000)));

  // As many again, dropped in every way: before a byte was read, after the
  // headers, after the snapshot; while events are flowing.
  {
    std::vector<std::unique_ptr<StreamClient>> clients;
    for (int i = 0; i < kMax; ++i) {
      clients.push_back(std::make_unique<StreamClient>(gw.port()));
      if (i % 3 == 1) CHECK(clients.back()->Status() == 200);
      if (i % 3 == 2) CHECK(clients.back()->WaitFor("p9", "available"));
      if (i % 4 == 0) clients.back()->Drop();
    }
    REQUIRE(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p1"}}}).status == 201);
  }
  CHECK(Eventually([&] { return OpenStreams(gw) == 0; }, milliseconds(15000)));
  // And the slots are usable again.
  StreamClient again(gw.port());
  CHECK(again.Status() == 200);
  CHECK(again.WaitFor("p1", "reserved"));
  // Info lines reach the log within 100 ms (base/log.h), not at once.
  CHECK(Eventually([&] { return !gw.process().Events("stream_closed").empty(); }));
}

TEST_CASE("storefront: the listener reconnects when its database connection is killed") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  StreamClient client(gw.port());
  REQUIRE(client.WaitForSnapshot(12).at("p2") == "available");
  REQUIRE(Eventually([&] {
    return db.Scalar(
               "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
               "'paintlock-availability' "
               "AND datname = current_database()") == "1";
  }));
  const std::string before = db.Scalar(
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'paintlock-availability' "
      "AND datname = current_database()");
  db.Exec("SELECT pg_terminate_backend(" + before + ")");
  REQUIRE(Eventually([&] {
    const std::string now = db.Scalar(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'paintlock-availability' "
        "AND datname = current_database()");
    return !now.empty() && now != before;
  }));
  // The stream stayed open across it, and changes flow again.
  REQUIRE(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p2"}}}).status == 201);
  CHECK(client.WaitFor("p2", "reserved"));
  // The log's writer thread writes lines after the fact (base/log.cc): awaited.
  CHECK(Eventually(
      [&] { return gw.process().Log().find("availability_listener_lost") != std::string::npos; }));
}

TEST_CASE("storefront: a change whose publish was lost reaches the stream at the next full read") {
  // A write straight to the database publishes nothing, like a writer that
  // died between its commit and its publish.
  TestDatabase db;
  FakeStripe stripe;
  constexpr int kFullReadSeconds = 2;
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_AVAILABILITY_FULL_READ_SECONDS", std::to_string(kFullReadSeconds)}}});
  StreamClient client(gw.port());
  REQUIRE(client.WaitForSnapshot(12).at("p11") == "available");
  db.Exec("UPDATE paintings SET sold_at = now() WHERE id = 'p11'");
  // Within one full-read interval (and a margin for the read itself).
  CHECK(client.WaitFor("p11", "sold", milliseconds(kFullReadSeconds * 1000 + 3000)));
}

namespace {

// Painting ids notified on paintlock_availability, as a gateway's feed gets them.
class Notified final : public pqxx::notification_receiver {
 public:
  explicit Notified(pqxx::connection_base& c)
      : pqxx::notification_receiver(c, "paintlock_availability") {}
  void operator()(const std::string& payload, int) override { ids.push_back(payload); }
  std::vector<std::string> ids;
};

}  // namespace

TEST_CASE("storefront: a reserve commit notifies nobody, the store publishes after it") {
  TestDatabase db;
  pqxx::connection listening(db.url());
  Notified notified(listening);
  // The reserve statement alone, as pgbench runs it: it commits a hold and
  // sends nothing.
  db.Exec("SELECT * FROM paintlock_reserve(ARRAY['p4'], interval '1 minute', NULL)");
  REQUIRE(db.Scalar("SELECT state FROM painting_states WHERE id = 'p4'") == "reserved");
  listening.await_notification(1, 0);
  CHECK(notified.ids.empty());

  // Through the store, the publisher sends the painting after the commit.
  std::string error;
  auto database = locks::Database::Open({db.url()}, &error);
  REQUIRE(database);
  locks::ReservationStore store(*database, std::chrono::seconds(60));
  REQUIRE(std::holds_alternative<locks::Granted>(store.Reserve({"p5"}, std::nullopt)));
  CHECK(Eventually([&] {
    listening.await_notification(0, 100000);
    return notified.ids == std::vector<std::string>{"p5"};
  }));
}

TEST_CASE(
    "storefront: the feed reads what is notified meanwhile together, one read a read interval at "
    "most") {
  TestDatabase db;
  locks::AvailabilityFeedOptions options;
  options.database.url = db.url();
  options.read_interval = milliseconds(1000);
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::vector<Clock::time_point> read_at;  // guarded by mu
  std::set<std::string> read_again;        // guarded by mu: the partial reads' paintings
  locks::AvailabilityFeed feed(options, [&](const std::vector<locks::PaintingAvailability>& read) {
    std::lock_guard<std::mutex> lock(mu);
    if (!read_at.empty()) {
      for (const auto& a : read) read_again.insert(a.painting);
    }
    read_at.push_back(Clock::now());
  });
  const auto reads = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return read_at.size();
  };
  feed.Start();
  REQUIRE(Eventually([&] { return reads() == 1; }));  // every painting, on connecting

  // Six publishes, 100 ms apart: read one by one, they would be 100 ms apart.
  const std::set<std::string> published = {"p1", "p2", "p3", "p4", "p5", "p6"};
  for (const std::string& id : published) {
    db.Exec("SELECT pg_notify('paintlock_availability', '" + id + "')");
    std::this_thread::sleep_for(milliseconds(100));
  }
  CHECK(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return read_again == published;
  }));
  feed.Stop();

  std::lock_guard<std::mutex> lock(mu);
  for (size_t i = 1; i < read_at.size(); ++i) {
    // The feed starts reads a read interval apart; a read's own time may
    // shorten the gap its sink sees, never by half of it.
    CHECK(read_at[i] - read_at[i - 1] >= milliseconds(500));
  }
}

TEST_CASE(
    "storefront: the feed neither listens nor reads while nobody watches, and reads everything "
    "first when watched again") {
  TestDatabase db;
  locks::AvailabilityFeedOptions options;
  options.database.url = db.url();
  options.idle_after = milliseconds(200);
  std::atomic<bool> watched{false};
  std::mutex mu;
  std::vector<std::set<std::string>> reads;  // guarded by mu: each read's paintings
  std::vector<bool> told;                    // guarded by mu: the feed's current() calls
  locks::AvailabilityFeed feed(
      options,
      [&](const std::vector<locks::PaintingAvailability>& read) {
        std::set<std::string> ids;
        for (const auto& a : read) ids.insert(a.painting);
        std::lock_guard<std::mutex> lock(mu);
        reads.push_back(std::move(ids));
      },
      [&] { return watched.load(); },
      [&](bool current) {
        std::lock_guard<std::mutex> lock(mu);
        told.push_back(current);
      });
  const auto told_is = [&](std::vector<bool> expected) {
    return Eventually([&] {
      std::lock_guard<std::mutex> lock(mu);
      return told == expected;
    });
  };
  const auto notify = [&](const std::string& id) {
    db.Exec("SELECT pg_notify('paintlock_availability', '" + id + "')");
  };
  feed.Start();

  // Connected with nobody watching: it says the board is not current, and
  // neither listens nor reads. PostgreSQL delivers a notification only to
  // the sessions listening when it commits, so p1's never reaches the feed.
  REQUIRE(told_is({false}));
  notify("p1");

  // Watched: every painting first, then what is notified.
  watched = true;
  feed.Wake();
  REQUIRE(told_is({false, true}));
  {
    std::lock_guard<std::mutex> lock(mu);
    REQUIRE(reads.size() == 1);
    CHECK(reads[0].size() == 12);
  }
  notify("p2");
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return reads.size() == 2 && reads[1] == std::set<std::string>{"p2"};
  }));
  CHECK(feed.NotificationsHeard() == 1);  // p2's, not p1's

  // Nobody watches any more: idle_after later it stops listening (before it
  // says so) and reading. p3's notification never reaches it either.
  watched = false;
  feed.Wake();
  REQUIRE(told_is({false, true, false}));
  notify("p3");

  // Watched again: it listens, and reads every painting first, p3 among them.
  watched = true;
  feed.Wake();
  REQUIRE(told_is({false, true, false, true}));
  notify("p4");
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return reads.size() == 4 && reads[3] == std::set<std::string>{"p4"};
  }));
  feed.Stop();
  std::lock_guard<std::mutex> lock(mu);
  CHECK(reads[2].size() == 12);           // the full read on waking: nothing read while idle
  CHECK(feed.NotificationsHeard() == 2);  // p2's and p4's
}

TEST_CASE(
    "storefront: a stream opened after the gateway stopped reading is told the truth, not the "
    "stale board") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"PAINTLOCK_AVAILABILITY_IDLE_SECONDS", "0"}}});
  {
    StreamClient first(gw.port());
    REQUIRE(first.WaitForSnapshot(12).at("p8") == "available");
  }
  // The last stream closed: the gateway stops reading availability.
  REQUIRE(Eventually(
      [&] { return gw.process().Log().find("availability_feed_idle") != std::string::npos; }));
  // A change nobody reads: it is published, and dropped.
  REQUIRE(PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p8"}}}).status == 201);

  StreamClient second(gw.port());
  auto p8 = second.WaitFor(
      [](const SseEvent& e) { return e.event == "painting" && e.Json()["id"] == "p8"; });
  REQUIRE(p8);
  CHECK(p8->Is("p8", "reserved"));  // its first word on p8, not "available" first
  CheckInvariants(db);
}
