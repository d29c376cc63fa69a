#include "chaos/schedule.h"

#include <algorithm>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

namespace paintlock::chaos {

const char* StepName(StepKind kind) {
  switch (kind) {
    case StepKind::kCheckout:
      return "checkout";
    case StepKind::kReserve:
      return "reserve";
    case StepKind::kDisconnect:
      return "disconnect";
    case StepKind::kPay:
      return "pay";
    case StepKind::kPayAsync:
      return "pay_async";
    case StepKind::kAsyncOutcome:
      return "async_outcome";
    case StepKind::kExpireSession:
      return "expire_session";
    case StepKind::kSuccessPage:
      return "success_page";
    case StepKind::kDelete:
      return "delete";
    case StepKind::kTopUp:
      return "topup";
    case StepKind::kCreditHold:
      return "credit_hold";
    case StepKind::kCreditCommit:
      return "credit_commit";
    case StepKind::kCreditRelease:
      return "credit_release";
    case StepKind::kQuotaConsume:
      return "quota_consume";
    case StepKind::kLeaseAcquire:
      return "lease_acquire";
    case StepKind::kLeaseRenew:
      return "lease_renew";
    case StepKind::kLeaseRelease:
      return "lease_release";
    case StepKind::kForceRelease:
      return "ctl_release_force";
    case StepKind::kReconcile:
      return "ctl_reconcile";
    case StepKind::kKillGateway:
      return "kill_gateway";
    case StepKind::kRestartGateway:
      return "restart_gateway";
    case StepKind::kPgRestartFast:
      return "pg_restart_fast";
    case StepKind::kPgRestartImmediate:
      return "pg_restart_immediate";
    case StepKind::kStripeError:
      return "stripe_500";
    case StepKind::kStripe429:
      return "stripe_429";
    case StepKind::kStripeHang:
      return "stripe_hang";
    case StepKind::kStripeDrop:
      return "stripe_drop";
    case StepKind::kWebhookDrop:
      return "webhook_drop";
    case StepKind::kWebhookDuplicate:
      return "webhook_duplicate";
    case StepKind::kWebhookHold:
      return "webhook_hold";
    case StepKind::kWebhookUnhold:
      return "webhook_unhold";
    case StepKind::kWebhookDelay:
      return "webhook_delay";
    case StepKind::kKillPrimary:
      return "kill_primary";
    case StepKind::kStartNode:
      return "start_node";
  }
  return "?";
}

bool IsFault(StepKind k) { return k >= StepKind::kKillGateway; }
bool IsOperator(StepKind k) { return k == StepKind::kForceRelease || k == StepKind::kReconcile; }

namespace {

// The generator. Every draw goes through `rng` in a fixed order, so the
// schedule is a function of the seed alone.
class Generator {
 public:
  Generator(std::uint64_t seed, std::int64_t duration_ms, const CampaignShape& shape)
      : rng_(seed), duration_ms_(duration_ms), shape_(shape) {}

  std::vector<Step> Run() {
    // Buyers and clients: one arrival every ~280 ms on average.
    for (std::int64_t t = Between(200, 600); t < duration_ms_; t += Between(60, 500)) {
      AddOperation(t);
    }
    // Faults and operator actions: one every ~3.5 s on average.
    for (std::int64_t t = Between(1500, 3000); t < duration_ms_; t += Between(1500, 5500)) {
      AddFault(t);
    }
    if (shape_.ha) AddFailovers();
    std::stable_sort(steps_.begin(), steps_.end(), [](const Step& a, const Step& b) {
      return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : a.index < b.index;
    });
    return steps_;
  }

 private:
  std::int64_t Between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool Chance(int percent) { return Between(1, 100) <= percent; }

  Step& Add(std::int64_t at, StepKind kind, int parent = -1) {
    Step s;
    s.index = static_cast<int>(steps_.size());
    s.at_ms = at;
    s.kind = kind;
    s.parent = parent;
    s.gw = static_cast<int>(Between(0, 1));
    steps_.push_back(s);
    return steps_.back();
  }

  std::vector<std::string> Cart(std::int64_t t) {
    // Mostly one painting, sometimes two, from the window at `t`; its first
    // few (hot) paintings draw most buyers.
    std::set<std::string> cart;
    const int n = Chance(75) ? 1 : 2;
    const int first = 1 + static_cast<int>(t * shape_.fresh_per_minute / 60000);
    const int last = std::min(shape_.paintings, first + shape_.window - 1);
    const int hot = first + std::max(3, shape_.window / 5) - 1;
    while (static_cast<int>(cart.size()) < n) {
      const int id = Chance(60) ? static_cast<int>(Between(first, std::min(hot, last)))
                                : static_cast<int>(Between(first, last));
      cart.insert("p" + std::to_string(id));
    }
    return {cart.begin(), cart.end()};
  }

  std::string Account() { return "acct-" + std::to_string(Between(0, shape_.accounts - 1)); }

  void AddOperation(std::int64_t t) {
    const std::int64_t hold_ms = shape_.hold_seconds * 1000;
    const int roll = static_cast<int>(Between(1, 100));
    if (roll <= 38) {
      const int parent = Add(t, StepKind::kCheckout).index;
      steps_[parent].paintings = Cart(t);
      const int fate = static_cast<int>(Between(1, 100));
      if (fate <= 30) {
        const int pay = Add(t + Between(300, 3000), StepKind::kPay, parent).index;
        if (Chance(40)) Add(steps_[pay].at_ms + Between(50, 1500), StepKind::kSuccessPage, parent);
      } else if (fate <= 40) {
        // A payment arriving after the hold lapsed: accepted or refunded.
        Add(t + hold_ms + Between(200, 4000), StepKind::kPay, parent);
      } else if (fate <= 50) {
        const std::int64_t at = t + Between(300, 3000);
        Add(at, StepKind::kPayAsync, parent);
        Add(at + Between(500, 6000), StepKind::kAsyncOutcome, parent).b = Chance(60) ? 1 : 0;
      } else if (fate <= 60) {
        Add(t + Between(200, 3000), StepKind::kDelete, parent);
      } else if (fate <= 66) {
        Add(t + Between(200, 3000), StepKind::kExpireSession, parent);
      } else if (fate <= 72) {
        Add(t + Between(200, 4000), StepKind::kForceRelease, parent);
        // The buyer still pays after the operator released: a late payment.
        if (Chance(60)) Add(t + Between(4100, 8000), StepKind::kPay, parent);
      }
      // Otherwise the buyer walks away: the hold lapses by itself.
    } else if (roll <= 46) {
      const int parent = Add(t, StepKind::kReserve).index;
      steps_[parent].paintings = Cart(t);
      steps_[parent].key = "chaos-" + std::to_string(parent);
      if (Chance(40)) Add(t + Between(200, 3000), StepKind::kDelete, parent);
    } else if (roll <= 51) {
      Step& s = Add(t, StepKind::kDisconnect);
      s.paintings = Cart(t);
      s.amount = Between(0, 400);
      s.b = Chance(30) ? 1 : 0;
    } else if (roll <= 59) {
      Step& s = Add(t, StepKind::kTopUp);
      s.key = Account();
      // Sometimes the same key again (a client retry): same amount, or not.
      if (!topup_keys_.empty() && Chance(25)) {
        const auto& [account, key, amount] =
            topup_keys_[static_cast<size_t>(Between(0, topup_keys_.size() - 1))];
        s.key = account;
        s.holder = key;
        s.amount = Chance(70) ? amount : amount + 1;
      } else {
        s.holder = "topup-" + std::to_string(s.index);
        s.amount = Between(10, 60);
        topup_keys_.emplace_back(s.key, s.holder, s.amount);
      }
    } else if (roll <= 72) {
      const int parent = Add(t, StepKind::kCreditHold).index;
      steps_[parent].key = Account();
      steps_[parent].amount = Between(5, 40);
      steps_[parent].b = Between(1, 4);  // ttl seconds
      const int fate = static_cast<int>(Between(1, 100));
      const std::int64_t at = t + Between(100, 6000);
      if (fate <= 50) {
        Add(at, StepKind::kCreditCommit, parent);
        if (Chance(20)) Add(at + Between(0, 50), StepKind::kCreditCommit, parent);
      } else if (fate <= 75) {
        Add(at, StepKind::kCreditRelease, parent);
      } else if (fate <= 90) {
        // A commit racing a release, on either gateway.
        Add(at, StepKind::kCreditCommit, parent);
        Add(at + Between(0, 20), StepKind::kCreditRelease, parent);
      }
    } else if (roll <= 84) {
      Step& s = Add(t, StepKind::kQuotaConsume);
      s.key = "subj-" + std::to_string(Between(0, shape_.quota_subjects - 1));
    } else {
      const int parent = Add(t, StepKind::kLeaseAcquire).index;
      steps_[parent].key = "lease-" + std::to_string(Between(0, shape_.leases - 1));
      steps_[parent].holder = "holder-" + std::to_string(Between(0, 3));
      steps_[parent].b = Between(1, 3);
      if (Chance(50)) Add(t + Between(300, 4000), StepKind::kLeaseRenew, parent).b = Between(1, 3);
      if (Chance(40)) Add(t + Between(300, 5000), StepKind::kLeaseRelease, parent);
    }
  }

  // Primary kills, spaced so the cluster has a sync standby again before the next (the kill
  // step also waits for one), each followed by the killed node's return; and top-ups on
  // both gateways every 200-400 ms, the writes that time each outage.
  void AddFailovers() {
    constexpr std::int64_t kFailoverRoom = 12000;  // a kill, its outage and the node's return
    for (std::int64_t t = Between(12000, 16000); t + kFailoverRoom < duration_ms_;
         t += Between(26000, 32000)) {
      const int kill = Add(t, StepKind::kKillPrimary).index;
      Add(t + Between(10000, 14000), StepKind::kStartNode, kill);
    }
    for (int gw = 0; gw < 2; ++gw) {
      for (std::int64_t t = Between(100, 400); t < duration_ms_; t += Between(200, 400)) {
        Step& s = Add(t, StepKind::kTopUp);
        s.gw = gw;
        s.key = "acct-probe";
        s.holder = "probe-" + std::to_string(s.index);
        s.amount = 1;
      }
    }
  }

  void AddFault(std::int64_t t) {
    const int roll = static_cast<int>(Between(1, 100));
    // The HA campaign times its outages against live gateways and one cluster: no gateway
    // kill, no restart of a single server.
    if (shape_.ha && roll <= 26) return;
    if (roll <= 14) {
      const int gw = static_cast<int>(Between(0, 1));
      Add(t, StepKind::kKillGateway).gw = gw;
      Add(t + Between(500, 4000), StepKind::kRestartGateway).gw = gw;
    } else if (roll <= 20) {
      Add(t, StepKind::kPgRestartFast);
    } else if (roll <= 26) {
      Add(t, StepKind::kPgRestartImmediate);
    } else if (roll <= 34) {
      Add(t, StepKind::kStripeError).amount = Between(1, 4);
    } else if (roll <= 41) {
      Add(t, StepKind::kStripe429).amount = Between(1, 4);
    } else if (roll <= 48) {
      Step& s = Add(t, StepKind::kStripeHang);
      s.amount = Between(1, 3);
      s.b = shape_.stripe_timeout_ms + Between(200, 2000);
    } else if (roll <= 55) {
      Step& s = Add(t, StepKind::kStripeDrop);
      s.amount = Between(1, 3);
      s.b = Chance(50) ? 1 : 0;
    } else if (roll <= 62) {
      Add(t, StepKind::kWebhookDrop).amount = Between(1, 3);
    } else if (roll <= 69) {
      Add(t, StepKind::kWebhookDuplicate).amount = Between(1, 4);
    } else if (roll <= 75) {
      Add(t, StepKind::kWebhookHold);
      Add(t + Between(500, 5000), StepKind::kWebhookUnhold);
    } else if (roll <= 82) {
      Step& s = Add(t, StepKind::kWebhookDelay);
      s.amount = Between(1, 4);
      s.b = Between(300, 3000);
    } else {
      Add(t, StepKind::kReconcile);
    }
  }

  std::mt19937_64 rng_;
  std::int64_t duration_ms_;
  CampaignShape shape_;
  std::vector<Step> steps_;
  std::vector<std::tuple<std::string, std::string, std::int64_t>> topup_keys_;
};

}  // namespace

CampaignShape ShapeFor(std::int64_t duration_ms) {
  CampaignShape shape;
  const std::int64_t minutes = (duration_ms + 59999) / 60000;
  shape.paintings = shape.window + static_cast<int>(minutes) * shape.fresh_per_minute;
  return shape;
}

std::vector<Step> MakeSchedule(std::uint64_t seed, std::int64_t duration_ms,
                               const CampaignShape& shape) {
  return Generator(seed, duration_ms, shape).Run();
}

std::size_t StepsWithin(const std::vector<Step>& steps, std::int64_t duration_ms) {
  return static_cast<std::size_t>(std::count_if(
      steps.begin(), steps.end(), [&](const Step& s) { return s.at_ms <= duration_ms; }));
}

std::string Describe(const Step& s) {
  std::ostringstream o;
  o << "#" << s.index << " " << StepName(s.kind);
  if (!IsFault(s.kind) || s.kind == StepKind::kKillGateway || s.kind == StepKind::kRestartGateway) {
    o << " gw" << (s.gw == 0 ? "A" : "B");
  }
  if (s.parent >= 0) o << " of #" << s.parent;
  if (!s.paintings.empty()) {
    o << " [";
    for (size_t i = 0; i < s.paintings.size(); ++i) o << (i ? "," : "") << s.paintings[i];
    o << "]";
  }
  if (!s.key.empty()) o << " " << s.key;
  if (!s.holder.empty()) o << " " << s.holder;
  if (s.amount) o << " n=" << s.amount;
  if (s.b) o << " b=" << s.b;
  return o.str();
}

std::uint64_t Fingerprint(const std::vector<Step>& steps) {
  // FNV-1a over each step's description and time.
  std::uint64_t h = 1469598103934665603ull;
  for (const Step& s : steps) {
    for (char c : Describe(s) + "@" + std::to_string(s.at_ms)) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace paintlock::chaos
