// What every step of a campaign did and what every client was told.
//
// Thread-safe: steps run on many threads; Record and WaitFor take mu_.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chaos/schedule.h"

namespace paintlock::chaos {

// The result of one step. `status` is the HTTP status the client received
// (0: no answer — timeout, reset, the client hung up), or for a paintlockctl
// step its exit code; `skipped` when the step could not run (its parent did
// not get what it needed).
struct Answer {
  Step step;
  bool skipped = false;
  std::string skip_reason;
  std::int64_t started_ms = 0, ended_ms = 0;  // campaign clock
  double started_unix = 0, ended_unix = 0;    // wall clock, comparable with the database's now()
  int status = 0;
  std::string code;  // the error body's `code`, if any
  nlohmann::json body;
  // What the answer names (filled from the body or inherited from the parent).
  std::string reservation_id, session_id, hold_id;
  std::int64_t token = -1;
  // For the history: everything this step touches (paintings, ids, accounts, leases).
  std::vector<std::string> tags;
  std::string Outcome() const;  // "201", "409 painting_reserved", "no answer", "skipped: …"
};

class Ledger {
 public:
  explicit Ledger(size_t steps) : answers_(steps), done_(steps, false) {}
  void Record(Answer a);
  // The answer of step `index` once it has run; nullopt after `timeout`.
  std::optional<Answer> WaitFor(int index, std::chrono::milliseconds timeout);
  std::vector<Answer> Done() const;  // every recorded answer, by start time
  size_t Recorded() const;           // how many steps have an answer so far

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Answer> answers_;  // guarded by mu_
  std::vector<bool> done_;       // guarded by mu_
};

}  // namespace paintlock::chaos
