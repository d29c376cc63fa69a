// paintlockctl sweep: hygiene, never safety (DESIGN.md, "Data"): availability
// is computed from the clock, so nothing depends on this running. It deletes
// finished stories in batches (sql/migrations/0003: paintlock_admin_sweep).
#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/table.h"
#include "locks/idempotency.h"
#include "locks/operator_queries.h"

namespace paintlock::admin {

namespace {

constexpr std::chrono::hours kDefaultAge{7 * 24};
// Stripe retries a webhook for up to 3 days: a row younger than that may
// still hear from Stripe.
constexpr std::chrono::hours kStripeRetryWindow{72};
constexpr int kBatch = 500;
constexpr int kKeyBatch = 5000;

constexpr const char* kSweepUsage =
    R"(Usage: paintlockctl sweep [--older-than DURATION] [--dry-run] [--json]

Deletes the rows of holds that ended more than DURATION ago (default 7d):
released and refunded reservations with their items, and lapsed holds that
have no Stripe session (or whose session is known to be expired); and clears
lock rows that still name a released reservation as holder; and deletes the
server API's Idempotency-Keys created more than 24 hours ago (whatever
DURATION says: a key is kept for its retries at least that long). Never touches a
sold, live, awaiting_payment or refund_pending reservation, nor one whose
Stripe session the database last knew as open (run `paintlockctl reconcile`
first; the sweep reports how many it kept for that reason). The stripe_events
and audit_log rows stay. Nothing depends on the sweep having run.

Options:
  --older-than DURATION   how long ago a hold must have ended (30m, 12h, 7d, 2w)
  --dry-run               count what would be deleted; delete nothing

Examples:
  paintlockctl sweep
  paintlockctl sweep --older-than 30d --dry-run
)";

int Sweep(CommandContext& ctx) {
  std::chrono::seconds age = kDefaultAge;
  if (auto text = ctx.args().Value("older-than")) {
    auto d = ParseDuration(*text);
    if (!d)
      return ctx.BadUsage("--older-than must be a duration such as 12h, 7d or 2w, got \"" + *text +
                          "\"");
    age = *d;
  }
  const bool dry_run = ctx.args().Has("dry-run");
  if (age < kStripeRetryWindow && !dry_run) {
    ctx.Warn("--older-than " + FormatDuration(age) +
             " is shorter than the 3 days Stripe retries webhooks for; a late event for a deleted "
             "reservation is recorded as unknown_session");
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;

  const long long seconds = age.count();
  locks::OperatorQueries queries(*db);
  locks::IdempotencyStore keys(*db);
  locks::SweepCounts c;
  long long keys_deleted = 0;
  if (dry_run) {
    auto counted = queries.SweepPreview(seconds);
    if (auto* f = std::get_if<locks::DbFailure>(&counted)) return ctx.FailDatabase(*f, "sweep");
    c = std::get<locks::SweepCounts>(counted);
    auto old_keys = keys.SweepPreview(locks::kIdempotencyKeyMinAge);
    if (auto* f = std::get_if<locks::DbFailure>(&old_keys)) return ctx.FailDatabase(*f, "sweep");
    keys_deleted = std::get<long long>(old_keys);
  } else {
    // Each batch is its own short transaction (and its own retry): a big
    // sweep never holds many rows locked at once, and an interrupted one
    // keeps what it did.
    for (;;) {
      auto batch = queries.SweepBatch(seconds, kBatch);
      if (auto* f = std::get_if<locks::DbFailure>(&batch)) {
        ctx.err() << "paintlockctl: sweep stopped after deleting " << c.reservations
                  << " reservation(s)\n";
        return ctx.FailDatabase(*f, "sweep");
      }
      const locks::SweepCounts& b = std::get<locks::SweepCounts>(batch);
      c.reservations += b.reservations;
      c.released += b.released;
      c.refunded += b.refunded;
      c.lapsed += b.lapsed;
      c.items += b.items;
      c.holders += b.holders;
      if (b.reservations == 0) break;
    }
    auto after = queries.SweepPreview(seconds);
    if (auto* f = std::get_if<locks::DbFailure>(&after)) return ctx.FailDatabase(*f, "sweep");
    c.kept_stripe_unknown = std::get<locks::SweepCounts>(after).kept_stripe_unknown;
    for (;;) {
      auto batch = keys.SweepBatch(locks::kIdempotencyKeyMinAge, kKeyBatch);
      if (auto* f = std::get_if<locks::DbFailure>(&batch)) return ctx.FailDatabase(*f, "sweep");
      keys_deleted += std::get<long long>(batch);
      if (std::get<long long>(batch) < kKeyBatch) break;
    }
  }
  if (ctx.json()) {
    ctx.PrintJson({{"dry_run", dry_run},
                   {"older_than_seconds", age.count()},
                   {"reservations_deleted", c.reservations},
                   {"released_deleted", c.released},
                   {"refunded_deleted", c.refunded},
                   {"lapsed_deleted", c.lapsed},
                   {"items_deleted", c.items},
                   {"holders_cleared", c.holders},
                   {"kept_stripe_unknown", c.kept_stripe_unknown},
                   {"idempotency_keys_deleted", keys_deleted}});
    return kExitOk;
  }
  ctx.out() << (dry_run ? "dry run: would delete" : "deleted")
            << " rows of holds that ended more than " << FormatDuration(age) << " ago\n";
  PrintFields(ctx.out(),
              {{"reservations", std::to_string(c.reservations) + " (" + std::to_string(c.released) +
                                    " released, " + std::to_string(c.refunded) + " refunded, " +
                                    std::to_string(c.lapsed) + " lapsed)"},
               {"items", std::to_string(c.items)},
               {"lock holders cleared", std::to_string(c.holders)},
               {"idempotency keys", std::to_string(keys_deleted) + " (older than 24h)"}});
  if (c.kept_stripe_unknown > 0) {
    ctx.out() << c.kept_stripe_unknown
              << " older reservation(s) kept: the database does not know how their Stripe "
              << "session ended; run `paintlockctl reconcile`, then sweep again\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterSweepCommand(CommandRegistry& registry) {
  registry.Add({"sweep",
                "delete rows of holds that ended long ago (hygiene; never needed for safety)",
                kSweepUsage,
                {{"older-than", true}, {"dry-run", false}},
                0,
                0,
                "sweep takes no arguments, only options",
                Sweep});
}

}  // namespace paintlock::admin
