// The campaign's end: what the database, the fake Stripe's record and the
// clients' answers must say together (docs/ARCHITECTURE.md, "Invariants").
//
// Run after the faults stopped, reconcile ran and every hold could have
// lapsed. Reads the database on its own connection; pure otherwise.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chaos/ledger.h"
#include "chaos/schedule.h"

namespace paintlock::chaos {

struct Violation {
  std::string detail;
  // What the shortest history is about: painting ids, reservation ids,
  // session ids, accounts, lease names, subjects.
  std::vector<std::string> tags;
};

struct InvariantResult {
  std::string name;
  int checked = 0;  // how many things were looked at
  std::vector<Violation> violations;
};

struct CheckInput {
  std::string database_url;
  std::string invariants_sql;        // sql/checks/invariants.sql
  nlohmann::json stripe_sessions;    // GET /_test/sessions
  nlohmann::json stripe_refunds;     // GET /_test/refunds
  nlohmann::json stripe_events;      // GET /_test/events (read by the HA check only)
  std::vector<Answer> answers;       // Ledger::Done()
  std::vector<std::string> sampled;  // invariants.sql violations seen while the campaign ran
  int sampled_runs = 0;
  CampaignShape shape;
};

// The fake Stripe's answer to GET `path` (/_test/sessions, /_test/refunds, /_test/events):
// its list. Anything but 200 with a JSON array (status 0: no answer) throws, so that no
// check ever passes on an empty list the fake Stripe did not give.
nlohmann::json StripeRecords(const std::string& path, int status, nlohmann::json body);

// One result per invariant, in a fixed order. Never throws: a database that
// cannot be read is itself reported as a violation of the first invariant.
std::vector<InvariantResult> CheckEverything(const CheckInput& in);

}  // namespace paintlock::chaos
