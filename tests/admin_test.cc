// paintlockctl (issue 4) as an operator runs it: a real process against a
// real PostgreSQL, the fake Stripe and, where real checkouts are needed, a
// gateway that receives the fake's webhooks. Every test checks stdout,
// stderr and the exit code apart, then the database, then DESIGN.md's
// invariants.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/harness.h"

// Lambdas name the structured bindings they use in an init-capture
// ([&, id = id]): capturing a binding itself is C++20, and clang 14 (the
// ASan+UBSan and fuzzer build) refuses it in C++17.
using namespace paintlock::testing;
using nlohmann::json;

namespace {

std::string DeadStripe() { return "http://127.0.0.1:" + std::to_string(FreeLoopbackPort()); }

// paintlockctl ARGS with the test's database and Stripe; `env` overrides.
// Asserts nothing, so it may run on any thread.
CompletedProcess CtlOnAnyThread(TestDatabase& db, const std::string& stripe_base,
                                const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {BuildDir() + "/paintlockctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> all = {{"DATABASE_URL", db.url()},
                                            {"STRIPE_SECRET_KEY", kStripeKey},
                                            {"STRIPE_API_BASE", stripe_base}};
  for (const auto& [k, v] : env) all[k] = v;
  return RunToCompletion(argv, all);
}

// The same on the test's thread, telling the story of a failing check.
CompletedProcess Ctl(TestDatabase& db, const std::string& stripe_base,
                     const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {}) {
  CompletedProcess p = CtlOnAnyThread(db, stripe_base, args, env);
  INFO("paintlockctl " <<
       [&] {
         std::string s;
         for (const auto& a : args) s += a + " ";
         return s;
       }() << "\nexit " << p.exit_code
                       << "\nstdout:\n"
                       << p.out << "\nstderr:\n"
                       << p.err);
  CHECK(p.exit_code >= 0);  // it finished
  return p;
}

bool OneLine(const std::string& s) {
  return !s.empty() && s.back() == '\n' && s.find('\n') == s.size() - 1;
}

Reply Checkout(Shop& shop, const json& paintings) {
  return PostJson(shop.gateway.base(), "/v1/checkout", {{"paintings", paintings}});
}

// A checkout that must succeed: its reservation id and Stripe session id.
std::pair<std::string, std::string> Bought(Shop& shop, const json& paintings) {
  Reply r = Checkout(shop, paintings);
  REQUIRE_MESSAGE(r.status == 201, r.body);
  const std::string id = r.json["reservation_id"];
  for (const auto& s : shop.stripe.Sessions()) {
    if (s["metadata"].value("reservation_id", "") == id) return {id, s["id"]};
  }
  FAIL("no session for reservation " << id);
  return {};
}

json Session(Shop& shop, const std::string& id) {
  for (const auto& s : shop.stripe.Sessions()) {
    if (s["id"] == id) return s;
  }
  FAIL("no session " << id);
  return nullptr;
}

std::string State(TestDatabase& db, const std::string& reservation_id) {
  return db.Scalar("SELECT state FROM reservations WHERE id = '" + reservation_id + "'");
}

std::string PaintingState(TestDatabase& db, const std::string& painting) {
  return db.Scalar("SELECT state FROM painting_states WHERE id = '" + painting + "'");
}

// Lets a hold lapse: nothing but the clock's verdict changes.
void Age(TestDatabase& db, const std::string& reservation_id) {
  db.Exec("UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE holder = '" +
          reservation_id + "'");
  db.Exec("UPDATE reservations SET held_until = now() - interval '1 second' WHERE id = '" +
          reservation_id + "'");
}

void Pay(Shop& shop, const std::string& session, const std::string& payment_status = "paid") {
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/pay",
                      {{"payment_status", payment_status}});
}

// Waits until the fake Stripe has nothing left to deliver: every event was
// delivered, ran out of retries, or is one of the `dropped` this test asked
// it to drop (never attempted; an attempt in flight is not counted yet, so
// it shows as one more unattempted event).
void WebhooksSettled(Shop& shop, int dropped = 0) {
  CHECK(Eventually([&] {
    int unattempted = 0;
    for (const auto& e : shop.stripe.Control("GET", "/_test/events")) {
      const int attempts = e.value("delivery_attempts", 0);
      if (e.value("delivered", 0) > 0 || attempts >= 4) continue;
      if (attempts > 0) return false;  // retrying
      ++unattempted;
    }
    return unattempted == dropped;
  }));
}

std::string WriteFile(const std::string& name, const std::string& text) {
  mkdir((BuildDir() + "/test-logs").c_str(), 0755);
  const std::string path = BuildDir() + "/test-logs/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string Reserve(TestDatabase& db, const std::string& painting) {
  return db.Scalar("SELECT reservation_id FROM paintlock_reserve('{" + painting +
                   "}', interval '7 minutes', NULL) WHERE outcome = 'granted'");
}

std::vector<std::string> Conditions(const json& holds) {
  std::vector<std::string> out;
  for (const auto& h : holds["holds"]) out.push_back(h["condition"]);
  return out;
}

}  // namespace

TEST_CASE(
    "admin: every command has --help, and bad usage exits 2 with one line and changes nothing") {
  TestDatabase db;
  const std::string stripe = DeadStripe();
  CompletedProcess overview = Ctl(db, stripe, {"--help"});
  CHECK(overview.exit_code == 0);
  CHECK(overview.err.empty());
  for (const char* name : {"holds", "show", "release", "sold", "unsold", "reconcile", "events",
                           "sweep", "catalog import", "migrate"}) {
    INFO(name);
    CHECK(overview.out.find(std::string("  ") + name + " ") != std::string::npos);
    std::vector<std::string> args;
    std::istringstream words(name);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    CompletedProcess help = Ctl(db, stripe, args);
    CHECK(help.exit_code == 0);
    CHECK(help.out.rfind(std::string("Usage: paintlockctl ") + name, 0) == 0);
    CHECK(help.err.empty());
  }

  const std::string uuid = "0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e";
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"frobnicate"},
      {"holds", "--state", "nonsense"},
      {"holds", "--older-than", "5 parsecs"},
      {"holds", "extra"},
      {"holds", "--json=yes"},
      {"show"},
      {"show", "p1", "p2"},
      {"release"},
      {"release", uuid},
      {"release", uuid, "--reason"},
      {"release", uuid, "--reason", "  "},
      {"release", "not-a-uuid", "--reason", "x"},
      {"release", uuid, "--reason", "x", "--forse"},
      {"sold", "p1"},
      {"unsold"},
      {"sweep", "--older-than", "forever"},
      {"events", "--since", "yesterday"},
      {"events", "--limit", "0"},
      {"reconcile", "--rate", "fast"},
      {"catalog"},
      {"catalog", "export"},
      {"catalog", "import"},
      {"migrate", "now"},
  };
  for (const auto& args : bad) {
    CompletedProcess p = Ctl(db, stripe, args);
    CHECK(p.exit_code == 2);
    CHECK(p.out.empty());
    CHECK(OneLine(p.err));
    CHECK(p.err.rfind("paintlockctl", 0) == 0);
  }
  // Not a usage error but a missing setting: 1, and what to do.
  CompletedProcess no_db = Ctl(db, stripe, {"holds"}, {{"DATABASE_URL", ""}});
  CHECK(no_db.exit_code == 1);
  CHECK(OneLine(no_db.err));
  CHECK(no_db.err.find("DATABASE_URL is not set") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM audit_log") == "0");
  CHECK(db.Scalar("SELECT count(*) FROM reservations") == "0");
  CheckInvariants(db);
}

TEST_CASE("admin: migrate is idempotent, and catalog import reports added, updated, unchanged") {
  TestDatabase db;
  const std::string stripe = DeadStripe();
  CompletedProcess again = Ctl(db, stripe, {"migrate"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("already applied") != std::string::npos);
  CHECK(again.out.find("(0 applied now)") != std::string::npos);
  CHECK(Ctl(db, stripe, {"migrate", "--json"}).Json()["applied_now"] == 0);

  const std::string file =
      WriteFile("catalog-" + std::to_string(getpid()) + ".json", R"json({"paintings": [
      {"id": "p1", "title": "Harbour at Dawn", "price_minor": 42000, "currency": "eur"},
      {"id": "p2", "title": "Blue Kitchen Window (1998)", "price_minor": 18500, "currency": "eur"},
      {"id": "n1", "title": "New Study", "price_minor": 1000, "currency": "eur"}]})json");
  CompletedProcess first = Ctl(db, stripe, {"catalog", "import", file});
  CHECK(first.exit_code == 0);
  CHECK(first.out == file + ": 1 added, 1 updated, 1 unchanged\n");
  CompletedProcess second = Ctl(db, stripe, {"catalog", "import", file, "--json"});
  CHECK(second.exit_code == 0);
  CHECK(second.Json() == json({{"file", file}, {"added", 0}, {"updated", 0}, {"unchanged", 3}}));
  const std::string csv = WriteFile("catalog-" + std::to_string(getpid()) + ".csv",
                                    "id,title,price_minor,currency\n"
                                    "n1,New Study,1000,eur\n"
                                    "p2,Blue Kitchen Window (1998),18500,eur\n");
  CHECK(Ctl(db, stripe, {"catalog", "import", csv, "--json"}).Json()["unchanged"] == 2);
  CHECK(db.Scalar("SELECT title FROM paintings WHERE id = 'p2'") == "Blue Kitchen Window (1998)");

  // A buyer may be paying the old price: a change on a reserved painting needs --force.
  const std::string held = Reserve(db, "n1");
  REQUIRE(!held.empty());
  const std::string dearer =
      WriteFile("catalog-dearer-" + std::to_string(getpid()) + ".json",
                R"([{"id": "n1", "title": "New Study", "price_minor": 2000, "currency": "eur"}])");
  CompletedProcess refused = Ctl(db, stripe, {"catalog", "import", dearer});
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK(refused.err.find("--force") != std::string::npos);
  CHECK(db.Scalar("SELECT price_minor FROM paintings WHERE id = 'n1'") == "1000");
  CHECK(Ctl(db, stripe, {"catalog", "import", dearer, "--force"}).exit_code == 0);
  CHECK(db.Scalar("SELECT price_minor FROM paintings WHERE id = 'n1'") == "2000");

  const std::string broken =
      WriteFile("catalog-broken-" + std::to_string(getpid()) + ".json",
                R"([{"id": "n2", "title": "", "price_minor": -1, "currency": "EUR"}])");
  CompletedProcess bad = Ctl(db, stripe, {"catalog", "import", broken});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("nothing imported") != std::string::npos);
  CHECK(Ctl(db, stripe, {"catalog", "import", "/nonexistent.json"}).exit_code == 1);
  CHECK(db.Scalar("SELECT count(*) FROM paintings") == "13");

  // A hold without a Stripe session is released without asking Stripe.
  CompletedProcess released = Ctl(db, stripe, {"release", held, "--reason", "test hold"});
  CHECK(released.exit_code == 0);
  CHECK(State(db, held) == "released");
  CheckInvariants(db);
}

TEST_CASE("admin: holds lists the stuck ones first, filters them, and says what to do") {
  TestDatabase db;
  Shop shop(db, {{"STRIPE_MAX_RETRIES", "0"}});
  const std::string stripe = shop.stripe.base();

  auto [live, live_session] = Bought(shop, {"p1"});
  auto [lapsed_open, lapsed_session] = Bought(shop, {"p2"});
  Age(db, lapsed_open);
  auto [awaiting, awaiting_session] = Bought(shop, {"p3"});
  Pay(shop, awaiting_session, "unpaid");
  REQUIRE(Eventually([&, awaiting = awaiting] { return State(db, awaiting) == "awaiting_payment"; }));
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

TEST_CASE("admin: show tells a painting's, a reservation's and a session's story in time order") {
  TestDatabase db;
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
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

TEST_CASE(
    "admin: release of an open session expires it at Stripe first, and a dry run changes nothing") {
  TestDatabase db;
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
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

TEST_CASE("admin: release of a paid session is refused and the painting ends sold") {
  TestDatabase db;
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
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
  CHECK(no_key.err.find("STRIPE_SECRET_KEY is not set") != std::string::npos);
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

TEST_CASE("admin: a payment that lands while release is expiring the session wins") {
  TestDatabase db;
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
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

TEST_CASE("admin: sold and unsold set and clear the catalogue flag, audited") {
  TestDatabase db;
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
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

TEST_CASE("admin: events lists what Stripe said, by session and since when") {
  TestDatabase db;
  Shop shop(db);
  const std::string stripe = shop.stripe.base();
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

TEST_CASE("admin: reconcile heals sessions whose webhooks were lost, and owed refunds") {
  TestDatabase db;
  Shop shop(db, {{"STRIPE_MAX_RETRIES", "0"}});  // a failing refund fails fast
  const std::string stripe = shop.stripe.base();
  // Paid, but the webhook was dropped; then the hold lapsed.
  auto [paid, paid_session] = Bought(shop, {"p1"});
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  Pay(shop, paid_session);
  WebhooksSettled(shop, 1);
  Age(db, paid);
  REQUIRE(State(db, paid) == "held");
  // A delayed payment that succeeded; that webhook was dropped too.
  auto [delayed, delayed_session] = Bought(shop, {"p2"});
  Pay(shop, delayed_session, "unpaid");
  REQUIRE(Eventually([&, delayed = delayed] { return State(db, delayed) == "awaiting_payment"; }));
  shop.stripe.Control("POST", "/_test/webhooks", {{"drop_next", 1}});
  shop.stripe.Control("POST", "/_test/sessions/" + delayed_session + "/async_payment",
                      {{"outcome", "succeeded"}});
  WebhooksSettled(shop, 2);
  REQUIRE(State(db, delayed) == "awaiting_payment");
  // Paid after another buyer took the painting, while Stripe refused refunds.
  auto [late, late_session] = Bought(shop, {"p3"});
  Age(db, late);
  auto [taker, taker_session] = Bought(shop, {"p3"});  // take-over expires the late one's session
  shop.stripe.Control("POST", "/_test/faults",
                      {{"fail_next", 100}, {"status", 500}, {"path_prefix", "/v1/refunds"}});
  shop.stripe.Control("POST", "/_test/sessions/" + late_session + "/pay",
                      {{"payment_status", "paid"}, {"allow_expired", true}});
  REQUIRE(Eventually([&, late = late] { return State(db, late) == "refund_pending"; }));
  WebhooksSettled(shop, 2);  // every delivery failed: the refund is still owed
  shop.stripe.Control("POST", "/_test/faults/clear");
  REQUIRE(State(db, late) == "refund_pending");
  // A buyer still on Stripe's page after the hold lapsed: nothing to change.
  auto [open, open_session] = Bought(shop, {"p4"});
  Age(db, open);

  CHECK(Conditions(Ctl(db, stripe, {"holds", "--json"}).Json()) ==
        std::vector<std::string>{"refund_pending", "lapsed_session_open", "lapsed_session_open",
                                 "awaiting_payment", "live"});

  CompletedProcess healed = Ctl(db, stripe, {"reconcile", "--json"});
  CHECK(healed.exit_code == 0);
  CHECK(healed.err.empty());  // short runs show no progress
  json r = healed.Json();
  CHECK(r["checked"] == 4);
  CHECK(r["changed"] == 3);
  CHECK(r["failed"] == 0);
  std::map<std::string, json> by_reservation;
  for (const auto& result : r["results"]) by_reservation[result["reservation_id"]] = result;
  CHECK(by_reservation[paid]["outcome"] == "sold_late");
  CHECK(by_reservation[paid]["state_after"] == "sold");
  CHECK(by_reservation[delayed]["outcome"] == "sold");
  CHECK(by_reservation[late]["outcome"] == "refunded");
  CHECK(by_reservation[late]["state_after"] == "refunded");
  CHECK(by_reservation[open]["outcome"] == "no_change");
  CHECK(by_reservation[open]["stripe_status"] == "open");
  CHECK(by_reservation[open]["changed"] == false);

  CHECK(PaintingState(db, "p1") == "sold");
  CHECK(PaintingState(db, "p2") == "sold");
  CHECK(State(db, taker) == "held");  // the taker keeps p3
  CHECK(shop.stripe.Control("GET", "/_test/refunds").size() == 1);
  CHECK(db.Scalar("SELECT actor FROM audit_log WHERE action = 'refund' AND reservation_id = '" +
                  late + "'") == "paintlockctl");
  CHECK(
      db.Scalar("SELECT count(*) FROM audit_log WHERE action = 'late_payment_accepted' AND actor = "
                "'paintlockctl'") == "1");

  CompletedProcess again = Ctl(db, stripe, {"reconcile"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.rfind("RESERVATION ", 0) == 0);
  CHECK(again.out.find(open_session) != std::string::npos);
  CHECK(again.out.find("reconciled 1 session(s): 0 changed, 1 unchanged, 0 failed") !=
        std::string::npos);
  CheckInvariants(db);
}

TEST_CASE(
    "admin: a long reconcile shows progress, and with Stripe down it fails and changes nothing") {
  constexpr int kSessions = 20;
  std::map<std::string, long long> paintings;
  for (int i = 0; i < kSessions; ++i) paintings["q" + std::to_string(i)] = 500 + i;
  TestDatabase db(paintings);
  Shop shop(db);
  for (int i = 0; i < kSessions; ++i) Age(db, Bought(shop, {"q" + std::to_string(i)}).first);

  CompletedProcess down = Ctl(db, DeadStripe(), {"reconcile"}, {{"STRIPE_MAX_RETRIES", "0"}});
  CHECK(down.exit_code == 1);
  CHECK(down.err.find("reconcile: 20/20 sessions") != std::string::npos);
  CHECK(down.err.find("paintlockctl: 20 session(s) could not be reconciled") != std::string::npos);
  CHECK(down.out.find("not asked: Stripe was unreachable") != std::string::npos);
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE state = 'held'") == "20");

  CompletedProcess ok = Ctl(db, shop.stripe.base(), {"reconcile", "--rate", "50"});
  CHECK(ok.exit_code == 0);
  CHECK(ok.err.find("reconcile: 10/20 sessions\n") != std::string::npos);
  CHECK(ok.err.find("reconcile: 20/20 sessions\n") != std::string::npos);
  CHECK(ok.err.find("paintlockctl") == std::string::npos);  // progress only, no error
  CHECK(ok.out.find("reconciled 20 session(s): 0 changed, 20 unchanged, 0 failed") !=
        std::string::npos);
  CheckInvariants(db);
}
