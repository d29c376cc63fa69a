// TakeTally: what concurrent callers of POST /v1/ratelimits/{key}/take were
// told, for tests that check a bucket's budget is exact (tests/ratelimit_test.cc
// across two gateways, tests/reactor_takes_test.cc on the reactor's path,
// tests/async_probe_test.cc against the probe).
#pragma once

#include <atomic>
#include <string>

#include "tests/support/harness.h"

namespace paintlock::testing {

struct TakeTally {
  std::atomic<int> allowed{0};  // 200 allowed
  std::atomic<int> limited{0};  // 429 rate_limited, Retry-After ≥ 1 and as the body says
  std::atomic<int> other{0};    // anything else, a limit without a sound Retry-After included

  // Thread-safe. A non-empty `key` must be the answer's "key" too.
  void Count(const Reply& r, const std::string& key = "") {
    const bool key_ok = key.empty() || r.json.value("key", "") == key;
    if (r.status == 200 && r.json.value("allowed", false) && key_ok) {
      ++allowed;
    } else if (r.status == 429 && r.json.value("code", "") == "rate_limited" && key_ok &&
               SoundRetryAfter(r)) {
      ++limited;
    } else {
      ++other;
    }
  }

 private:
  static bool SoundRetryAfter(const Reply& r) {
    const std::string retry = r.Header("Retry-After");
    if (retry.empty() || retry.find_first_not_of("0123456789") != std::string::npos) return false;
    return std::stoi(retry) >= 1 && r.json.value("retry_after_seconds", -1) == std::stoi(retry);
  }
};

}  // namespace paintlock::testing
