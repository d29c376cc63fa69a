// What Stripe says of a payment after it was made — refunds of its charge
// and disputes (chargebacks) — applied to the sale it paid for
// (sql/migrations/0013_refunds_and_disputes.sql). The sale is found by its
// payment intent, never by painting. webhooks::Fulfilment decodes the events;
// this store only runs the statements. Thread-safe: every call runs on its
// own pooled connection.
#pragma once

#include <cstdint>
#include <string>

#include "locks/database.h"

namespace paintlock::locks {

// A Charge object as charge.refunded carries it.
struct ChargeRefundFacts {
  std::string charge_id;       // ch_…
  std::string payment_intent;  // pi_…
  std::int64_t amount_minor = 0;
  std::int64_t refunded_minor = 0;  // Stripe's amount_refunded: every refund so far
  std::string currency;
  bool fully_refunded = false;  // Stripe's `refunded`
};

// A Dispute object as charge.dispute.created / .closed carry it.
struct DisputeFacts {
  std::string dispute_id;      // dp_… (du_… for some payment methods)
  std::string charge_id;       // may be empty
  std::string payment_intent;  // pi_…
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string reason;  // fraudulent, product_not_received, …
  std::string status;  // needs_response, under_review, won, lost, warning_closed, …
};

struct ChargeApplied {
  // Refunds: duplicate, unknown_payment_intent, partial, unsold, refund_confirmed,
  // already_refunded, before_sale. Disputes: duplicate, unknown_payment_intent,
  // dispute_opened, dispute_closed, stale.
  std::string outcome;
  std::string reservation_id;  // empty when no sale is known for the payment
  std::string session_id;      // empty when none is known
};

class ChargeStore {
 public:
  explicit ChargeStore(Database& db) : db_(db) {}

  // Applies a charge.refunded event once (deduplicated by `event_id`),
  // audited as `actor`: a full refund of a sale puts its paintings back on
  // sale as `paintlockctl unsold` does; a partial one is audited only; a
  // refund of a payment no sale names yet is kept and applied when its
  // session completes. Availability listeners hear of the sale afterwards.
  DbResult<ChargeApplied> ApplyRefund(const ChargeRefundFacts& facts, const std::string& event_id,
                                      const std::string& event_type, const std::string& actor);

  // Applies a charge.dispute.created or .closed event once, created at
  // `event_created_unix` by Stripe's clock (newer statuses win; a closed
  // dispute stays closed). Nothing changes for the paintings.
  DbResult<ChargeApplied> ApplyDispute(const DisputeFacts& facts, const std::string& event_id,
                                       const std::string& event_type,
                                       std::int64_t event_created_unix, const std::string& actor);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
