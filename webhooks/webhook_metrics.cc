#include "webhooks/webhook_metrics.h"

#include "base/metrics.h"

namespace paintlock::webhooks {

namespace {

namespace metrics = base::metrics;

metrics::Family<metrics::Counter>& Events() {
  // Stripe sends a bounded set of event types; the capacity bounds the rest.
  static metrics::Family<metrics::Counter>& f = metrics::DefaultRegistry().AddCounter(
      "paintlock_webhook_events_total",
      "Stripe webhook deliveries answered, by event type (unverified: signature or body "
      "refused) and outcome (fulfilment outcome, ignored, or the error code answered).",
      {"type", "outcome"}, 512);
  return f;
}

metrics::Family<metrics::Counter>& LatePayments() {
  static metrics::Family<metrics::Counter>& f = metrics::DefaultRegistry().AddCounter(
      "paintlock_late_payments_total",
      "Payments completed after their hold lapsed: accepted (paintings still free) or "
      "refunded (another buyer had one).",
      {"outcome"});
  return f;
}

}  // namespace

void CountWebhookEvent(const std::string& type, const std::string& outcome) {
  Events().With({type, outcome}).Inc();
}

void CountLatePayment(bool refunded) {
  LatePayments().With({refunded ? "refunded" : "accepted"}).Inc();
}

void RegisterWebhookMetrics() {
  Events();
  LatePayments().With({"accepted"});
  LatePayments().With({"refunded"});
}

}  // namespace paintlock::webhooks
