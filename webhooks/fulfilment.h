// One fulfilment function for everything Stripe says about a session.
//
// Webhooks, the success page, take-over and reconciliation all hand what they
// learnt of a Checkout Session to Fulfilment::Apply, which applies it in one
// transaction (sql/migrations/0002: paintlock_apply_session): sells, holds for
// a delayed payment, releases, or — for a payment that arrived after another
// buyer took a painting — refunds it through Stripe with an idempotency key
// derived from the session, so the buyer is refunded exactly once however
// often the event is delivered. Safe to call many times and concurrently for
// one session (Stripe's own guidance).
//
// What Stripe says of the payment afterwards — a refund of its charge, a
// dispute — goes to the sale the payment made, found by its payment intent
// (ApplyRefund, ApplyDispute; sql/migrations/0013): deduplicated by event id
// and order-safe in the same way. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "locks/charges.h"
#include "locks/database.h"
#include "locks/sessions.h"
#include "stripe/client.h"

namespace paintlock::webhooks {

using SessionFacts = locks::SessionFacts;

SessionFacts FactsOf(const stripe::CheckoutSession& s);

// The buyer details of a session as the sale keeps them.
locks::SaleContact ContactOf(const stripe::BuyerDetails& b);

// The offline cart in a session's metadata (webhooks/offline_sale.h), if
// any; metadata that claims one but cannot be read is logged as an error and
// the session is treated as an ordinary one.
std::optional<locks::OfflineCart> OfflineCartFrom(
    const std::string& session_id, const std::map<std::string, std::string>& metadata);

struct FulfilmentResult {
  // duplicate, unknown_session, sold, sold_late, already_sold, awaiting_payment,
  // released, refunded, already_refunded, no_change; for refunds and
  // disputes, locks::ChargeApplied's outcomes and no_payment_intent
  std::string outcome;
  std::string reservation_id;
};

enum class FulfilmentFailure {
  kDatabaseUnavailable,  // nothing applied: retry (webhooks answer 5xx)
  kRefundPending,        // decided and recorded, but Stripe did not confirm the refund yet
  kInternal,
};

using FulfilmentOutcome = std::variant<FulfilmentResult, FulfilmentFailure>;

class Fulfilment {
 public:
  Fulfilment(locks::Database& db, stripe::StripeClient& stripe,
             std::chrono::seconds delayed_payment_hold)
      : sessions_(db, delayed_payment_hold), charges_(db), contacts_(db), stripe_(stripe) {}

  // `event_id` empty when the facts come from retrieving the session (the
  // event type is then "session.retrieved"). `actor` names the caller in the
  // audit log: webhook, success_page, take_over, paintlockctl. The buyer
  // details of a complete session are kept first (locks::SaleContactStore),
  // so a failure to keep them is kDatabaseUnavailable and the redelivery
  // keeps them: a sale is never applied without its shipping address.
  FulfilmentOutcome Apply(const SessionFacts& facts, const std::string& event_id,
                          const std::string& event_type, const std::string& actor);

  // A charge.refunded event: a full refund of a sale puts its paintings back
  // on sale, a partial one is audited; one for a payment no sale names yet is
  // kept for when its session completes (outcome unknown_payment_intent,
  // logged). A charge with no payment intent is acknowledged and logged
  // (no_payment_intent): Checkout made no such payment. Never kRefundPending.
  FulfilmentOutcome ApplyRefund(const locks::ChargeRefundFacts& charge, const std::string& event_id,
                                const std::string& event_type);

  // A charge.dispute.created or .closed event, created at `event_created_unix`:
  // the sale is flagged with the dispute's status and reason, audited;
  // nothing changes for its paintings. Outcomes as ApplyRefund's.
  FulfilmentOutcome ApplyDispute(const locks::DisputeFacts& dispute, const std::string& event_id,
                                 const std::string& event_type, std::int64_t event_created_unix);

 private:
  locks::SessionStore sessions_;
  locks::ChargeStore charges_;
  locks::SaleContactStore contacts_;
  stripe::StripeClient& stripe_;
};

}  // namespace paintlock::webhooks
