// The one way to release a reservation: freeing its paintings without ever
// taking a painting from a buyer who paid. Used by DELETE /v1/reservations/{id},
// by the checkout when Stripe fails before a session exists, and by
// `paintlockctl release`.
//
// The order is the gateway's take-over order (docs/ARCHITECTURE.md, "Take-over"):
//  1. Read the reservation: its state and the fence of each of its items.
//  2. Expire its Stripe session, so that the buyer can no longer pay. If
//     Stripe says the session is complete, apply that through
//     webhooks::Fulfilment (as the service's actor): the paintings are sold, or
//     a delayed payment is settling; refuse. If Stripe cannot be reached,
//     refuse: nothing changes.
//  3. Release in one statement (sql/migrations/0003: paintlock_admin_release)
//     that locks the rows and releases only if the state and the fences are
//     still those of step 1. A webhook that sold in between wins, and the
//     release reports it instead of undoing it.
// --force skips step 2: a payment that still arrives is then a late payment,
// accepted if the paintings are still free and refunded otherwise.
//
// The plan (step 1's decision) is a pure function, tested alone; carrying it
// out talks to Stripe and the database. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "locks/database.h"
#include "locks/operator_queries.h"
#include "stripe/client.h"
#include "webhooks/fulfilment.h"

namespace paintlock::checkout {

// What the database says of a reservation before anything is done.
using ReleaseSubject = locks::FencedReservation;

// Plans, decided from the database alone.
struct NothingToRelease {};    // released or refunded already
struct RefuseSold {};          // sold: after a refund elsewhere, `unsold` is the tool
struct RefuseRefundOwed {};    // refund_pending: `reconcile` pays it back first
struct ExpireSessionFirst {};  // held with a session: expire it at Stripe, then release
struct AskStripeFirst {};      // awaiting_payment: retrieve the session, apply, refuse
struct ReleaseNow {            // no session, or --force
  bool forced = false;
};
using ReleasePlan = std::variant<NothingToRelease, RefuseSold, RefuseRefundOwed, ExpireSessionFirst,
                                 AskStripeFirst, ReleaseNow>;

ReleasePlan PlanRelease(const ReleaseSubject& subject, bool force);
bool PlanNeedsStripe(const ReleasePlan& plan);

// What carrying out `plan` would do, in one sentence (for --dry-run). `seen`
// is the session as Stripe describes it now, when it was asked (else null).
std::string DescribePlan(const ReleasePlan& plan, const ReleaseSubject& subject,
                         const stripe::CheckoutSession* seen);

// Outcomes of carrying out a plan.
struct Released {
  bool forced = false;
  std::string stripe_status;  // what Stripe said of the session; empty when not asked
};
struct AlreadyOver {  // nothing held any more: released or refunded, before or meanwhile
  std::string state;
  std::string detail;
};
struct PaidRefused {  // the buyer paid, is paying, or is owed a refund: nothing released
  std::string state;
  std::string fulfilment_outcome;  // what applying Stripe's answer did, if it was applied
};
struct StripeUnreachable {  // no answer (or 409/429/5xx): nothing changed; may retry
  std::string detail;
};
struct StripeRefused {  // Stripe answered, but not with something we can act on
  std::string detail;
};
struct ChangedMeanwhile {  // the state or a fence moved since step 1, not to an end state
  std::string state;
};
using ReleaseOutcome = std::variant<Released, AlreadyOver, PaidRefused, StripeUnreachable,
                                    StripeRefused, ChangedMeanwhile, locks::DbFailure>;

// A release refused because the buyer paid or is paying (for the error table).
struct ReservationPaid {
  std::string state;  // sold | awaiting_payment | refund_pending
};

// Carries out plans for one actor ("gateway", "paintlockctl", …), which the
// database writes into the audit log with every release. Thread-safe.
class ReleaseService {
 public:
  // `stripe` and `fulfilment` may be null for a caller that only ever
  // releases without asking Stripe (then such plans answer StripeUnreachable).
  ReleaseService(locks::Database& db, stripe::StripeClient* stripe,
                 webhooks::Fulfilment* fulfilment, std::string actor)
      : db_(db), stripe_(stripe), fulfilment_(fulfilment), actor_(std::move(actor)) {}

  // Reads the subject; nullopt for an unknown reservation.
  locks::DbResult<std::optional<ReleaseSubject>> Load(const std::string& reservation_id);

  // Carries out `plan` for `subject`: see the steps above.
  ReleaseOutcome CarryOut(const ReleaseSubject& subject, const ReleasePlan& plan,
                          const std::string& reason);

  // Undoes a reservation this process made a moment ago and never attached
  // to a Stripe session (the session could not be created): released at once
  // with `reason_code` (stripe_unavailable, stripe_error, client_gone) as its reason. A
  // session Stripe made anyway is then a late payment (accepted or refunded).
  locks::DbResult<bool> Undo(const std::string& reservation_id, const std::string& reason_code);

  // Load, PlanRelease and CarryOut in one; nullopt for an unknown reservation.
  std::optional<ReleaseOutcome> Release(const std::string& reservation_id,
                                        const std::string& reason, bool force = false);

 private:
  locks::Database& db_;
  stripe::StripeClient* stripe_;
  webhooks::Fulfilment* fulfilment_;
  const std::string actor_;
};

}  // namespace paintlock::checkout
