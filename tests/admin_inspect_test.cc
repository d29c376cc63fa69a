// paintlockctl's read-only commands: holds, show and events.
// (tests/support/admin_fixture.h says how these tests run paintlockctl.)
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tests/support/admin_fixture.h"

using namespace paintlock::testing;
using nlohmann::json;

TEST_CASE("admin: holds lists the stuck ones first, filters them, and says what to do") {
  TestDatabase db;
  Shop shop(db, {{"STRIPE_MAX_RETRIES", "0"}});
  const std::string stripe = shop.stripe.base();

  auto [live, live_session] = Bought(shop, {"p1"});
  auto [lapsed_open, lapsed_session] = Bought(shop, {"p2"});
  Age(db, lapsed_open);
  auto [awaiting, awaiting_session] = Bought(shop, {"p3"});
  Pay(shop, awaiting_session, "unpaid");
  REQUIRE(
      Eventually([&, awaiting = awaiting] { return State(db, awaiting) == "awaiting_payment"; }));
  // A take-over that found Stripe down: the second buyer is turned away, audited.
  auto [refused, refused_session] = Bought(shop, {"p4"});
  Age(db, refused);
  shop.stripe.Control("POST", "/_test/faults", {{"fail_next", 1}, {"status", 503}});
  CHECK(Checkout(shop, {"p4"}).status == 503);
  REQUIRE(db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'take_over_refused'") == "1");
  // A sale whose catalogue flag went missing (a hand edit gone wrong).
  auto [sold, sold_session] = Bought(shop, {"p5"});
  Pay(shop, sold_session);
  REQUIRE(Eventually([&, sold = sold] { return State(db, sold) == "sold"; }));
  db.Exec("UPDATE paintings SET sold_at = NULL WHERE id = 'p5'");
  // A harmless lapsed hold without a session.
  const std::string harmless = Reserve(db, "p6");
  Age(db, harmless);

  CompletedProcess all = Ctl(db, stripe, {"holds", "--json"});
  CHECK(all.exit_code == 0);
  CHECK(all.err.empty());
  json holds = all.Json();
  CHECK(Conditions(holds) == std::vector<std::string>{"sold_unflagged", "take_over_refused",
                                                      "lapsed_session_open", "awaiting_payment",
                                                      "live", "lapsed"});
  CHECK(holds["stuck"] == 4);
  CHECK(holds["count"] == 6);
  CHECK(holds["holds"][0]["reservation_id"] == sold);
  CHECK(holds["holds"][1]["reservation_id"] == refused);
  CHECK(holds["holds"][2]["reservation_id"] == lapsed_open);
  CHECK(holds["holds"][2]["session_id"] == lapsed_session);
  CHECK(holds["holds"][2]["paintings"] == json({"p2"}));
  CHECK(holds["holds"][2]["held_until_in"].get<long long>() < 0);
  CHECK(holds["holds"][4]["reservation_id"] == live);
  CHECK(holds["holds"][4]["held_until_in"].get<long long>() > 0);
  CHECK(holds["holds"][4]["stuck"] == false);

  CompletedProcess table = Ctl(db, stripe, {"holds"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.rfind("CONDITION ", 0) == 0);
  CHECK(table.out.find("\nsold_unflagged ") != std::string::npos);
  CHECK(table.out.find("\nsold_unflagged ") < table.out.find("\nlive "));
  CHECK(table.out.find("6 holds, 4 stuck") != std::string::npos);
  CHECK(table.out.find("paintlockctl sold PAINTING") != std::string::npos);
  CHECK(table.out.find("paintlockctl reconcile") != std::string::npos);

  CHECK(Conditions(Ctl(db, stripe, {"holds", "--painting", "p2", "--json"}).Json()) ==
        std::vector<std::string>{"lapsed_session_open"});
  CHECK(Conditions(Ctl(db, stripe, {"holds", "--state", "awaiting_payment", "--json"}).Json()) ==
        std::vector<std::string>{"awaiting_payment"});
  CHECK(Ctl(db, stripe, {"holds", "--older-than", "2h", "--json"}).Json()["count"] == 0);
  db.Exec("UPDATE reservations SET created_at = now() - interval '3 hours' WHERE id = '" +
          lapsed_open + "'");
  CHECK(Conditions(Ctl(db, stripe, {"holds", "--older-than", "2h", "--json"}).Json()) ==
        std::vector<std::string>{"lapsed_session_open"});
  CHECK(Ctl(db, stripe, {"holds", "--older-than", "2h", "--state", "live"}).out ==
        "no holds match\n");
  CompletedProcess unknown = Ctl(db, stripe, {"holds", "--painting", "nope"});
  CHECK(unknown.exit_code == 1);
  CHECK(OneLine(unknown.err));

  // The fix the list suggests: restore the flag.
  CompletedProcess fixed = Ctl(db, stripe, {"sold", "p5", "--reason", "restore the missing flag"});
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.out == "p5 marked sold\n");
  CHECK(Ctl(db, stripe, {"holds", "--state", "sold_unflagged", "--json"}).Json()["count"] == 0);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(
    ShopFixture,
    "admin: show tells a painting's, a reservation's and a session's story in time order") {
  auto [released, released_session] = Bought(shop, {"p1"});
  REQUIRE(Ctl(db, stripe, {"release", released, "--reason", "changed their mind"}).exit_code == 0);
  auto [sold, sold_session] = Bought(shop, {"p1", "p2"});
  Pay(shop, sold_session);
  REQUIRE(Eventually([&, sold = sold] { return State(db, sold) == "sold"; }));
  WebhooksSettled(shop);

  CompletedProcess painting = Ctl(db, stripe, {"show", "p1", "--json"});
  CHECK(painting.exit_code == 0);
  json p = painting.Json();
  CHECK(p["kind"] == "painting");
  CHECK(p["painting"]["title"] == "Harbour at Dawn");
  CHECK(p["painting"]["state"] == "sold");
  CHECK(p["painting"]["holder"] == sold);
  REQUIRE(p["reservations"].size() == 2);
  CHECK(p["reservations"][0]["id"] == released);
  CHECK(p["reservations"][0]["state"] == "released");
  CHECK(p["reservations"][1]["id"] == sold);
  CHECK(p["reservations"][1]["holds"] == false);  // sold: nothing held any more
  std::set<std::string> types;
  for (const auto& e : p["events"]) types.insert(e["type"]);
  CHECK(types.count("checkout.session.completed") == 1);
  CHECK(types.count("checkout.session.expired") == 1);  // of the released one's session
  std::vector<std::string> story;
  std::string previous;
  for (const auto& line : p["story"]) {
    CHECK(line["at"].get<std::string>() >= previous);
    previous = line["at"];
    story.push_back(line["source"].get<std::string>() + " " + line["what"].get<std::string>());
  }
  auto at = [&](const std::string& what) {
    return std::find(story.begin(), story.end(), what) - story.begin();
  };
  CHECK(at("reservation created") < at("audit release"));
  CHECK(at("audit release") < at("stripe checkout.session.completed"));
  CHECK(at("stripe checkout.session.completed") < static_cast<long>(story.size()));

  CompletedProcess reservation = Ctl(db, stripe, {"show", sold});
  CHECK(reservation.exit_code == 0);
  CHECK(reservation.out.rfind("reservation " + sold + "  sold", 0) == 0);
  CHECK(reservation.out.find("p1 (fence") != std::string::npos);
  CHECK(reservation.out.find("\nstory\n") != std::string::npos);
  CHECK(reservation.out.find("checkout.session.completed") != std::string::npos);

  json session = Ctl(db, stripe, {"show", sold_session, "--json"}).Json();
  CHECK(session["kind"] == "session");
  REQUIRE(session["reservations"].size() == 1);
  CHECK(session["reservations"][0]["id"] == sold);
  json released_story = Ctl(db, stripe, {"show", released, "--json"}).Json();
  int release_audited = 0;
  for (const auto& a : released_story["audit"]) {
    if (a["action"] == "release" && a["actor"] == "paintlockctl") {
      ++release_audited;
      CHECK(a["reason"] == "changed their mind");
    }
  }
  CHECK(release_audited == 1);

  for (const char* unknown : {"nope", "cs_nothing", "00000000-0000-0000-0000-000000000000"}) {
    CompletedProcess missing = Ctl(db, stripe, {"show", unknown});
    CHECK(missing.exit_code == 1);
    CHECK(missing.out.empty());
    CHECK(OneLine(missing.err));
  }
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture, "admin: events lists what Stripe said, by session and since when") {
  auto [sold, sold_session] = Bought(shop, {"p1"});
  Pay(shop, sold_session);
  REQUIRE(Eventually([&, sold = sold] { return State(db, sold) == "sold"; }));
  auto [expired, expired_session] = Bought(shop, {"p2"});
  shop.stripe.Control("POST", "/_test/sessions/" + expired_session + "/expire");
  REQUIRE(Eventually([&, expired = expired] { return State(db, expired) == "released"; }));

  json all = Ctl(db, stripe, {"events", "--json"}).Json();
  REQUIRE(all["count"] == 2);
  CHECK(all["events"][0]["type"] == "checkout.session.completed");
  CHECK(all["events"][0]["outcome"] == "sold");
  CHECK(all["events"][0]["reservation_id"] == sold);
  CHECK(all["events"][1]["type"] == "checkout.session.expired");
  CHECK(all["events"][1]["outcome"] == "released");

  json one = Ctl(db, stripe, {"events", "--session", expired_session, "--json"}).Json();
  REQUIRE(one["count"] == 1);
  CHECK(one["events"][0]["session_id"] == expired_session);
  CHECK(Ctl(db, stripe, {"events", "--since", "1h", "--json"}).Json()["count"] == 2);
  CHECK(Ctl(db, stripe, {"events", "--since", "2099-01-01T00:00:00Z"}).out == "no events match\n");
  json newest = Ctl(db, stripe, {"events", "--limit", "1", "--json"}).Json();
  REQUIRE(newest["count"] == 1);
  CHECK(newest["events"][0]["type"] == "checkout.session.expired");

  CompletedProcess table = Ctl(db, stripe, {"events"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.rfind("RECEIVED ", 0) == 0);
  CHECK(table.out.find(sold_session) != std::string::npos);
  CHECK(table.out.find("\n2 events\n") != std::string::npos);
  CheckInvariants(db);
}
