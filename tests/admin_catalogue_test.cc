// paintlockctl sold/unsold and sweep: the catalogue flag and deleting
// finished stories.
// (tests/support/admin_fixture.h says how these tests run paintlockctl.)
#include <doctest/doctest.h>

#include "tests/support/admin_fixture.h"

using namespace paintlock::testing;
using nlohmann::json;

TEST_CASE_FIXTURE(ShopFixture, "admin: sold and unsold set and clear the catalogue flag, audited") {
  CompletedProcess sold =
      Ctl(db, stripe, {"sold", "p10", "--reason", "sold at the fair", "--json"});
  CHECK(sold.exit_code == 0);
  CHECK(sold.Json() == json({{"painting", "p10"}, {"outcome", "sold"}}));
  CHECK(PaintingState(db, "p10") == "sold");
  CHECK(Checkout(shop, {"p10"}).json["code"] == "painting_sold");
  CHECK(Ctl(db, stripe, {"sold", "p10", "--reason", "again"}).out ==
        "p10 was already sold; nothing changed\n");
  CHECK(db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'mark_sold'") == "1");

  auto [holder, holder_session] = Bought(shop, {"p11"});
  CompletedProcess held = Ctl(db, stripe, {"sold", "p11", "--reason", "sold by phone"});
  CHECK(held.exit_code == 1);
  CHECK(OneLine(held.err));
  CHECK(held.err.find("held by reservation " + holder) != std::string::npos);
  CHECK(held.err.find("paintlockctl release " + holder) != std::string::npos);
  CHECK(PaintingState(db, "p11") == "reserved");

  CompletedProcess unsold =
      Ctl(db, stripe, {"unsold", "p10", "--reason", "the fair buyer backed out"});
  CHECK(unsold.exit_code == 0);
  CHECK(unsold.out == "p10 is for sale again\n");
  CHECK(PaintingState(db, "p10") == "available");
  CHECK(Checkout(shop, {"p10"}).status == 201);
  CHECK(Ctl(db, stripe, {"unsold", "p12", "--reason", "x"}).out ==
        "p12 was not sold; nothing changed\n");
  CHECK(Ctl(db, stripe, {"sold", "nope", "--reason", "x"}).exit_code == 1);
  CHECK(Ctl(db, stripe, {"unsold", "nope", "--reason", "x"}).exit_code == 1);

  // A paintlock sale refunded in the Stripe dashboard: the sale becomes refunded.
  auto [sale, sale_session] = Bought(shop, {"p1", "p2"});
  Pay(shop, sale_session);
  REQUIRE(Eventually([&, sale = sale] { return State(db, sale) == "sold"; }));
  CompletedProcess refunded =
      Ctl(db, stripe, {"unsold", "p1", "--reason", "returned; refunded in dashboard", "--json"});
  CHECK(refunded.exit_code == 0);
  CHECK(refunded.Json()["sale"] == sale);
  CHECK(State(db, sale) == "refunded");
  CHECK(db.Scalar(
            "SELECT (details->>'outside_paintlock') || ' ' || (details->'still_sold')::text FROM "
            "audit_log WHERE action = 'refund' AND reservation_id = '" +
            sale + "'") == "true [\"p2\"]");
  CHECK(db.Scalar("SELECT sold_until IS NULL AND holder IS NULL FROM painting_locks WHERE "
                  "painting_id = 'p1'") == "t");
  CHECK(PaintingState(db, "p1") == "available");
  CHECK(PaintingState(db, "p2") == "sold");  // the other painting of that sale stays sold
  CHECK(Checkout(shop, {"p1"}).status == 201);
  CheckInvariants(db);
}

TEST_CASE("admin: sweep deletes finished stories and never live, sold or unsettled rows") {
  TestDatabase db;
  const std::string stripe = DeadStripe();
  auto old = [&](const std::string& id) {
    db.Exec(
        "UPDATE reservations SET created_at = now() - interval '9 days', updated_at = now() - "
        "interval '8 days', held_until = least(held_until, now() - interval '8 days') WHERE id = "
        "'" +
        id + "'");
    db.Exec("UPDATE painting_locks SET held_until = now() - interval '8 days' WHERE holder = '" +
            id + "'");
  };
  auto attach = [&](const std::string& id, const std::string& session) {
    db.Exec("SELECT paintlock_attach_session('" + id + "', '" + session +
            "', now() + interval '35 minutes')");
  };
  auto apply = [&](const std::string& session, const std::string& status,
                   const std::string& payment) {
    db.Exec("SELECT * FROM paintlock_apply_session(NULL, 'session.retrieved', '" + session +
            "', NULL, '" + status + "', '" + payment + "', 'pi_" + session +
            "', 'test', interval '14 days')");
  };
  // Deleted: an old released hold, an old lapsed hold without a session, an
  // old hold released when Stripe expired its session.
  const std::string released_old = Reserve(db, "p1");
  db.Exec("SELECT paintlock_release('" + released_old + "', 'test', 'test')");
  old(released_old);
  const std::string lapsed_old = Reserve(db, "p6");
  old(lapsed_old);
  const std::string expired_old = Reserve(db, "p7");
  attach(expired_old, "cs_g");
  apply("cs_g", "expired", "unpaid");
  old(expired_old);
  // Kept: a recent release, an old sale, a live hold, an old lapsed hold whose
  // session may be open, an old delayed payment, an old refund owed.
  const std::string released_recent = Reserve(db, "p2");
  db.Exec("SELECT paintlock_release('" + released_recent + "', 'test', 'test')");
  const std::string sold_old = Reserve(db, "p3");
  attach(sold_old, "cs_c");
  apply("cs_c", "complete", "paid");
  old(sold_old);
  const std::string live = Reserve(db, "p4");
  const std::string open_old = Reserve(db, "p5");
  attach(open_old, "cs_e");
  old(open_old);
  const std::string awaiting_old = Reserve(db, "p8");
  attach(awaiting_old, "cs_a");
  apply("cs_a", "complete", "unpaid");
  old(awaiting_old);
  const std::string refund_old = Reserve(db, "p10");
  attach(refund_old, "cs_r");
  db.Exec("UPDATE reservations SET state = 'refund_pending' WHERE id = '" + refund_old + "'");
  old(refund_old);
  // A lock row still naming a released reservation (the sweep clears it).
  const std::string stale_holder = Reserve(db, "p9");
  db.Exec("UPDATE reservations SET state = 'released', released_reason = 'test' WHERE id = '" +
          stale_holder + "'");
  REQUIRE(State(db, awaiting_old) == "awaiting_payment");
  REQUIRE(State(db, sold_old) == "sold");
  const std::string before = db.Scalar("SELECT count(*) FROM reservations");

  CompletedProcess dry = Ctl(db, stripe, {"sweep", "--dry-run", "--json"});
  CHECK(dry.exit_code == 0);
  json d = dry.Json();
  CHECK(d["dry_run"] == true);
  CHECK(d["reservations_deleted"] == 3);
  CHECK(d["released_deleted"] == 2);
  CHECK(d["lapsed_deleted"] == 1);
  CHECK(d["items_deleted"] == 3);
  CHECK(d["holders_cleared"] == 1);
  CHECK(d["kept_stripe_unknown"] == 1);
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == before);

  CompletedProcess swept = Ctl(db, stripe, {"sweep"});
  CHECK(swept.exit_code == 0);
  CHECK(swept.err.empty());
  CHECK(swept.out.find("reservations          3 (2 released, 0 refunded, 1 lapsed)") !=
        std::string::npos);
  CHECK(swept.out.find("lock holders cleared  1") != std::string::npos);
  CHECK(swept.out.find("1 older reservation(s) kept") != std::string::npos);
  for (const auto& gone : {released_old, lapsed_old, expired_old}) {
    CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE id = '" + gone + "'") == "0");
    CHECK(db.Scalar("SELECT count(*) FROM reservation_items WHERE reservation_id = '" + gone +
                    "'") == "0");
  }
  for (const auto& kept :
       {released_recent, sold_old, live, open_old, awaiting_old, refund_old, stale_holder}) {
    CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE id = '" + kept + "'") == "1");
    CHECK(db.Scalar("SELECT count(*) FROM reservation_items WHERE reservation_id = '" + kept +
                    "'") == "1");
  }
  CHECK(db.Scalar("SELECT holder IS NULL FROM painting_locks WHERE painting_id = 'p9'") == "t");
  CHECK(db.Scalar("SELECT holder FROM painting_locks WHERE painting_id = 'p4'") == live);
  CHECK(PaintingState(db, "p4") == "reserved");
  CHECK(PaintingState(db, "p3") == "sold");

  CHECK(Ctl(db, stripe, {"sweep", "--json"}).Json()["reservations_deleted"] == 0);
  CompletedProcess short_bound = Ctl(db, stripe, {"sweep", "--older-than", "1m"});
  CHECK(short_bound.exit_code == 0);
  CHECK(short_bound.err.find("warning: --older-than 1m is shorter than the 3 days") !=
        std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE id = '" + released_recent + "'") == "1");

  // The owed refund is settled (as reconcile would), so the invariants hold.
  db.Exec("SELECT paintlock_record_refund('" + refund_old + "', 're_test', 'test')");
  CheckInvariants(db);
}
