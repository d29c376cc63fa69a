// OutcomeTally: what concurrent callers were told, in three counts, for tests
// that check a budget is exact (a bucket's tokens, a quota's daily count, an
// account's balance) across threads and gateways. A classifier says what each
// answer was; the tally counts it, and keeps any unexpected answer to show.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "tests/support/harness.h"

namespace paintlock::testing {

enum class Outcome {
  kGranted,  // the request got what it asked for
  kRefused,  // the budget's own refusal, told as the API promises
  kOther,    // anything else
};

// POST /v1/ratelimits/{key}/take: granted is 200 allowed; refused is 429
// rate_limited with Retry-After ≥ 1 and as the body says. A non-empty `key`
// must be the answer's "key" too.
Outcome TakeOutcome(const Reply& r, const std::string& key = "");

// POST /v1/quotas/{name}/consume: granted is 200 allowed; refused is 429
// quota_exceeded with Retry-After ≥ 1.
Outcome ConsumeOutcome(const Reply& r);

// POST /v1/accounts/{id}/holds: granted is 201 with a hold id and its
// Location; refused is 409 insufficient_credits.
Outcome HoldOutcome(const Reply& r);

class OutcomeTally {
 public:
  // Thread-safe.
  void Add(Outcome outcome, const Reply& r);

  int granted() const { return granted_; }
  int refused() const { return refused_; }
  int other() const { return other_; }
  // "status body" of each answer counted as other, one a line.
  std::string others() const;

 private:
  std::atomic<int> granted_{0}, refused_{0}, other_{0};
  mutable std::mutex mu_;
  std::string others_;
};

}  // namespace paintlock::testing
