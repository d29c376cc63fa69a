// paintlockctl release: expiring at Stripe first, refusing paid sessions,
// --force without Stripe, and races with payments that land meanwhile.
// (tests/support/admin_fixture.h says how these tests run paintlockctl.)
#include <doctest/doctest.h>

#include <thread>

#include "tests/support/admin_fixture.h"

using namespace paintlock::testing;
using nlohmann::json;

TEST_CASE_FIXTURE(
    ShopFixture,
    "admin: release of an open session expires it at Stripe first, and a dry run changes nothing") {
  auto [id, session] = Bought(shop, {"p6", "p7"});

  CompletedProcess dry = Ctl(db, stripe, {"release", id, "--reason", "buyer asked", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("Stripe says the session is open: would expire Stripe session " + session) !=
        std::string::npos);
  CHECK(dry.out.find("nothing was changed") != std::string::npos);
  json dry_json = Ctl(db, stripe, {"release", id, "--reason", "x", "--dry-run", "--json"}).Json();
  CHECK(dry_json["outcome"] == "dry_run");
  CHECK(dry_json["stripe_status"] == "open");
  CHECK(Session(shop, session)["status"] == "open");
  CHECK(State(db, id) == "held");
  CHECK(db.Scalar("SELECT count(*) FROM audit_log") == "0");

  CompletedProcess released = Ctl(db, stripe, {"release", id, "--reason", "buyer asked"});
  CHECK(released.exit_code == 0);
  CHECK(released.err.empty());
  CHECK(released.out ==
        "released " + id + ": p6, p7 free again (Stripe session " + session + " is expired)\n");
  CHECK(Session(shop, session)["status"] == "expired");
  CHECK(State(db, id) == "released");
  CHECK(db.Scalar("SELECT released_reason || ' ' || stripe_status FROM reservations WHERE id = '" +
                  id + "'") == "admin expired");
  CHECK(PaintingState(db, "p6") == "available");
  CHECK(PaintingState(db, "p7") == "available");
  CHECK(db.Scalar(
            "SELECT reason || ' ' || (details->>'forced') FROM audit_log WHERE action = 'release' "
            "AND actor = 'paintlockctl' AND reservation_id = '" +
            id + "'") == "buyer asked false");
  // The expiry's own webhook may have released it first; either way the
  // release is the admin's, once, with the admin's reason.
  WebhooksSettled(shop);
  const std::string expiry =
      db.Scalar("SELECT outcome FROM stripe_events WHERE type = 'checkout.session.expired'");
  CHECK((expiry == "no_change" || expiry == "released"));
  CHECK(State(db, id) == "released");
  CHECK(db.Scalar("SELECT released_reason FROM reservations WHERE id = '" + id + "'") == "admin");

  CompletedProcess again = Ctl(db, stripe, {"release", id, "--reason", "buyer asked", "--json"});
  CHECK(again.exit_code == 0);
  CHECK(again.Json()["outcome"] == "already_released");
  CHECK(db.Scalar(
            "SELECT count(*) FROM audit_log WHERE action = 'release' AND actor = 'paintlockctl'") ==
        "1");
  CHECK(Checkout(shop, {"p6"}).status == 201);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "admin: release of a paid session is refused and the painting ends sold") {
  auto [id, session] = Bought(shop, {"p8"});
  shop.stripe.Control("POST", "/_test/webhooks",
                      {{"drop_next", 1}});  // the payment's webhook is lost
  Pay(shop, session);
  WebhooksSettled(shop, 1);
  REQUIRE(State(db, id) == "held");  // the database has not heard

  CompletedProcess refused = Ctl(db, stripe, {"release", id, "--reason", "looks abandoned"});
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK(OneLine(refused.err));
  CHECK(refused.err.find("refused to release " + id + ": its buyer paid: p8 sold") !=
        std::string::npos);
  CHECK(State(db, id) == "sold");
  CHECK(db.Scalar("SELECT sold_at IS NOT NULL FROM paintings WHERE id = 'p8'") == "t");
  CHECK(PaintingState(db, "p8") == "sold");
  CHECK(Session(shop, session)["status"] == "complete");
  CHECK(db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'release'") == "0");

  // Asked again, the database alone refuses (a sale is undone by `unsold`).
  CompletedProcess json_refusal =
      Ctl(db, stripe, {"release", id, "--reason", "again", "--force", "--json"});
  CHECK(json_refusal.exit_code == 1);
  CHECK(json_refusal.Json()["outcome"] == "refused");
  CHECK(json_refusal.Json()["state"] == "sold");
  CHECK(State(db, id) == "sold");
  CheckInvariants(db);
}

TEST_CASE("admin: release --force works with Stripe unreachable, and says so loudly") {
  TestDatabase db;
  Shop shop(db);
  auto [id, session] = Bought(shop, {"p9"});
  const std::string dead = DeadStripe();
  const std::map<std::string, std::string> fast = {{"STRIPE_MAX_RETRIES", "0"}};

  CompletedProcess down = Ctl(db, dead, {"release", id, "--reason", "outage"}, fast);
  CHECK(down.exit_code == 1);
  CHECK(down.out.empty());
  CHECK(OneLine(down.err));
  CHECK(down.err.find("Stripe could not be reached") != std::string::npos);
  CHECK(down.err.find("--force") != std::string::npos);
  CHECK(State(db, id) == "held");
  CompletedProcess no_key =
      Ctl(db, dead, {"release", id, "--reason", "outage"}, {{"STRIPE_SECRET_KEY", ""}});
  CHECK(no_key.exit_code == 1);
  CHECK(OneLine(no_key.err));
  CHECK(no_key.err.find("STRIPE_SECRET_KEY: is required") != std::string::npos);
  CHECK(no_key.err.find("--force") != std::string::npos);
  CHECK(State(db, id) == "held");

  CompletedProcess forced =
      Ctl(db, dead, {"release", id, "--reason", "Stripe outage", "--force"}, fast);
  CHECK(forced.exit_code == 0);
  CHECK(forced.err.find("warning: --force: releasing " + id + " WITHOUT asking Stripe") !=
        std::string::npos);
  CHECK(forced.err.find(session + " may still be paid") != std::string::npos);
  CHECK(forced.out == "released " + id + ": p9 free again (forced: Stripe was not asked)\n");
  CHECK(State(db, id) == "released");
  CHECK(
      db.Scalar(
          "SELECT (details->>'forced') || ' ' || reason FROM audit_log WHERE action = 'release'") ==
      "true Stripe outage");
  CHECK(Session(shop, session)["status"] == "open");  // Stripe really was not asked
  // The session was still open: its buyer pays after all. A late payment for
  // free paintings is accepted — nobody is charged without the painting.
  Pay(shop, session);
  REQUIRE(Eventually([&, id = id] { return State(db, id) == "sold"; }));
  CHECK(PaintingState(db, "p9") == "sold");
  CHECK(db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'late_payment_accepted'") == "1");
  CheckInvariants(db);
}

TEST_CASE("admin: a release racing a completed payment never leaves a paid painting unsold") {
  constexpr int kRounds = 24;
  std::map<std::string, long long> paintings;
  for (int i = 0; i < kRounds; ++i) paintings["race" + std::to_string(i)] = 1000 + i;
  TestDatabase db(paintings);
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
  int paid_rounds = 0, released_rounds = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string painting = "race" + std::to_string(round);
    // Every third round skips Stripe; every other one lets a payment already
    // under way complete even after the session expired.
    const bool forced = round % 3 == 2;
    const bool payment_under_way = round % 2 == 1;
    INFO("round " << round << (forced ? " forced" : "") << (payment_under_way ? " under way" : ""));
    auto [id, session] = Bought(shop, {painting});
    CompletedProcess release;
    Reply pay;
    RunConcurrently(2, [&, id = id, session = session](int who) {
      if (who == 0) {
        std::vector<std::string> args = {"release", id, "--reason", "race"};
        if (forced) args.push_back("--force");
        release = CtlOnAnyThread(db, stripe, args);
      } else {
        // paintlockctl takes about 100-150 ms to reach Stripe here: stagger
        // the payment across that, so rounds land before, during and after.
        std::this_thread::sleep_for(std::chrono::milliseconds((round * 53) % 230));
        pay = PostJson(shop.stripe.base(), "/_test/sessions/" + session + "/pay",
                       {{"payment_status", "paid"}, {"allow_expired", payment_under_way}});
      }
    });
    INFO("release: exit " << release.exit_code << "\n" << release.out << release.err);
    CHECK((release.exit_code == 0 || release.exit_code == 1));
    CHECK((pay.status == 200 || pay.status == 400));
    WebhooksSettled(shop);
    const bool paid = Session(shop, session)["payment_status"] == "paid";
    if (paid) {
      ++paid_rounds;
      CHECK(Eventually([&] { return PaintingState(db, painting) == "sold"; }));
      CHECK(State(db, id) == "sold");
      CHECK(db.Scalar("SELECT sold_at IS NOT NULL FROM paintings WHERE id = '" + painting + "'") ==
            "t");
    } else {
      ++released_rounds;
      CHECK(release.exit_code == 0);
      CHECK(State(db, id) == "released");
      CHECK(PaintingState(db, painting) == "available");
    }
  }
  MESSAGE(paid_rounds << " rounds paid, " << released_rounds << " released");
  CHECK(db.Scalar(
            "SELECT count(*) FROM reservations WHERE state IN ('refund_pending', 'refunded')") ==
        "0");
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture,
                  "admin: a payment that lands while release is expiring the session wins") {
  auto [id, session] = Bought(shop, {"p3"});
  const std::string expire_path = "/v1/checkout/sessions/" + session + "/expire";
  // Stripe takes its time over the expiry; the buyer pays meanwhile.
  shop.stripe.Control("POST", "/_test/faults",
                      {{"delay_next", 1}, {"delay_ms", 1500}, {"path_prefix", expire_path}});
  CompletedProcess release;
  std::thread cli([&, id = id] {
    release = CtlOnAnyThread(db, stripe, {"release", id, "--reason", "abandoned?"});
  });
  const bool expiring = Eventually([&] {
    for (const auto& r : shop.stripe.Requests()) {
      if (r["path"] == expire_path && r["status"].is_null()) return true;
    }
    return false;
  });
  if (expiring) Pay(shop, session);
  cli.join();
  REQUIRE(expiring);
  INFO("release: exit " << release.exit_code << "\n" << release.out << release.err);
  CHECK(release.exit_code == 1);
  CHECK(OneLine(release.err));
  CHECK(release.err.find("its buyer paid: p3 sold") != std::string::npos);
  CHECK(State(db, id) == "sold");
  CHECK(PaintingState(db, "p3") == "sold");
  CHECK(Session(shop, session)["status"] == "complete");
  CheckInvariants(db);
}
