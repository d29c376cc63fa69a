// GET /v1/paintings in pages (limit, starting_after, has_more) and
// paintlockctl catalog withdraw / restore, through the real gateway, the real
// paintlockctl and the fake Stripe.
#include <doctest/doctest.h>

#include <set>

#include "tests/support/admin_fixture.h"
#include "tests/support/stream_client.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

// Every painting id in the database, in the order the API promises.
std::vector<std::string> AllIds(TestDatabase& db) {
  std::vector<std::string> ids;
  for (const auto& row : db.Exec("SELECT id FROM paintings ORDER BY id")) {
    ids.push_back(row[0].as<std::string>());
  }
  return ids;
}

Reply List(const std::string& base, const std::string& query) {
  return Request(base, "GET", "/v1/paintings" + query);
}

}  // namespace

TEST_CASE("paintings: pages walk the whole catalogue once, in id order, then has_more is false") {
  TestDatabase db;
  const std::string stripe = DeadStripe();
  Gateway gw(db, stripe);
  const std::vector<std::string> all = AllIds(db);
  REQUIRE(all.size() == 12);

  for (int limit : {1, 5, 11, 12}) {
    CAPTURE(limit);
    std::vector<std::string> seen;
    std::string query = "?limit=" + std::to_string(limit);
    int pages = 0;
    for (;;) {
      Reply page = List(gw.base(), query);
      REQUIRE(page.status == 200);
      CHECK(page.json["object"] == "list");
      CHECK(page.json["url"] == "/v1/paintings");
      CHECK(page.json["paintings"] == page.json["data"]);
      const json& data = page.json["data"];
      CHECK(data.size() <= static_cast<size_t>(limit));
      for (const auto& p : data) seen.push_back(p["id"].get<std::string>());
      ++pages;
      REQUIRE(pages <= 13);
      if (!page.json["has_more"].get<bool>()) break;
      CHECK(data.size() == static_cast<size_t>(limit));  // a page with more after it is full
      query = "?limit=" + std::to_string(limit) +
              "&starting_after=" + data.back()["id"].get<std::string>();
    }
    CHECK(seen == all);
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == seen.size());
    CHECK(pages == (static_cast<int>(all.size()) + limit - 1) / limit);
  }

  // No parameters: the first page of at most 100, here the whole catalogue,
  // with what existing clients read (`paintings`) unchanged.
  Reply whole = List(gw.base(), "");
  REQUIRE(whole.status == 200);
  CHECK(whole.json["has_more"] == false);
  CHECK(whole.json["paintings"].size() == 12);
  CHECK(whole.json["data"][0] == json({{"id", all[0]},
                                       {"title", whole.json["data"][0]["title"]},
                                       {"price_minor", whole.json["data"][0]["price_minor"]},
                                       {"currency", "eur"},
                                       {"state", "available"}}));

  // After the last painting: an empty page, nothing more.
  Reply after_last = List(gw.base(), "?starting_after=" + all.back());
  REQUIRE(after_last.status == 200);
  CHECK(after_last.json["data"] == json::array());
  CHECK(after_last.json["has_more"] == false);
}

TEST_CASE("paintings: limit is bounded and starting_after must name a painting") {
  TestDatabase db;
  const std::string stripe = DeadStripe();
  Gateway gw(db, stripe);

  CHECK(List(gw.base(), "?limit=100").status == 200);
  for (const char* bad : {"?limit=0", "?limit=101", "?limit=-1", "?limit=abc", "?limit=1.5",
                          "?limit=", "?limit=99999999999999999999", "?limit=1&limit=2"}) {
    CAPTURE(bad);
    Reply r = List(gw.base(), bad);
    CHECK(r.status == 400);
    CHECK(r.json["code"] == "invalid_request");
    CHECK(r.json["param"] == "limit");
  }
  for (const std::string& bad :
       {std::string("?starting_after="), std::string("?starting_after=..%2Fx"),
        "?starting_after=" + std::string(65, 'a'),
        std::string("?starting_after=p1&starting_after=p2")}) {
    CAPTURE(bad);
    Reply r = List(gw.base(), bad);
    CHECK(r.status == 400);
    CHECK(r.json["code"] == "invalid_request");
    CHECK(r.json["param"] == "starting_after");
  }
  Reply unknown = List(gw.base(), "?starting_after=no-such-painting&limit=3");
  CHECK(unknown.status == 400);
  CHECK(unknown.json["code"] == "starting_after_not_found");
  CHECK(unknown.json["param"] == "starting_after");
}

TEST_CASE_FIXTURE(ShopFixture,
                  "catalog withdraw: refused to buyers, shown, audited, then restored") {
  StreamClient stream(shop.gateway.port());
  REQUIRE(stream.Status() == 200);
  REQUIRE(stream.WaitForSnapshot(12)["p3"] == "available");

  CompletedProcess withdrawn =
      Ctl(db, stripe, {"catalog", "withdraw", "p3", "--reason", "lent to the spring exhibition"});
  CHECK(withdrawn.exit_code == 0);
  CHECK(withdrawn.out == "p3 is withdrawn from sale\n");
  CHECK(PaintingState(db, "p3") == "withdrawn");
  CHECK(stream.WaitFor("p3", "withdrawn"));
  CHECK(Request(shop.gateway.base(), "GET", "/v1/paintings/p3").json["state"] == "withdrawn");
  CHECK(Request(shop.gateway.base(), "GET", "/v1/paintings?starting_after=p2&limit=1")
            .json["data"][0]["state"] == "withdrawn");

  // A buyer is refused with its own code, and a cart with it reserves nothing.
  Reply refused = Checkout(shop, {"p3"});
  CHECK(refused.status == 409);
  CHECK(refused.json["code"] == "painting_withdrawn");
  CHECK(refused.json["painting"] == "p3");
  Reply cart = Checkout(shop, {"p3", "p4"});
  CHECK(cart.json["code"] == "painting_withdrawn");
  CHECK(PaintingState(db, "p4") == "available");
  CHECK(db.Scalar("SELECT count(*) FROM reservation_items WHERE painting_id IN ('p3','p4')") ==
        "0");
  CHECK(Checkout(shop, {"p3", "no-such"}).json["code"] == "painting_not_found");
  // The database refuses it too, whichever form of paintlock_reserve is called.
  CHECK(db.Scalar("SELECT outcome FROM paintlock_reserve(ARRAY['p3'], interval '7 minutes', "
                  "NULL, NULL)") == "withdrawn");

  CHECK(Ctl(db, stripe, {"catalog", "withdraw", "p3", "--reason", "again"}).out ==
        "p3 was already withdrawn; nothing changed\n");

  CompletedProcess show = Ctl(db, stripe, {"show", "p3"});
  CHECK(show.out.find("withdrawn") != std::string::npos);
  CHECK(show.out.find("(lent to the spring exhibition)") != std::string::npos);

  CompletedProcess restored = Ctl(
      db, stripe, {"catalog", "restore", "p3", "--reason", "back from the exhibition", "--json"});
  CHECK(restored.exit_code == 0);
  CHECK(restored.Json() == json({{"painting", "p3"}, {"outcome", "restored"}}));
  CHECK(stream.WaitFor("p3", "available"));
  CHECK(Ctl(db, stripe, {"catalog", "restore", "p3", "--reason", "x"}).out ==
        "p3 was not withdrawn; nothing changed\n");
  CHECK(db.Scalar("SELECT string_agg(action || ':' || reason || ':' || actor, ',' ORDER BY id) "
                  "FROM audit_log WHERE painting_id = 'p3'") ==
        "withdraw:lent to the spring exhibition:paintlockctl,"
        "restore:back from the exhibition:paintlockctl");
  CHECK(Checkout(shop, {"p3"}).status == 201);
  CheckInvariants(db);
}

TEST_CASE_FIXTURE(ShopFixture, "catalog withdraw: a held or sold painting is refused") {
  auto [holder, session] = Bought(shop, {"p5"});
  CompletedProcess held = Ctl(db, stripe, {"catalog", "withdraw", "p5", "--reason", "damaged"});
  CHECK(held.exit_code == 1);
  CHECK(OneLine(held.err));
  CHECK(held.err.find("held by reservation " + holder) != std::string::npos);
  CHECK(held.err.find("paintlockctl release " + holder) != std::string::npos);
  CHECK(PaintingState(db, "p5") == "reserved");

  // Lapsed, but its Stripe session is open: the buyer may still pay.
  Age(db, holder);
  CompletedProcess paying =
      Ctl(db, stripe, {"catalog", "withdraw", "p5", "--reason", "damaged", "--json"});
  CHECK(paying.exit_code == 1);
  CHECK(paying.Json()["outcome"] == "held");
  CHECK(paying.Json()["until"].is_null());
  CHECK(paying.err.find("Stripe session may still be paid") != std::string::npos);

  Pay(shop, session);
  REQUIRE(Eventually([&, holder = holder] { return State(db, holder) == "sold"; }));
  CompletedProcess sold = Ctl(db, stripe, {"catalog", "withdraw", "p5", "--reason", "damaged"});
  CHECK(sold.exit_code == 1);
  CHECK(sold.err.find("is sold") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'withdraw'") == "0");
  CheckInvariants(db);
}

TEST_CASE("catalog withdraw and restore: bad input is a clear error and its exit code") {
  TestDatabase db;
  const std::string stripe = DeadStripe();
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"catalog", "withdraw", "p1"}, 2, "--reason is required"},
      {{"catalog", "withdraw", "p1", "--reason", "  "}, 2, "--reason is required"},
      {{"catalog", "withdraw", "p1", "--reason", std::string(501, 'x')}, 2, "too long"},
      {{"catalog", "withdraw", "--reason", "x"}, 2, "one PAINTING"},
      {{"catalog", "restore", "p1", "p2", "--reason", "x"}, 2, "one PAINTING"},
      {{"catalog", "withdraw", "nope", "--reason", "x"}, 1, "no painting \"nope\""},
      {{"catalog", "restore", "nope", "--reason", "x"}, 1, "no painting \"nope\""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    CompletedProcess r = Ctl(db, stripe, c.args);
    CHECK(r.exit_code == c.exit_code);
    CHECK(r.out.empty());
    CHECK(OneLine(r.err));
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  CompletedProcess help = Ctl(db, stripe, {"catalog", "withdraw", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("Refused while a reservation holds the painting") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM audit_log") == "0");
  CHECK(db.Scalar("SELECT count(*) FROM paintings WHERE withdrawn_at IS NOT NULL") == "0");
}
