// The lock table under real concurrency: real PostgreSQL, real gateway
// processes, real concurrent HTTP clients.
#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <string>

#include "locks/statements.h"
#include "tests/support/harness.h"
#include "tests/support/raw_client.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

Reply Reserve(const std::string& base, const std::vector<std::string>& paintings) {
  return PostJson(base, "/v1/reservations", {{"paintings", paintings}}, ApiKeyHeader());
}

}  // namespace

TEST_CASE("five buyers at once on one painting: exactly one 201 and four 409s with one free_at") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());

  std::vector<Reply> replies(5);
  RunConcurrently(5, [&](int i) {
    replies[i] = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p1"}}});
  });

  int created = 0, reserved = 0;
  std::set<std::string> free_ats;
  std::string held_until;
  for (const auto& r : replies) {
    if (r.status == 201) {
      ++created;
      held_until = r.json["held_until"];
    } else if (r.status == 409 && r.json["code"] == "painting_reserved") {
      ++reserved;
      free_ats.insert(r.json["free_at"].get<std::string>());
      CHECK(r.json["painting"] == "p1");
      CHECK(std::stoi(r.Header("Retry-After")) > 0);
      CHECK(r.json["message"].get<std::string>().find("being bought") != std::string::npos);
    }
  }
  CHECK(created == 1);
  CHECK(reserved == 4);
  REQUIRE(free_ats.size() == 1);
  CHECK(*free_ats.begin() == held_until);  // "free again" is exactly when the winner's hold ends
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "1");
  CHECK(stripe.Sessions().size() == 1);
  CheckInvariants(db);
}

namespace {

// Carts [A,B] and [B,C] race, round after round, through the given gateways.
void RaceOverlappingCarts(TestDatabase& db, const std::vector<std::string>& bases, int rounds) {
  int both_granted = 0, none_granted = 0, server_errors = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<Reply> replies(2);
    RunConcurrently(2, [&](int i) {
      const std::string& base = bases[(round + i) % bases.size()];
      replies[i] = Reserve(
          base, i == 0 ? std::vector<std::string>{"A", "B"} : std::vector<std::string>{"C", "B"});
    });
    int granted = 0;
    for (const auto& r : replies) {
      if (r.status == 201)
        ++granted;
      else if (r.status != 409)
        ++server_errors;  // a deadlock would surface as 5xx
    }
    if (granted == 2) ++both_granted;
    if (granted == 0) ++none_granted;
    // No partial holds: exactly the winner's paintings are held.
    CHECK(db.Scalar("SELECT count(*) FROM painting_locks l JOIN reservations r ON r.id = l.holder "
                    "WHERE r.state = 'held' AND l.held_until > now()") ==
          std::to_string(granted * 2));
    for (const auto& r : replies) {
      if (r.status == 201) {
        Reply del = Request(bases[0], "DELETE",
                            "/v1/reservations/" + r.json["reservation_id"].get<std::string>(), "",
                            "", ApiKeyHeader());
        REQUIRE(del.status == 200);
      }
    }
  }
  CHECK(both_granted == 0);
  CHECK(none_granted == 0);
  CHECK(server_errors == 0);
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE state = 'held'") == "0");
}

}  // namespace

TEST_CASE("overlapping carts A+B and B+C at once: never both, never a deadlock, no partial holds") {
  TestDatabase db({{"A", 1000}, {"B", 2000}, {"C", 3000}});
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  RaceOverlappingCarts(db, {gw.base()}, 60);
  CheckInvariants(db);
}

TEST_CASE("overlapping carts across two gateway processes on one database") {
  TestDatabase db({{"A", 1000}, {"B", 2000}, {"C", 3000}});
  FakeStripe stripe;
  Gateway one(db, stripe.base());
  Gateway two(db, stripe.base());
  RaceOverlappingCarts(db, {one.base(), two.base()}, 60);
  CheckInvariants(db);
}

TEST_CASE("many buyers on one painting across two gateways: exactly one wins") {
  TestDatabase db({{"hot", 5000}});
  FakeStripe stripe;
  Gateway one(db, stripe.base());
  Gateway two(db, stripe.base());
  std::atomic<int> created{0}, conflicts{0}, other{0};
  RunConcurrently(16, [&](int i) {
    Reply r = Reserve(i % 2 ? one.base() : two.base(), {"hot"});
    if (r.status == 201)
      ++created;
    else if (r.status == 409)
      ++conflicts;
    else
      ++other;
  });
  CHECK(created == 1);
  CHECK(conflicts == 15);
  CHECK(other == 0);
  CheckInvariants(db);
}

TEST_CASE("a lapsed hold is free again with no sweep having run") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  Reply first = Reserve(gw.base(), {"p2", "p3"});
  REQUIRE(first.status == 201);
  const std::string first_id = first.json["reservation_id"];
  CHECK(Reserve(gw.base(), {"p3"}).status == 409);

  // Age the hold in the database: nothing but the clock changes.
  db.Exec("UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE holder = '" +
          first_id + "'");
  db.Exec("UPDATE reservations SET held_until = now() - interval '1 second' WHERE id = '" +
          first_id + "'");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p3").json["state"] == "available");

  Reply second = Reserve(gw.base(), {"p3"});
  CHECK(second.status == 201);
  // The lapsed reservation lost all of its paintings, not just p3.
  Reply old = Request(gw.base(), "GET", "/v1/reservations/" + first_id, "", "", ApiKeyHeader());
  CHECK(old.json["state"] == "released");
  CHECK(old.json["hold_live"] == false);
  CHECK(Reserve(gw.base(), {"p2"}).status == 201);
  CheckInvariants(db);
}

namespace {

// A catalogue and a long history, analysed; then a launch: many live holds
// the statistics do not know of. A state test in WHERE then plans onto the
// partial indexes of live holds, which walks every one of them.
void LaunchAfterLongHistory(TestDatabase& db) {
  db.Exec(
      "INSERT INTO paintings (id, title, price_minor, currency) "
      "SELECT 'h' || i, 'Painting h' || i, 1000, 'eur' FROM generate_series(1, 20000) i");
  db.Exec(
      "INSERT INTO reservations (id, held_until, amount_minor, currency, state, released_reason) "
      "SELECT gen_random_uuid(), now() - interval '1 day', 1000, 'eur', 'released', 'lapsed' "
      "FROM generate_series(1, 20000)");
  db.Exec("ANALYZE");
  db.Exec(
      "INSERT INTO reservations (id, held_until, amount_minor, currency) "
      "SELECT gen_random_uuid(), now() + interval '1 hour', 1000, 'eur' "
      "FROM generate_series(1, 500)");
}

// A new shop: 3,000 paintings, no reservation yet, and statistics that say so.
void OpenShopAnalysed(TestDatabase& db) {
  db.Exec(
      "INSERT INTO paintings (id, title, price_minor, currency) "
      "SELECT 'h' || i, 'Painting h' || i, 1000, 'eur' FROM generate_series(1, 3000) i");
  db.Exec("VACUUM ANALYZE");
}

// The shop gets busy: 2,000 holds, on paintings h101…h2100, that the
// statistics do not know of.
void HoldsArriveUnanalysed(TestDatabase& db) {
  db.Exec(
      "WITH r AS (INSERT INTO reservations (id, held_until, amount_minor, currency) "
      "           SELECT gen_random_uuid(), now() + interval '1 hour', 1000, 'eur' "
      "             FROM generate_series(1, 2000) RETURNING id), "
      "     n AS (SELECT id, 'h' || (100 + row_number() OVER ()) AS painting FROM r), "
      "     i AS (INSERT INTO reservation_items (reservation_id, painting_id, fence, price_minor) "
      "           SELECT id, painting, 1, 1000 FROM n RETURNING 1) "
      "UPDATE painting_locks l SET holder = n.id, held_until = now() + interval '1 hour', "
      "       fence = 1 FROM n WHERE l.painting_id = n.painting");
}

// The index scans the transaction so far made on reservations, by index.
constexpr const char* kReservationScans =
    "SELECT pg_stat_get_xact_numscans('reservations_live'::regclass) AS live, "
    "       pg_stat_get_xact_numscans('reservations_unsettled'::regclass) AS unsettled, "
    "       pg_stat_get_xact_numscans('reservations_pkey'::regclass) AS by_id";

}  // namespace

TEST_CASE(
    "a take-over finds the lapsed holder by its id, not by scanning every live hold, when the "
    "statistics are stale") {
  TestDatabase db;
  LaunchAfterLongHistory(db);
  // p2 and p3 held by a hold that has lapsed.
  const std::string lapsed = db.Scalar(
      "SELECT reservation_id FROM paintlock_reserve_on_sale(ARRAY['p2', 'p3'], "
      "interval '60 seconds', NULL, NULL, NULL) WHERE outcome = 'granted'");
  REQUIRE_FALSE(lapsed.empty());
  db.Exec("UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE holder = '" +
          lapsed + "'");
  db.Exec("UPDATE reservations SET held_until = now() - interval '1 second' WHERE id = '" + lapsed +
          "'");

  // One implicit transaction: the reserve, then its own index-scan counts.
  const pqxx::result r = db.Exec(
      "SELECT outcome FROM paintlock_reserve_on_sale(ARRAY['p3'], interval '60 seconds', NULL, "
      "NULL, NULL); " +
      std::string(kReservationScans));
  CHECK(r[0]["live"].as<long>() == 0);
  CHECK(r[0]["unsettled"].as<long>() == 0);
  CHECK(r[0]["by_id"].as<long>() > 0);
  CHECK(db.Scalar("SELECT state || ' ' || released_reason FROM reservations WHERE id = '" + lapsed +
                  "'") == "released lapsed");
  CHECK(db.Scalar("SELECT count(*) FROM painting_locks l JOIN reservations r ON r.id = l.holder "
                  "WHERE l.painting_id = 'p3' AND r.state = 'held'") == "1");
  CheckInvariants(db);
}

TEST_CASE(
    "whether a reservation holds its paintings, and whether a painting is held, are read by id "
    "when the statistics are stale") {
  TestDatabase db;
  LaunchAfterLongHistory(db);
  const std::string live = db.Scalar(
      "SELECT reservation_id FROM paintlock_reserve_on_sale(ARRAY['p2', 'p3'], "
      "interval '60 seconds', NULL, NULL, NULL) WHERE outcome = 'granted'");
  const std::string gone = db.Scalar(
      "SELECT reservation_id FROM paintlock_reserve_on_sale(ARRAY['p4'], "
      "interval '60 seconds', NULL, NULL, NULL) WHERE outcome = 'granted'");
  REQUIRE_FALSE(live.empty());
  REQUIRE_FALSE(gone.empty());
  db.Exec("SELECT paintlock_release('" + gone + "', 'test', 'test')");

  // Each check in one implicit transaction with its own index-scan counts: no
  // walk over the live holds; a "yes" needed the reservation's state, read by id.
  auto checked = [&](const std::string& check) {
    const pqxx::result r = db.Exec("SELECT " + check + " AS answer; " + kReservationScans);
    const std::string answer = db.Scalar("SELECT " + check);
    CHECK(r[0]["live"].as<long>() == 0);
    CHECK(r[0]["unsettled"].as<long>() == 0);
    if (answer == "t") CHECK(r[0]["by_id"].as<long>() > 0);
    return answer;
  };
  CHECK(checked("paintlock_holds_all('" + live + "')") == "t");
  CHECK(checked("paintlock_holds_all('" + gone + "')") == "f");
  CHECK(checked("paintlock_painting_held('p3')") == "t");
  CHECK(checked("paintlock_painting_held('p4')") == "f");  // released: no holder
  // A lapsed hold holds nothing any more, though the reservation is still live.
  db.Exec("UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE holder = '" +
          live + "'");
  CHECK(checked("paintlock_painting_held('p3')") == "f");
  CHECK(checked("paintlock_holds_all('" + live + "')") == "t");
  CheckInvariants(db);
}

TEST_CASE(
    "a reserve planned while the shop had no reservations does not scan them all once it has "
    "many") {
  TestDatabase db;
  db.Exec(
      "INSERT INTO paintings (id, title, price_minor, currency) "
      "SELECT 'h' || i, 'Painting h' || i, 1000, 'eur' FROM generate_series(1, 3000) i");
  db.Exec("VACUUM ANALYZE reservations");
  db.Exec("VACUUM ANALYZE reservation_items");
  // One connection: one backend, whose plans for the reserve are kept.
  pqxx::connection session(db.url());
  auto reserve = [&](const std::string& painting) {
    ReportStatisticsNow(session);  // the counts below are then this reserve's alone
    pqxx::nontransaction n(session);
    return n.exec("SELECT outcome FROM paintlock_reserve_on_sale(ARRAY['" + painting +
                  "'], interval '60 seconds', NULL, NULL, NULL); "
                  "SELECT pg_stat_get_xact_numscans('reservations'::regclass) AS reservations_seq, "
                  "       pg_stat_get_xact_numscans('painting_locks'::regclass) AS locks_seq, "
                  "       pg_stat_get_xact_tuples_returned('reservations_pkey'::regclass) "
                  "         AS reservations_read_by_id, "
                  "       pg_stat_get_xact_tuples_returned('painting_locks_pkey'::regclass) "
                  "         AS locks_read_by_id, "
                  "       pg_stat_get_xact_tuples_returned('paintings_pkey'::regclass) "
                  "         AS paintings_read_by_id");
  };
  // Enough calls for the plan cache to settle on its plans while empty.
  for (int i = 1; i <= 8; ++i) REQUIRE(reserve("h" + std::to_string(i)).size() == 1);
  HoldsArriveUnanalysed(db);
  for (const std::string painting : {"h20", "h150"}) {  // free, and held by one of them
    const pqxx::result scans = reserve(painting);
    CHECK(scans[0]["reservations_seq"].as<long>() == 0);
    CHECK(scans[0]["locks_seq"].as<long>() == 0);
    // Nor by walking a whole primary key (a full index scan is no seq scan):
    // a walk reads thousands of entries, a reserve by key reads 1-7 of each.
    CHECK(scans[0]["reservations_read_by_id"].as<long>() < 50);
    CHECK(scans[0]["locks_read_by_id"].as<long>() < 50);
    CHECK(scans[0]["paintings_read_by_id"].as<long>() < 50);
  }
  CHECK(db.Scalar("SELECT count(*) FROM painting_locks l JOIN reservations r ON r.id = l.holder "
                  "WHERE l.painting_id = 'h20' AND r.buyer_ref IS NULL AND r.state = 'held'") ==
        "1");
  CheckInvariants(db);
}

TEST_CASE(
    "a session attached, a webhook applied and a hold released read reservations by key after "
    "the shop grew unanalysed") {
  TestDatabase db;
  OpenShopAnalysed(db);
  // One connection: one backend, whose plans are kept. Each call runs more
  // than five times, after which the default plan cache mode keeps a generic plan.
  pqxx::connection session(db.url());
  auto run = [&](const std::string& sql) {
    pqxx::nontransaction n(session);
    return n.exec(sql);
  };
  auto reserve = [&](const std::string& painting) {
    const pqxx::result r =
        run("SELECT reservation_id FROM paintlock_reserve_on_sale(ARRAY['" + painting +
            "'], interval '60 seconds', NULL, NULL, NULL) WHERE outcome = 'granted'");
    REQUIRE(r.size() == 1);
    return r[0][0].as<std::string>();
  };
  auto attach = [&](const std::string& id, const std::string& cs) {
    return "SELECT paintlock_attach_session('" + id + "', '" + cs +
           "', now() + interval '30 minutes')";
  };
  auto paid = [&](const std::string& id, const std::string& cs) {
    return "SELECT * FROM paintlock_apply_session('evt_" + cs +
           "', 'checkout.session.completed', '" + cs + "', '" + id +
           "', 'complete', 'paid', NULL, 'webhook', interval '1 hour')";
  };
  auto release = [&](const std::string& id) {
    return "SELECT paintlock_release('" + id + "', 'test', 'test')";
  };
  for (int i = 1; i <= 14; ++i) {
    const std::string id = reserve("h" + std::to_string(i));
    const std::string cs = "cs_warm_" + std::to_string(i);
    run(attach(id, cs));
    run(i % 2 == 0 ? release(id) : paid(id, cs));
  }
  HoldsArriveUnanalysed(db);
  // Each call with its own reads.
  auto reads = [&](const std::string& call) {
    ReportStatisticsNow(session);
    return run(call +
               "; SELECT pg_stat_get_xact_numscans('reservations'::regclass) AS reservations_seq, "
               "pg_stat_get_xact_numscans('reservation_items'::regclass) AS items_seq, "
               "pg_stat_get_xact_tuples_returned('reservations_pkey'::regclass) AS by_id")[0];
  };
  const std::string sold = reserve("h50");
  const std::string dropped = reserve("h51");
  for (const std::string& call :
       {attach(sold, "cs_sold"), paid(sold, "cs_sold"), release(dropped)}) {
    CAPTURE(call);
    const pqxx::row r = reads(call);
    CHECK(r["reservations_seq"].as<long>() == 0);
    CHECK(r["items_seq"].as<long>() == 0);
    CHECK(r["by_id"].as<long>() < 50);  // by key: 2-7 entries; a walk reads thousands
  }
  CHECK(db.Scalar("SELECT state FROM reservations WHERE id = '" + sold + "'") == "sold");
  CHECK(db.Scalar("SELECT state FROM reservations WHERE id = '" + dropped + "'") == "released");
  CheckInvariants(db);
}

TEST_CASE(
    "a release and an expired session clear their holds through their items, not by reading "
    "every lock") {
  // sql/migrations/0022_release_through_items.sql: painting_locks has no index
  // on holder (it would cost every grant its HOT update).
  TestDatabase db;
  db.Exec(
      "INSERT INTO paintings (id, title, price_minor, currency) "
      "SELECT 'h' || i, 'Painting h' || i, 1000, 'eur' FROM generate_series(1, 3000) i");
  db.Exec("ANALYZE");
  auto reserve = [&](const std::string& cart) {
    const std::string id =
        db.Scalar("SELECT reservation_id FROM paintlock_reserve_on_sale(ARRAY[" + cart +
                  "], interval '60 seconds', NULL, NULL, NULL) "
                  "WHERE outcome = 'granted' LIMIT 1");
    REQUIRE_FALSE(id.empty());
    return id;
  };
  const std::string cancelled = reserve("'h1', 'h2'");
  const std::string expired = reserve("'h3'");
  REQUIRE(db.Scalar("SELECT paintlock_attach_session('" + expired +
                    "', 'cs_expired', now() + interval '30 minutes')") == "t");
  // Each in one implicit transaction with its own count of sequential scans.
  constexpr const char* kLockScans =
      "SELECT pg_stat_get_xact_numscans('painting_locks'::regclass) AS locks_seq";
  CHECK(db.Exec("SELECT paintlock_release('" + cancelled + "', 'cancelled', 'buyer'); " +
                kLockScans)[0]["locks_seq"]
            .as<long>() == 0);
  CHECK(db.Exec("SELECT * FROM paintlock_apply_session('evt_expired', "
                "'checkout.session.expired', 'cs_expired', '" +
                expired + "', 'expired', 'unpaid', NULL, 'webhook', interval '1 hour'); " +
                kLockScans)[0]["locks_seq"]
            .as<long>() == 0);
  CHECK(db.Scalar("SELECT state || ' ' || released_reason FROM reservations WHERE id = '" +
                  cancelled + "'") == "released cancelled");
  CHECK(db.Scalar("SELECT state || ' ' || released_reason FROM reservations WHERE id = '" +
                  expired + "'") == "released session_expired");
  CHECK(db.Scalar("SELECT count(*) FROM painting_locks WHERE holder IS NOT NULL OR held_until IS "
                  "NOT NULL") == "0");
  CheckInvariants(db);
}

TEST_CASE(
    "an availability publish reads the paintings of its reservations by key after the shop grew "
    "unanalysed") {
  TestDatabase db;
  OpenShopAnalysed(db);
  // One connection with the gateway's own statement, named as the publisher's
  // is: after five calls its plan is kept (made here on an empty shop).
  pqxx::connection session(db.url());
  session.prepare("availability_publish", paintlock::locks::NamedQuerySql("availability_publish"));
  for (int i = 1; i <= 8; ++i) {
    pqxx::nontransaction n(session);
    REQUIRE(n.exec_prepared("availability_publish", "{h" + std::to_string(i) + "}", "{}")[0][0]
                .as<long>() == 1);
  }
  HoldsArriveUnanalysed(db);
  const std::string held =
      db.Scalar("SELECT reservation_id FROM reservation_items WHERE painting_id = 'h150'");
  REQUIRE_FALSE(held.empty());
  ReportStatisticsNow(session);
  // The publish and its own reads in one transaction: h1, h2 and the held h150.
  pqxx::work w(session);
  const long sent =
      w.exec_prepared("availability_publish", "{h1,h2}", "{" + held + "}")[0][0].as<long>();
  const pqxx::row reads = w.exec1(
      "SELECT pg_stat_get_xact_numscans('reservation_items'::regclass) AS items_seq, "
      "       pg_stat_get_xact_tuples_returned('reservation_items_pkey'::regclass) AS by_key");
  w.commit();
  CHECK(sent == 3);
  CHECK(reads["items_seq"].as<long>() == 0);
  CHECK(reads["by_key"].as<long>() < 50);  // by key: the reservation's one item; a walk, 2,000
}

TEST_CASE(
    "the availability listener reads a few paintings by key after holds and a line arrived "
    "unanalysed") {
  TestDatabase db;
  OpenShopAnalysed(db);
  pqxx::connection session(db.url());  // one backend: its plan is kept
  const std::string some = paintlock::locks::NamedQuerySql("availability_read_some");
  for (int i = 1; i <= 8; ++i) {
    pqxx::nontransaction n(session);
    REQUIRE(n.exec_params(some, "{h" + std::to_string(i) + "}").size() == 1);
  }
  // The holds leave old versions of the lock rows, and their index entries,
  // that no scan skips while a snapshot may still see them; whether one does
  // depends on what else runs. A reader whose snapshot predates the holds
  // makes it so every time, so the count below does not depend on it.
  pqxx::connection old_reader(db.url());
  pqxx::work old_snapshot(old_reader, "old_snapshot");
  old_snapshot.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  old_snapshot.exec("SELECT count(*) FROM painting_locks");
  HoldsArriveUnanalysed(db);
  db.Exec(  // a drop: 3,000 waiting in the lines of h101…h110
      "INSERT INTO line_entries (painting_id, token_sha256, visitor, claim_window) "
      "SELECT 'h' || (101 + i % 10), md5(i::text) || md5((i + 1)::text), 'v' || i, "
      "interval '60 seconds' FROM generate_series(1, 3000) i");
  ReportStatisticsNow(session);
  pqxx::work w(session);
  const pqxx::result rows = w.exec_params(some, "{h1,h101,h150}");
  const pqxx::row reads = w.exec1(
      "SELECT pg_stat_get_xact_numscans('paintings'::regclass) + "
      "       pg_stat_get_xact_numscans('painting_locks'::regclass) + "
      "       pg_stat_get_xact_numscans('reservations'::regclass) + "
      "       pg_stat_get_xact_numscans('line_entries'::regclass) AS seq, "
      "       pg_stat_get_xact_tuples_returned('paintings_pkey'::regclass) AS paintings, "
      "       pg_stat_get_xact_tuples_returned('painting_locks_pkey'::regclass) AS locks");
  w.commit();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["state"].as<std::string>() == "available");
  CHECK(rows[1]["state"].as<std::string>() == "reserved");
  CHECK(rows[1]["line_length"].as<long>() == 300);
  CHECK(rows[2]["state"].as<std::string>() == "reserved");
  CHECK(reads["seq"].as<long>() == 0);
  CHECK(reads["paintings"].as<long>() < 50);  // by key: a few entries; a walk, 3,000
  // A lock by key for each painting, and in a line's chain one for each of
  // its 300 entries, twice (the length and the places). Each held painting's
  // key has two index entries while the old snapshot lives, its hold and the
  // version before it: 1,205 (606 once nothing older can see the old one). A
  // merge join walking the key instead reads 6,212, with no sequential scan.
  CHECK(reads["locks"].as<long>() < 1500);
  old_snapshot.abort();
}

TEST_CASE("a reservation reports its state and can be released once") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  Reply r = PostJson(gw.base(), "/v1/reservations",
                     {{"paintings", {"p5", "p4"}}, {"buyer", "order-17"}}, ApiKeyHeader());
  REQUIRE(r.status == 201);
  const std::string id = r.json["reservation_id"];
  CHECK(r.Header("Location") == "/v1/reservations/" + id);

  Reply got = Request(gw.base(), "GET", "/v1/reservations/" + id, "", "", ApiKeyHeader());
  CHECK(got.status == 200);
  CHECK(got.json["state"] == "held");
  CHECK(got.json["paintings"] == json({"p4", "p5"}));
  CHECK(got.json["held_until"] == r.json["held_until"]);
  CHECK(got.json["hold_live"] == true);
  CHECK(got.json["amount_minor"] == 39000 + 31000);
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p4").json["state"] == "reserved");

  Reply del = Request(gw.base(), "DELETE", "/v1/reservations/" + id, "", "", ApiKeyHeader());
  CHECK(del.status == 200);
  CHECK(del.json["state"] == "released");
  CHECK(Request(gw.base(), "DELETE", "/v1/reservations/" + id, "", "", ApiKeyHeader())
            .json["state"] == "released");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p4").json["state"] == "available");
  CHECK(db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'release' AND reservation_id = '" +
                  id + "'") == "1");
  CHECK(Request(gw.base(), "GET", "/v1/reservations/00000000-0000-0000-0000-000000000000", "", "",
                ApiKeyHeader())
            .status == 404);
  CHECK(Request(gw.base(), "GET", "/v1/reservations/not-a-uuid", "", "", ApiKeyHeader()).status ==
        404);
  CheckInvariants(db);
}

TEST_CASE(
    "a caller who left while its reservation was made holds nothing, unless its Idempotency-Key "
    "can ask again") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  const std::string body = R"({"paintings":["p5"]})";
  const std::string request =
      std::string("POST /v1/reservations HTTP/1.1\r\nHost: x\r\n") + "Authorization: Bearer " +
      kApiKey +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n";
  // The reserve waits for the painting's row lock, so it is in flight when
  // the caller closes its connection.
  auto leave_while_reserving = [&](const std::string& extra_headers) {
    pqxx::connection blocker(db.url());
    pqxx::work hold(blocker);
    hold.exec("SELECT 1 FROM painting_locks WHERE painting_id = 'p5' FOR UPDATE");
    {
      RawClient caller(gw.port());
      REQUIRE(caller.Send(request + extra_headers + "\r\n" + body));
      REQUIRE(Eventually([&] { return db.LockWaiters() == "1"; }));
    }
    hold.abort();
  };

  // No key: nobody can learn the reservation's id, so it is released at once.
  leave_while_reserving("");
  REQUIRE(Eventually([&] { return !gw.process().Events("reservation_client_gone").empty(); }));
  CHECK(gw.process().Events("reservation_client_gone")[0].value("released", false));
  CHECK(db.Scalar("SELECT state || ':' || released_reason FROM reservations") ==
        "released:client_gone");
  CHECK(Request(gw.base(), "GET", "/v1/paintings/p5").json["state"] == "available");

  // With a key, the hold stays for the retry, which is told the same reservation.
  leave_while_reserving("Idempotency-Key: reserve-p5\r\n");
  REQUIRE(Eventually([&] {
    return db.Scalar(
               "SELECT count(*) FROM idempotency_keys WHERE key = 'reserve-p5' AND state = "
               "'done'") == "1";
  }));
  CHECK(db.HeldOn("p5") == "1");
  auto headers = ApiKeyHeader();
  headers.emplace("Idempotency-Key", "reserve-p5");
  const Reply retry = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p5"}}}, headers);
  CHECK(retry.status == 201);
  CHECK(retry.json["reservation_id"] ==
        db.Scalar("SELECT id FROM reservations WHERE state = 'held'"));
  CHECK(gw.process().Events("reservation_client_gone").size() == 1);
  CheckInvariants(db);
}

TEST_CASE("the reservations API needs the API key") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base());
  Reply none = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}});
  CHECK(none.status == 401);
  CHECK(none.json["code"] == "unauthorized");
  Reply wrong = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}},
                         {{"Authorization", "Bearer test-api-key-0123456780"}});
  CHECK(wrong.status == 401);
  CHECK(wrong.body.find(kApiKey) == std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "0");
  CHECK(gw.LogUpToNow().find(kApiKey) == std::string::npos);
}
