// What reservation attempts count (base/metrics.h):
//   paintlock_reservations_granted_total
//   paintlock_reservations_refused_total{reason}
// for checkouts and the server API alike (both reserve through
// Checkout::Reserve). Thread-safe.
#pragma once

#include "checkout/checkout.h"

namespace paintlock::checkout {

// The reason label of a refused attempt: painting_reserved, painting_sold,
// painting_unknown, stripe_unavailable or stripe_error (a take-over could not
// ask Stripe), database_unavailable, database_contended, internal.
const char* RefusalReason(const Checkout::ReserveResult& result);

// Counts `result` (granted, or refused by its reason) and returns it.
Checkout::ReserveResult CountReservation(Checkout::ReserveResult result);

// Registers the families, so a scrape shows them before the first attempt.
void RegisterReservationMetrics();

}  // namespace paintlock::checkout
