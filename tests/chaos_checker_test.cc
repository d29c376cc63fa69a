// The fault campaign's own parts (chaos/): its schedule is a pure function
// of the seed, and its checker can fail: shown a shop where each invariant
// is broken, it names every one; shown a clean shop, none. Without this a
// campaign that always says PASS would look just like a good one.
#include <doctest/doctest.h>

#include <set>

#include "chaos/checker.h"
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
