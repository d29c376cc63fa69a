// Integration: the gateway across a PostgreSQL restart, and a checkout whose
// database connection breaks mid-way. The answer a buyer gets must match what
// the database holds.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <pqxx/pqxx>
#include <thread>

#include "tests/support/harness.h"
#include "tests/support/private_cluster.h"

using namespace paintlock::testing;
using std::chrono::milliseconds;

namespace {

// How many lines of the gateway's log are `event` at `level`.
int Lines(const Process& process, const std::string& event, const std::string& level) {
  int n = 0;
  for (const auto& line : process.Events(event)) n += line.value("level", "") == level;
  return n;
}

std::string Backends(TestDatabase& db, const std::string& condition) {
  return db.Scalar(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'paintlock' "
      "AND datname = current_database() AND " +
      condition);
}

// Locks the row of the reservation that includes `painting` in `w`: a write to
// it (the checkout's attach) waits until `w` ends.
void LockReservationOf(pqxx::work& w, const std::string& painting) {
  w.exec(
      "SELECT 1 FROM reservations r JOIN reservation_items i ON i.reservation_id = r.id "
      "WHERE i.painting_id = " +
      w.quote(painting) + " FOR UPDATE OF r");
}

// The one backend of the gateway waiting for a row lock other than `not_pid`;
// "" when there is none.
std::string WaitingBackend(TestDatabase& db, const std::string& not_pid = "0") {
  return db.Scalar(
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'paintlock' "
      "AND datname = current_database() AND wait_event_type = 'Lock' AND pid <> " +
      not_pid + " LIMIT 1");
}

// Joins a thread however the scope ends (a failed REQUIRE throws).
struct Joiner {
  std::thread& t;
  ~Joiner() {
    if (t.joinable()) t.join();
  }
};

}  // namespace

TEST_CASE("db restart: the first 32 requests after a PostgreSQL restart with a full pool succeed") {
  PrivateCluster cluster;
  TestDatabase db;
  FakeStripe stripe;
  // The workers' pool, so the reserves are the workers' (with asynchronous
  // connections the reactor reserves: "reactor routes: … after a restart").
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_DB_POOL", "32"},
               {"PAINTLOCK_DB_ASYNC_CONNECTIONS", "0"},
               {"PAINTLOCK_HTTP_THREADS", "40"},
               {"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "20000"}}});

  // Fill the pool: 32 reservations of one painting queue on its row lock,
  // each on a connection of its own, until the test lets go.
  {
    pqxx::connection blocker(db.url());
    pqxx::work hold(blocker);
    hold.exec("SELECT 1 FROM painting_locks WHERE painting_id = 'p1' FOR UPDATE");
    std::thread crowd([&] {
      RunConcurrently(32, [&](int) {
        PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}}, ApiKeyHeader());
      });
    });
    const bool full = Eventually([&] { return Backends(db, "wait_event_type = 'Lock'") == "32"; },
                                 milliseconds(15000));
    hold.abort();
    crowd.join();
    REQUIRE(full);
  }
  REQUIRE(Backends(db, "true") == "32");

  cluster.Restart();

  // Every pooled connection is dead now. The next 32 requests, at once:
  // eleven reservations (p2..p12) and 21 reads.
  std::vector<Reply> replies(32);
  RunConcurrently(32, [&](int i) {
    if (i < 11) {
      replies[i] = PostJson(gw.base(), "/v1/reservations",
                            {{"paintings", {"p" + std::to_string(i + 2)}}}, ApiKeyHeader());
    } else {
      replies[i] = Request(gw.base(), "GET", "/v1/paintings/p" + std::to_string(i % 12 + 1));
    }
  });
  for (int i = 0; i < 32; ++i) {
    CAPTURE(i);
    CAPTURE(replies[i].body);
    CHECK(replies[i].status == (i < 11 ? 201 : 200));
  }
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE state = 'held' AND id IN "
                  "(SELECT reservation_id FROM reservation_items WHERE painting_id <> 'p1')") ==
        "11");
  CheckInvariants(db);
}

TEST_CASE("db restart: a checkout whose connection breaks while attaching tells the truth") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "20000"}}});
  // Stripe takes its time creating the session: the hold is committed by then.
  stripe.Control("POST", "/_test/faults", {{"delay_next", 1}, {"delay_ms", 1000}});

  // `breaks`: how many times the attach's connection is ended under it.
  auto checkout_with_broken_attach = [&](const std::string& painting, int breaks) {
    Reply reply;
    std::thread buyer([&] {
      reply = PostJson(gw.base(), "/v1/checkout", {{"paintings", {painting}}});
    });
    Joiner joiner{buyer};  // however this lambda ends (a failed REQUIRE throws)
    REQUIRE(Eventually([&] { return db.ReservationsOf(painting) == "1"; }));
    // The attach updates the reservation's row: it waits for this lock.
    pqxx::connection blocker(db.url());
    pqxx::work hold(blocker);
    LockReservationOf(hold, painting);
    std::string ended = "0";
    for (int i = 0; i < breaks; ++i) {
      std::string waiting;
      REQUIRE(Eventually([&] { return !(waiting = WaitingBackend(db, ended)).empty(); }));
      db.Exec("SELECT pg_terminate_backend(" + waiting + ")");
      ended = waiting;
    }
    hold.abort();
    buyer.join();
    return reply;
  };

  SUBCASE("broken once: attached on a fresh connection, the checkout started") {
    Reply reply = checkout_with_broken_attach("p3", 1);
    REQUIRE(reply.status == 201);
    const std::string id = reply.json["reservation_id"];
    CHECK(db.Scalar("SELECT state FROM reservations WHERE id = '" + id + "'") == "held");
    CHECK(db.Scalar("SELECT stripe_session_id FROM reservations WHERE id = '" + id + "'") ==
          stripe.Sessions()[0]["id"].get<std::string>());
  }
  SUBCASE("broken twice: the hold is released, and the buyer is told nothing was reserved") {
    Reply reply = checkout_with_broken_attach("p4", 2);
    CHECK(reply.status == 503);
    CHECK(reply.json["message"].get<std::string>().find("Nothing was reserved") !=
          std::string::npos);
    CHECK(db.HeldOn("p4") == "0");
    CHECK(db.Scalar("SELECT state FROM painting_states WHERE id = 'p4'") == "available");
  }
  CheckInvariants(db);
}

// A failover looks like this to a gateway: every connection dies, and for a few seconds no
// server accepts one. A write whose connection died then must be settled by asking the
// database once it answers again, not answered with a guess.
TEST_CASE(
    "db restart: a checkout whose attach dies with PostgreSQL waits for it, then tells the truth") {
  PrivateCluster cluster;
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "20000"}}});
  // Stripe takes its time creating the session: the hold is committed by then.
  stripe.Control("POST", "/_test/faults", {{"delay_next", 1}, {"delay_ms", 1000}});

  Reply reply;
  std::atomic<bool> answered{false};
  std::thread buyer([&] {
    reply = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p5"}}});
    answered = true;
  });
  Joiner joiner{buyer};
  REQUIRE(Eventually([&] { return db.ReservationsOf("p5") == "1"; }));
  {
    // The attach waits for this row lock, so it is in flight when PostgreSQL stops.
    pqxx::connection blocker(db.url());
    pqxx::work hold(blocker);
    LockReservationOf(hold, "p5");
    REQUIRE(Eventually([&] { return !WaitingBackend(db).empty(); }));
    // A crash: a fast shutdown could end the blocker first and let the attach commit.
    cluster.Stop("immediate");
  }
  // While nothing answers, the gateway keeps asking instead of answering "a hold may remain".
  CHECK(!Eventually([&] { return answered.load(); }, milliseconds(1500)));
  cluster.Start();
  buyer.join();
  CAPTURE(reply.body);
  // The hold was found unattached and released: "nothing was reserved" is now the truth.
  CHECK(reply.status == 503);
  CHECK(reply.json["message"].get<std::string>().find("Nothing was reserved") != std::string::npos);
  CHECK(db.HeldOn("p5") == "0");
  CheckInvariants(db);
  // The reactor's asynchronous connections retried all along; the log says so
  // once, and once that they are back, not at every attempt of each.
  REQUIRE(Eventually([&] { return Lines(gw.process(), "database_connected_again", "info") == 1; }));
  CHECK(Lines(gw.process(), "database_connect_failed", "warn") == 1);
}

// The other way a checkout can be left holding what it cannot give back: Stripe fails, and
// the release that would make "nothing was reserved" true cannot reach the database.
TEST_CASE(
    "db restart: a checkout whose Stripe call fails while PostgreSQL is down says a hold may "
    "remain") {
  PrivateCluster cluster;
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(), {{{"STRIPE_TIMEOUT_MS", "5000"}, {"STRIPE_MAX_RETRIES", "0"}}});
  // Stripe answers after the gateway stopped waiting: a timeout, so no session to attach.
  stripe.Control("POST", "/_test/faults", {{"delay_next", 1}, {"delay_ms", 8000}});

  Reply reply;
  std::thread buyer([&] { reply = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p7"}}}); });
  Joiner joiner{buyer};
  REQUIRE(Eventually([&] { return db.ReservationsOf("p7") == "1"; }));
  cluster.Stop();  // while the gateway waits for Stripe, with the hold committed
  buyer.join();
  cluster.Start();
  CAPTURE(reply.body);
  CHECK(reply.status == 503);
  CHECK(reply.json["code"] == "outcome_unknown");
  CHECK(reply.json["message"].get<std::string>().find("may be held") != std::string::npos);
  // The hold is there: "nothing was reserved" would have been the lie.
  CHECK(db.HeldOn("p7") == "1");
  CheckInvariants(db);
}
