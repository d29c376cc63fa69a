// Runs a schedule against a Rig: each step at its time on a thread of its
// own, follow-ups waiting (bounded) for the answer of the step they need,
// every answer recorded in the Ledger; then heals the rig (faults cleared,
// gateways and PostgreSQL up, delayed payments settled, every hold lapsed,
// reconcile run) so the checker sees the end state.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "chaos/ledger.h"
#include "chaos/rig.h"
#include "chaos/schedule.h"

namespace paintlock::chaos {

class Campaign {
 public:
  Campaign(Rig& rig, const std::vector<Step>& steps, const CampaignShape& shape,
           const std::atomic<bool>& interrupted);
  void Run(std::int64_t duration_ms);
  // Healing and waiting for every hold to lapse; returns what it did, for the ledger.
  std::vector<std::string> Settle();

  Ledger& ledger() { return ledger_; }
  const std::vector<std::string>& sampled_violations() const { return sampled_; }
  int sampled_runs() const { return sampled_runs_; }

 private:
  void Execute(const Step& s);
  void Sample();  // invariants.sql now, while the faults go on
  std::int64_t NowMs() const;

  Rig& rig_;
  const std::vector<Step>& steps_;
  CampaignShape shape_;
  const std::atomic<bool>& interrupted_;
  Ledger ledger_;
  std::chrono::steady_clock::time_point start_;
  std::string invariants_sql_;
  std::vector<std::string> sampled_;  // only the sampler thread writes it
  int sampled_runs_ = 0;
};

}  // namespace paintlock::chaos
