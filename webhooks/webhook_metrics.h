// What webhook handling and fulfilment count (base/metrics.h):
//   paintlock_webhook_events_total{type, outcome}
//   paintlock_late_payments_total{outcome="accepted"|"refunded"}
// Thread-safe.
#pragma once

#include <string>

namespace paintlock::webhooks {

// One webhook delivery answered. `type` is the event's type, or
// "unverified" when its signature or body was refused (nothing in an
// unverified body is trusted as a label); `outcome` is the fulfilment
// outcome, "ignored", or the error code answered.
void CountWebhookEvent(const std::string& type, const std::string& outcome);

// A payment that arrived after its hold lapsed: accepted (the paintings were
// still free) or refunded (another buyer had one; counted when the refund is
// recorded, so once per session).
void CountLatePayment(bool refunded);

// Registers the families, so a scrape shows them before the first event.
void RegisterWebhookMetrics();

}  // namespace paintlock::webhooks
