// The fault campaign's schedule: every operation and every fault of a run,
// with the moment it starts, drawn up front from one seed.
//
// Contract: MakeSchedule(seed, duration) is a pure function of its arguments,
// so the same seed replays the same list of steps (kinds, times, targets,
// amounts). What a step finds when it runs (which answers its parent got,
// how concurrent clients interleave on the wall clock) may differ between
// runs; a step whose parent did not get what it needs is recorded as skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paintlock::chaos {

enum class StepKind {
  // Buyers and server-to-server clients.
  kCheckout,       // POST /v1/checkout {paintings} on gateway `gw`
  kReserve,        // POST /v1/reservations {paintings, buyer: tag}
  kDisconnect,     // a checkout whose client hangs up after `amount` ms (partial body if b)
  kPay,            // the buyer of `parent` pays at the fake Stripe (paid)
  kPayAsync,       // … pays with a delayed method (complete, unpaid)
  kAsyncOutcome,   // the delayed payment of `parent` settles (b: 1 succeeded, 0 failed)
  kExpireSession,  // the fake Stripe expires `parent`'s session as if its time passed
  kSuccessPage,    // GET /v1/checkout/success for `parent`'s session
  kDelete,         // DELETE /v1/reservations/{parent's id}
  kTopUp,          // POST /v1/accounts/{account}/credits {amount}, Idempotency-Key key
  kCreditHold,     // POST /v1/accounts/{account}/holds {amount, ttl_seconds: b}
  kCreditCommit,   // POST /v1/holds/{parent's hold}/commit
  kCreditRelease,  // POST /v1/holds/{parent's hold}/release
  kQuotaConsume,   // POST /v1/quotas/downloads/consume {subject: key}
  kLeaseAcquire,   // POST /v1/leases/{name: key} {holder: holder, ttl_seconds: b}
  kLeaseRenew,     // POST /v1/leases/{name}/renew with `parent`'s token
  kLeaseRelease,   // DELETE /v1/leases/{name}?holder&token from `parent`
  // Operator actions.
  kForceRelease,  // paintlockctl release {parent's reservation} --force
  kReconcile,     // paintlockctl reconcile
  // Faults.
  kKillGateway,         // SIGKILL gateway `gw`
  kRestartGateway,      // start gateway `gw` again on its port
  kPgRestartFast,       // PostgreSQL stop -m fast, start
  kPgRestartImmediate,  // PostgreSQL stop -m immediate (a crash), start
  kStripeError,         // the next `amount` Stripe API calls answer 500
  kStripe429,           // … answer 429
  kStripeHang,          // … wait b ms (past the gateway's timeout), then run
  kStripeDrop,          // … lose their answer (b: after the work was done)
  kWebhookDrop,         // the next `amount` webhooks are never delivered
  kWebhookDuplicate,    // … delivered twice
  kWebhookHold,         // deliveries queue up until kWebhookUnhold (delayed, in order)
  kWebhookUnhold,
  kWebhookDelay,  // the next `amount` webhooks wait b ms in the relay (reordered)
  // Faults of the highly available cluster (CampaignShape::ha).
  kKillPrimary,  // once a sync standby is ready: SIGKILL the primary node (Patroni and PostgreSQL)
  kStartNode,    // bring every killed node back (it rejoins as a replica)
};

const char* StepName(StepKind kind);
bool IsFault(StepKind kind);
bool IsOperator(StepKind kind);

struct Step {
  int index = 0;
  std::int64_t at_ms = 0;  // from the start of the campaign
  StepKind kind = StepKind::kCheckout;
  int gw = 0;       // 0 or 1
  int parent = -1;  // the step whose answer this one needs
  std::vector<std::string> paintings;
  std::string key;     // account, idempotency key, subject, lease name, buyer tag
  std::string holder;  // lease holder; the top-up's idempotency key
  std::int64_t amount = 0;
  std::int64_t b = 0;
};

struct CampaignShape {
  int paintings = 30;  // the catalogue: p1 … pN (ShapeFor sizes it to the run)
  // Buyers choose among `window` paintings (a few hot ones first), a window
  // that moves on by `fresh_per_minute` a minute, so a long run never sells
  // out and every minute has contention.
  int window = 30;
  int fresh_per_minute = 15;
  int accounts = 3;        // acct-0 …
  int quota_subjects = 4;  // subj-0 …
  int quota_limit = 5;
  int leases = 2;        // lease-0 …
  int hold_seconds = 6;  // PAINTLOCK_HOLD_SECONDS of both gateways
  int stripe_timeout_ms = 1500;
  // Both gateways' STRIPE_DEADLINE_MS: one Stripe call, retries included.
  int stripe_deadline_ms() const { return 3 * stripe_timeout_ms; }
  // The database is a Patroni cluster (fixtures/ha/cluster.sh) reached through a multi-host
  // URL: the faults kill its primary node instead of restarting one PostgreSQL, no gateway is
  // killed, and each gateway gets a top-up every few hundred ms, so an outage is measured
  // to a fraction of a second.
  bool ha = false;
  // With ha: the gateways' pools go through PgBouncer in transaction pooling
  // (fixtures/ha/pgbouncer.sh, unnamed statements), their LISTEN straight to the cluster. The
  // schedule does not change.
  bool pgbouncer = false;
  // PgBouncer's query_wait_timeout: how long a statement may wait in its queue for a server
  // (fixtures/ha/pgbouncer.sh, PAINTLOCK_PGBOUNCER_QUERY_WAIT_SECONDS).
  int pgbouncer_query_wait_seconds = 20;
};

// The default shape, with a catalogue big enough for the window to move for
// `duration_ms`.
CampaignShape ShapeFor(std::int64_t duration_ms);

// Every step of a run of `duration_ms`, sorted by at_ms (ties by index). Without shape.ha the
// schedule of a seed is the one it always was.
std::vector<Step> MakeSchedule(std::uint64_t seed, std::int64_t duration_ms,
                               const CampaignShape& shape);

// How many of `steps` a run of `duration_ms` starts: a child step (a payment
// after its checkout, say) may fall after the end, and is never run.
std::size_t StepsWithin(const std::vector<Step>& steps, std::int64_t duration_ms);

// A hash of the schedule's content: equal for equal seeds, printed in the
// ledger so two runs can be seen to have replayed the same schedule.
std::uint64_t Fingerprint(const std::vector<Step>& steps);

std::string Describe(const Step& s);

}  // namespace paintlock::chaos
