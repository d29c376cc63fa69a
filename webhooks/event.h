// Decoding Stripe webhook events (STRIPE.md, "Webhooks"). Parse only after the
// signature over the raw body was verified.
#pragma once

#include <optional>
#include <string>

#include "locks/charges.h"
#include "webhooks/fulfilment.h"
#include "webhooks/subscriptions.h"

namespace paintlock::webhooks {

struct WebhookEvent {
  std::string id;    // evt_…
  std::string type;  // checkout.session.completed, …
  std::int64_t created = 0;
  bool is_checkout_session = false;  // data.object is a checkout.session
  SessionFacts session;              // when is_checkout_session
  // customer.subscription.* events, decoded from the same parse.
  std::optional<SubscriptionEvent> subscription;
  // charge.refunded: the Charge; charge.dispute.created / .closed: the Dispute.
  std::optional<locks::ChargeRefundFacts> refund;
  std::optional<locks::DisputeFacts> dispute;
};

// The checkout events paintlock applies; others are acknowledged and logged.
bool IsHandledType(const std::string& type);

// nullopt and *error when the body is not a Stripe event (bad JSON, no id or
// type, a checkout event whose object has no session id, a subscription event
// DecodeSubscriptionEvent refuses, a charge event whose Charge or Dispute
// webhooks/charges.h refuses). The body is parsed once.
std::optional<WebhookEvent> DecodeEvent(const std::string& body, std::string* error);

}  // namespace paintlock::webhooks
