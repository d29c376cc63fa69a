// paintlockctl usage and set-up: --help and usage errors on every command,
// migrate, and catalogue import.
// (tests/support/admin_fixture.h says how these tests run paintlockctl.)
#include <doctest/doctest.h>

#include <sstream>

#include "tests/support/admin_fixture.h"

using namespace paintlock::testing;
using nlohmann::json;

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
