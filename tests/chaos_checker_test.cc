// The fault campaign's own parts (chaos/): its schedule is a pure function
// of the seed, and its checker can fail: shown a shop where each invariant
// is broken, it names every one; shown a clean shop, none. Without this a
// campaign that always says PASS would look just like a good one.
#include <doctest/doctest.h>

#include <set>

#include "chaos/checker.h"
#include "chaos/failover.h"
#include "chaos/schedule.h"
#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"

using namespace paintlock::testing;
namespace chaos = paintlock::chaos;
using nlohmann::json;

namespace {

constexpr std::int64_t kTwentyMinutes = 20 * 60000;

chaos::CheckInput Input(TestDatabase& db) {
  chaos::CheckInput in;
  in.database_url = db.url();
  in.invariants_sql = InvariantsSql();
  in.stripe_sessions = json::array();
  in.stripe_refunds = json::array();
  in.shape = chaos::ShapeFor(60000);
  return in;
}

// An answer to step `index`, of `kind`, on gateway `gw`, timed on the wall clock.
chaos::Answer Timed(chaos::StepKind kind, int index, int gw, double started, double ended,
                    int status) {
  chaos::Answer a;
  a.step.kind = kind;
  a.step.index = index;
  a.step.gw = gw;
  a.started_unix = started;
  a.ended_unix = ended;
  a.status = status;
  return a;
}

chaos::Answer Granted(chaos::StepKind kind, int index, const std::string& key, int status) {
  chaos::Answer a;
  a.step.kind = kind;
  a.step.index = index;
  a.step.key = key;
  a.status = status;
  a.started_ms = index * 1000;
  a.ended_ms = index * 1000 + 100;
  return a;
}

// How many violations the invariant whose name contains `name_part` found.
std::size_t ViolationsOf(const std::vector<chaos::InvariantResult>& results,
                         const std::string& name_part) {
  for (const auto& r : results) {
    if (r.name.find(name_part) != std::string::npos) return r.violations.size();
  }
  FAIL("no invariant named like " << name_part);
  return 0;
}

std::string Report(const std::vector<chaos::InvariantResult>& results) {
  std::string out;
  for (const auto& r : results) {
    for (const auto& v : r.violations) out += r.name + ": " + v.detail + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("chaos: the same seed draws the same schedule, and a long one has every fault") {
  const auto shape = chaos::ShapeFor(kTwentyMinutes);
  const auto a = chaos::MakeSchedule(42, kTwentyMinutes, shape);
  const auto b = chaos::MakeSchedule(42, kTwentyMinutes, shape);
  const auto c = chaos::MakeSchedule(43, kTwentyMinutes, shape);
  REQUIRE(!a.empty());
  CHECK(chaos::Fingerprint(a) == chaos::Fingerprint(b));
  CHECK(chaos::Fingerprint(a) != chaos::Fingerprint(c));

  std::set<chaos::StepKind> faults;
  for (size_t i = 0; i < a.size(); ++i) {
    const chaos::Step& s = a[i];
    if (chaos::IsFault(s.kind)) faults.insert(s.kind);
    if (i > 0) CHECK(a[i - 1].at_ms <= s.at_ms);  // in time order
    CHECK(s.at_ms >= 0);
    for (const std::string& p : s.paintings) {  // inside the catalogue the rig makes
      const int n = std::stoi(p.substr(1));
      CHECK((n >= 1 && n <= shape.paintings));
    }
  }
  for (auto kind : {chaos::StepKind::kKillGateway, chaos::StepKind::kRestartGateway,
                    chaos::StepKind::kPgRestartFast, chaos::StepKind::kPgRestartImmediate,
                    chaos::StepKind::kStripeError, chaos::StepKind::kStripe429,
                    chaos::StepKind::kStripeHang, chaos::StepKind::kStripeDrop,
                    chaos::StepKind::kWebhookDrop, chaos::StepKind::kWebhookDuplicate,
                    chaos::StepKind::kWebhookHold, chaos::StepKind::kWebhookDelay}) {
    CHECK_MESSAGE(faults.count(kind) == 1, chaos::StepName(kind));
  }
}

TEST_CASE("chaos: a fake Stripe that gave no list fails the campaign, never an empty check") {
  // What the campaign reads after its steps: the fake Stripe's sessions, refunds, events.
  FakeStripe stripe;
  const json sessions = stripe.Control("GET", "/_test/sessions");
  CHECK(chaos::StripeRecords("/_test/sessions", 200, sessions) == sessions);
  // A Stripe that died, or answered something else: invariant 2 would have "checked 0".
  CHECK_THROWS_WITH(chaos::StripeRecords("/_test/sessions", 0, nullptr),
                    doctest::Contains("(no answer)"));
  CHECK_THROWS_WITH(chaos::StripeRecords("/_test/refunds", 500, json{{"error", "x"}}),
                    doctest::Contains("(status 500)"));
  CHECK_THROWS(chaos::StripeRecords("/_test/events", 200, json::object()));
}

TEST_CASE("chaos: the checker passes a clean shop and names every broken invariant") {
  {
    TestDatabase db;
    const std::string lapsed = Reserve(db, "p1");
    Age(db, lapsed);
    auto results = chaos::CheckEverything(Input(db));
    REQUIRE(results.size() == 7);
    CHECK_MESSAGE(Report(results).empty(), Report(results));
  }

  TestDatabase db;
  chaos::CheckInput in = Input(db);
  // 1. One painting sold twice.
  const std::string first = Reserve(db, "p1");
  Age(db, first);
  const std::string second = Reserve(db, "p1");
  REQUIRE(!second.empty());
  db.Exec("UPDATE reservations SET state = 'sold', sold_at = now() WHERE id IN ('" + first +
          "', '" + second + "')");
  // 2. A paid session nobody reserved, and a refund of nothing.
  in.stripe_sessions.push_back({{"id", "cs_test_orphan"},
                                {"payment_status", "paid"},
                                {"payment_intent", "pi_orphan"},
                                {"client_reference_id", "00000000-0000-4000-8000-000000000000"}});
  in.stripe_refunds.push_back({{"payment_intent", "pi_stray"}, {"amount", 100}});
  // 3. A hold that outlives the campaign's end.
  REQUIRE(!Reserve(db, "p2").empty());
  // 4. A 201 for a reservation the database never had.
  chaos::Answer told = Granted(chaos::StepKind::kCheckout, 1, "", 201);
  told.reservation_id = "00000000-0000-4000-8000-000000000001";
  in.answers.push_back(told);
  // 5. Credits from nowhere.
  db.Exec("INSERT INTO credit_accounts (id, balance) VALUES ('acct-0', 500)");
  // 6. A quota "yes" that was never counted.
  chaos::Answer yes = Granted(chaos::StepKind::kQuotaConsume, 2, "subj-0", 200);
  yes.body = {{"allowed", true}};
  in.answers.push_back(yes);
  // 7. One fencing token granted twice, the later grant after the earlier ended.
  for (int i : {3, 4}) {
    chaos::Answer lease = Granted(chaos::StepKind::kLeaseAcquire, i, "lease-0", 200);
    lease.token = 7;
    in.answers.push_back(lease);
  }

  const auto results = chaos::CheckEverything(in);
  REQUIRE(results.size() == 7);
  INFO(Report(results));
  for (const auto& r : results) CHECK_MESSAGE(!r.violations.empty(), r.name);
  CHECK(Report(results).find("p1 sold 2 times") != std::string::npos);
  CHECK(Report(results).find("pi_stray") != std::string::npos);
  CHECK(Report(results).find("acct-0: balance 500") != std::string::npos);
}

TEST_CASE(
    "chaos: a checkout whose client left may have made a hold after it left, the told ones not") {
  TestDatabase db;
  chaos::CheckInput in = Input(db);
  in.shape.pgbouncer = true;
  const std::string held = Reserve(db, "p3");
  REQUIRE(!held.empty());
  const double created = std::stod(db.Scalar(
      "SELECT extract(epoch FROM created_at)::float8 FROM reservations WHERE id = '" + held + "'"));
  // A checkout-like answer on [p3].
  const auto on_p3 = [](chaos::StepKind kind, int index, double started, double ended, int status) {
    chaos::Answer a = Timed(kind, index, 0, started, ended, status);
    a.step.paintings = {"p3"};
    return a;
  };
  // A buyer told 409 while the hold was made: on its own, that answer is a lie.
  in.answers.push_back(on_p3(chaos::StepKind::kCheckout, 1, created - 0.2, created + 0.2, 409));
  const auto lies = [](const std::vector<chaos::InvariantResult>& results) {
    return ViolationsOf(results, "no false");
  };
  REQUIRE(lies(chaos::CheckEverything(in)) == 1);
  // A client that left 5 s before the hold was made, while its request waited
  // for the database (a failover through PgBouncer): the hold may be its.
  in.answers.push_back(on_p3(chaos::StepKind::kDisconnect, 2, created - 5.1, created - 5.0, 0));
  CHECK(lies(chaos::CheckEverything(in)) == 0);
  // 15 s before: within PgBouncer's query wait (20 s), not within a shorter one
  // (5 s, the rest of the window being the acquire and Stripe deadlines).
  in.answers.back().started_unix = created - 15.1;
  in.answers.back().ended_unix = created - 15.0;
  CHECK(lies(chaos::CheckEverything(in)) == 0);
  in.shape.pgbouncer_query_wait_seconds = 5;
  CHECK(lies(chaos::CheckEverything(in)) == 1);
  // One that left long before anything could still have been working for it
  // explains nothing.
  in.answers.back().started_unix = created - 60;
  in.answers.back().ended_unix = created - 59.9;
  CHECK(lies(chaos::CheckEverything(in)) == 1);
}

TEST_CASE(
    "chaos: a sale paid after an operator's release holds from the sale on, not from the start") {
  // CI's campaign of seed 13641012457344394587: `release --force` of the first reservation
  // left its Stripe session open; a second reserved the painting and was released; then
  // the first session's payment landed and sold the painting (a late payment accepted).
  TestDatabase db;
  const std::string first = Reserve(db, "p5");
  Age(db, first);
  const std::string second = Reserve(db, "p5");
  REQUIRE(!second.empty());
  const auto at = [](double seconds) {
    return "now() - interval '1 minute' + interval '" + std::to_string(seconds) + " seconds'";
  };
  db.Exec("DELETE FROM audit_log WHERE action = 'release'");
  db.Exec("UPDATE reservations SET state = 'sold', created_at = " + at(0) +
          ", held_until = " + at(6) + ", sold_at = " + at(5) + ", updated_at = " + at(5) +
          " WHERE id = '" + first + "'");
  db.Exec("UPDATE reservations SET state = 'released', created_at = " + at(1.2) +
          ", held_until = " + at(7.2) + ", updated_at = " + at(4.8) + " WHERE id = '" + second +
          "'");
  db.Exec("INSERT INTO audit_log (at, actor, action, reservation_id, reason) VALUES (" + at(0.6) +
          ", 'paintlockctl', 'release', '" + first + "', 'chaos'), (" + at(4.8) +
          ", 'paintlockctl', 'release', '" + second + "', 'chaos')");
  const auto overlaps = [&] {
    const std::string report = Report(chaos::CheckEverything(Input(db)));
    INFO(report);
    std::size_t n = 0;
    for (auto pos = report.find("at once"); pos != std::string::npos;
         pos = report.find("at once", pos + 1)) {
      ++n;
    }
    return n;
  };
  CHECK(overlaps() == 0);  // held [0, 0.6] and from 5 on; the second [1.2, 4.8]
  // Sold at 2.5, while the second still held it: two holders at once.
  db.Exec("UPDATE reservations SET sold_at = " + at(2.5) + " WHERE id = '" + first + "'");
  CHECK(overlaps() == 1);
}

TEST_CASE("chaos: a quota decision answered 503 outcome_unknown may have been counted") {
  TestDatabase db;
  chaos::CheckInput in = Input(db);
  db.Exec(
      "INSERT INTO quota_usage (quota, subject, day, used) VALUES ('downloads', "
      "'subject:subj-0', (now() AT TIME ZONE 'UTC')::date, 1)");
  chaos::Answer lost = Granted(chaos::StepKind::kQuotaConsume, 2, "subj-0", 503);
  lost.code = "outcome_unknown";
  in.answers.push_back(lost);
  auto quota = [](const std::vector<chaos::InvariantResult>& results) {
    return ViolationsOf(results, "quota");
  };
  CHECK(quota(chaos::CheckEverything(in)) == 0);
  // A plain 503 ("nothing changed") cannot explain the count.
  in.answers.back().code = "unavailable";
  CHECK(quota(chaos::CheckEverything(in)) == 1);
}

TEST_CASE(
    "chaos: a checkout answered 503 outcome_unknown may have left its hold, a plain 503 not") {
  TestDatabase db;
  chaos::CheckInput in = Input(db);
  const std::string held = Reserve(db, "p4");
  REQUIRE(!held.empty());
  const double created = std::stod(db.Scalar(
      "SELECT extract(epoch FROM created_at)::float8 FROM reservations WHERE id = '" + held + "'"));
  chaos::Answer told = Timed(chaos::StepKind::kCheckout, 1, 0, created - 0.2, created + 0.2, 503);
  told.step.paintings = {"p4"};
  told.code = "stripe_unavailable";  // "nothing was reserved", and the hold is there
  in.answers.push_back(told);
  const auto lies = [](const std::vector<chaos::InvariantResult>& results) {
    return ViolationsOf(results, "no false");
  };
  CHECK(lies(chaos::CheckEverything(in)) == 1);
  // "A hold may remain": the truth, whichever way it went.
  in.answers.back().code = "outcome_unknown";
  CHECK(lies(chaos::CheckEverything(in)) == 0);
}

TEST_CASE(
    "chaos: an HA schedule kills the primary twice in 75 s, spaced, with writes on both gateways") {
  chaos::CampaignShape shape = chaos::ShapeFor(75000);
  const auto plain = chaos::MakeSchedule(42, 75000, shape);
  shape.ha = true;
  const auto a = chaos::MakeSchedule(42, 75000, shape);
  CHECK(chaos::Fingerprint(a) == chaos::Fingerprint(chaos::MakeSchedule(42, 75000, shape)));
  CHECK(chaos::Fingerprint(a) != chaos::Fingerprint(plain));

  std::vector<const chaos::Step*> kills;
  std::int64_t last_probe[2] = {0, 0}, widest_gap[2] = {0, 0};
  for (const chaos::Step& s : a) {
    CHECK_MESSAGE(s.kind != chaos::StepKind::kKillGateway, chaos::Describe(s));
    CHECK_MESSAGE(s.kind != chaos::StepKind::kPgRestartFast, chaos::Describe(s));
    CHECK_MESSAGE(s.kind != chaos::StepKind::kPgRestartImmediate, chaos::Describe(s));
    if (s.kind == chaos::StepKind::kKillPrimary) kills.push_back(&s);
    if (s.kind == chaos::StepKind::kStartNode) {
      REQUIRE(!kills.empty());
      CHECK(s.parent == kills.back()->index);         // each kill's node comes back
      CHECK(s.at_ms >= kills.back()->at_ms + 10000);  // once the failover is over
    }
    if (s.kind == chaos::StepKind::kTopUp && s.key == "acct-probe") {
      widest_gap[s.gw] = std::max(widest_gap[s.gw], s.at_ms - last_probe[s.gw]);
      last_probe[s.gw] = s.at_ms;
    }
  }
  REQUIRE(kills.size() == 2);
  CHECK(kills[1]->at_ms - kills[0]->at_ms >= 26000);
  for (int gw = 0; gw < 2; ++gw) {
    CHECK(widest_gap[gw] <= 400);
    CHECK(last_probe[gw] >= 74000);
  }
}

TEST_CASE("chaos: the failover check times each gateway's outage and finds a lost write") {
  std::vector<chaos::Answer> answers;
  chaos::Answer kill = Timed(chaos::StepKind::kKillPrimary, 10000, 0, 1000, 1000.2, 1);
  kill.body = {{"node", "127.0.0.1:5"}, {"killed_unix", 1000.1}};
  answers.push_back(kill);
  // Gateway A: a write acknowledged after the kill that began before it does not count; a
  // 503, then the first acknowledged write 6.5 s after the kill.
  answers.push_back(Timed(chaos::StepKind::kTopUp, 9999, 0, 999.9, 1000.5, 200));
  answers.push_back(Timed(chaos::StepKind::kCreditHold, 10010, 0, 1001, 1001.1, 503));
  answers.push_back(Timed(chaos::StepKind::kQuotaConsume, 10030, 0, 1003, 1006.6, 200));
  answers.push_back(Timed(chaos::StepKind::kTopUp, 10050, 0, 1005, 1007, 200));
  // Gateway B: a success page is no write; its writes all fail.
  answers.push_back(Timed(chaos::StepKind::kSuccessPage, 10020, 1, 1002, 1002.5, 200));
  answers.push_back(Timed(chaos::StepKind::kTopUp, 10021, 1, 1002, 1014, 0));

  const auto kills = chaos::MeasureOutages(answers);
  REQUIRE(kills.size() == 1);
  REQUIRE(kills[0].injected);
  REQUIRE(kills[0].gateway[0].seconds.has_value());
  CHECK(*kills[0].gateway[0].seconds == doctest::Approx(6.5));
  CHECK(kills[0].gateway[0].failed_meanwhile == 1);
  CHECK(!kills[0].gateway[1].seconds.has_value());
  CHECK(kills[0].gateway[1].failed_meanwhile == 1);

  TestDatabase db;
  chaos::CheckInput in = Input(db);
  in.answers = answers;
  chaos::Answer told = Timed(chaos::StepKind::kCheckout, 9990, 0, 999, 999.5, 201);
  told.reservation_id = "00000000-0000-4000-8000-000000000002";
  in.answers.push_back(told);
  const std::string kept = Reserve(db, "p1");
  chaos::Answer granted = Timed(chaos::StepKind::kReserve, 9980, 1, 998, 998.5, 201);
  granted.reservation_id = kept;
  in.answers.push_back(granted);
  const chaos::FailoverReport report = chaos::CheckFailover(in, 10);
  const std::string text = report.Render(10);
  INFO(text);
  REQUIRE(report.tallies.size() == 4);
  CHECK(report.tallies[0].acknowledged == 2);
  CHECK(report.tallies[0].before_kill == std::vector<int>{2});
  CHECK(report.tallies[0].lost == std::vector<std::string>{told.reservation_id});
  std::string violations;
  for (const auto& v : report.result.violations) violations += v.detail + "\n";
  CHECK(violations.find("gateway B acknowledged no write") != std::string::npos);
  CHECK(violations.find(told.reservation_id + " is lost") != std::string::npos);
  CHECK(violations.find("gateway A") == std::string::npos);  // 6.5 s is within 10 s
  CHECK(text.find("gateway A: outage 6.50 s") != std::string::npos);
}

TEST_CASE("chaos: a kill the cluster could not take is reported with its reason, not judged") {
  chaos::Answer made = Timed(chaos::StepKind::kKillPrimary, 10000, 0, 1000, 1000.2, 1);
  made.body = {{"node", "127.0.0.1:5"}, {"killed_unix", 1000.1}};
  chaos::Answer not_made = Timed(chaos::StepKind::kKillPrimary, 10300, 0, 1030, 1060, 0);
  not_made.body = {{"not_carried_out", "wait-ready: no primary with a sync standby within 30 s"}};
  // Writes that time the outage (quota decisions: no tally of their own).
  std::vector<chaos::Answer> recovered = {
      Timed(chaos::StepKind::kQuotaConsume, 10030, 0, 1003, 1007, 200),
      Timed(chaos::StepKind::kQuotaConsume, 10040, 1, 1004, 1008, 200),
  };
  TestDatabase db;
  auto violations = [&](const std::vector<chaos::Answer>& kills) {
    chaos::CheckInput in = Input(db);
    in.answers = recovered;
    in.answers.insert(in.answers.end(), kills.begin(), kills.end());
    const chaos::FailoverReport report = chaos::CheckFailover(in, 10);
    const std::string text = report.Render(10);
    INFO(text);
    CHECK(text.find("kill #10300: not carried out: wait-ready: no primary with a sync standby "
                    "within 30 s") != std::string::npos);
    CHECK(text.find("before kill #10300") == std::string::npos);
    std::string all;
    for (const auto& v : report.result.violations) all += v.detail + "\n";
    return all;
  };
  // Judged on the kill that was made: both gateways wrote again within 10 s.
  CHECK(violations({made, not_made}) == "");
  // No kill made: the run tested nothing, and says why.
  CHECK(violations({not_made}) ==
        "kill #10300 was not carried out (wait-ready: no primary with a sync standby within 30 "
        "s), and no other was\n");
}
