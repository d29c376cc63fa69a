// What the paintlockctl tests (tests/admin_*_test.cc) share. They run a real
// paintlockctl process against a real PostgreSQL, the fake Stripe and, where
// real checkouts are needed, a gateway that receives the fake's webhooks;
// each checks stdout, stderr and the exit code apart, then the database, then
// the invariants (sql/checks/invariants.sql). The helpers below assert with
// doctest, so call them from a test case's thread unless the name says
// otherwise.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/harness.h"

namespace paintlock::testing {

// Most admin tests start from a database with a shop in front of it: a
// gateway and the fake Stripe delivering its webhooks; `stripe` is the fake's
// base URL, to hand to paintlockctl.
struct ShopFixture {
  TestDatabase db;
  Shop shop{db};
  const std::string stripe = shop.stripe.base();
};

// A loopback URL where nothing listens: Stripe unreachable.
std::string DeadStripe();

// paintlockctl ARGS with the test's database and Stripe; `env` overrides.
// Asserts nothing, so it may run on any thread.
CompletedProcess CtlOnAnyThread(TestDatabase& db, const std::string& stripe_base,
                                const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& env = {});

// The same on the test's thread: CHECKs that it finished, and a failing check
// prints the command, its exit code, stdout and stderr.
CompletedProcess Ctl(TestDatabase& db, const std::string& stripe_base,
                     const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {});

// True when `s` is exactly one newline-terminated line.
bool OneLine(const std::string& s);

// POST /v1/checkout for `paintings` (a JSON array of ids).
Reply Checkout(Shop& shop, const nlohmann::json& paintings);

// A checkout that must succeed: its reservation id and Stripe session id.
std::pair<std::string, std::string> Bought(Shop& shop, const nlohmann::json& paintings);

// The fake Stripe's session `id` (FAILs when there is none).
nlohmann::json Session(Shop& shop, const std::string& id);

// The state column of a reservation, and of a painting.
std::string State(TestDatabase& db, const std::string& reservation_id);
std::string PaintingState(TestDatabase& db, const std::string& painting);

// Lets a hold lapse: nothing but the clock's verdict changes.
void Age(TestDatabase& db, const std::string& reservation_id);

// Completes `session` at the fake Stripe as a buyer would.
void Pay(Shop& shop, const std::string& session, const std::string& payment_status = "paid");

// Waits until the fake Stripe has nothing left to deliver: every event was
// delivered, ran out of retries, or is one of the `dropped` this test asked
// it to drop (never attempted; an attempt in flight is not counted yet, so
// it shows as one more unattempted event).
void WebhooksSettled(Shop& shop, int dropped = 0);

// Writes `text` to build/test-logs/`name` and returns its path.
std::string WriteFile(const std::string& name, const std::string& text);

// A 7-minute hold on `painting` straight through SQL; its reservation id.
std::string Reserve(TestDatabase& db, const std::string& painting);

// The `condition` of each hold in `paintlockctl holds --json` output, in order.
std::vector<std::string> Conditions(const nlohmann::json& holds);

}  // namespace paintlock::testing
