// How many holds are in each condition (paintlock_hold_condition, as
// `paintlockctl holds` shows them), for GET /metrics. One statement
// (sql/queries/metrics_holds.sql), read at most once per `max_age` however
// many scrapers ask: between reads every caller gets the last answer.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "locks/database.h"

namespace paintlock::locks {

struct HoldCount {
  std::string condition;  // refund_pending, sold_unflagged, …, live
  bool stuck = false;     // one of the five conditions an operator acts on
  std::int64_t holds = 0;
};

class HoldCounts {
 public:
  HoldCounts(Database& db, std::chrono::milliseconds max_age) : db_(db), max_age_(max_age) {}

  // Every condition with at least one hold; a DbFailure when the database
  // could not be read (the failure is not cached: the next call tries again).
  DbResult<std::vector<HoldCount>> Read();

 private:
  Database& db_;
  const std::chrono::milliseconds max_age_;
  std::mutex mu_;  // held across the read: concurrent scrapes wait for one answer
  std::optional<std::vector<HoldCount>> last_;       // guarded by mu_
  std::chrono::steady_clock::time_point read_at_{};  // guarded by mu_
};

}  // namespace paintlock::locks
