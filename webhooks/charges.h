// Decoding what Stripe says of a payment after it was made: charge.refunded
// (a Charge object) and charge.dispute.created / .closed (a Dispute object),
// STRIPE.md "Later corrections and additions". Both carry the payment intent
// by which webhooks::Fulfilment finds the sale (locks/charges.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "locks/charges.h"

namespace paintlock::webhooks {

// charge.refunded, charge.dispute.created or charge.dispute.closed.
bool IsChargeEventType(const std::string& type);
bool IsDisputeEventType(const std::string& type);

// The Charge of a charge.refunded event's data.object. nullopt and *error
// when it is not a charge with an id (ch_… or py_…), non-negative integer
// amount and amount_refunded, a boolean `refunded` and a currency. An absent
// or null payment_intent decodes with payment_intent empty: such a charge was
// not made by a Checkout Session, so no sale can be its.
std::optional<locks::ChargeRefundFacts> DecodeCharge(const nlohmann::json& object,
                                                     std::string* error);

// The Dispute of a charge.dispute.* event's data.object. nullopt and *error
// when it is not a dispute with an id, a non-negative integer amount, a
// currency, a reason and a status (lowercase words). `charge` and
// `payment_intent` may be ids or expanded objects; payment_intent empty when
// absent or null.
std::optional<locks::DisputeFacts> DecodeDispute(const nlohmann::json& object, std::string* error);

}  // namespace paintlock::webhooks
