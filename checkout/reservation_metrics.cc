#include "checkout/reservation_metrics.h"

#include "base/metrics.h"

namespace paintlock::checkout {

namespace {

namespace metrics = base::metrics;

metrics::Counter& Granted() {
  static metrics::Counter& c = metrics::DefaultRegistry()
                                   .AddCounter("paintlock_reservations_granted_total",
                                               "Reservations granted (checkouts and the server "
                                               "API): every painting of the cart held.")
                                   .With({});
  return c;
}

metrics::Family<metrics::Counter>& Refused() {
  static metrics::Family<metrics::Counter>& f = metrics::DefaultRegistry().AddCounter(
      "paintlock_reservations_refused_total",
      "Reservation attempts that held nothing, by reason (the HTTP error code, or what failed).",
      {"reason"});
  return f;
}

}  // namespace

const char* RefusalReason(const Checkout::ReserveResult& result) {
  if (std::holds_alternative<locks::Granted>(result)) return "";
  if (std::holds_alternative<locks::Busy>(result)) return "painting_reserved";
  if (std::holds_alternative<locks::Sold>(result)) return "painting_sold";
  if (std::holds_alternative<locks::Withdrawn>(result)) return "painting_withdrawn";
  if (std::holds_alternative<locks::Unknown>(result)) return "painting_unknown";
  if (const auto* f = std::get_if<StripeFailed>(&result)) {
    return f->unavailable ? "stripe_unavailable" : "stripe_error";
  }
  switch (std::get<locks::DbFailure>(result).kind) {
    case locks::DbFailureKind::kUnavailable:
      return "database_unavailable";
    case locks::DbFailureKind::kContended:
      return "database_contended";
    default:
      return "internal";
  }
}

Checkout::ReserveResult CountReservation(Checkout::ReserveResult result) {
  if (std::holds_alternative<locks::Granted>(result)) {
    Granted().Inc();
  } else {
    Refused().With({RefusalReason(result)}).Inc();
  }
  return result;
}

void RegisterReservationMetrics() {
  Granted();
  for (const char* reason : {"painting_reserved", "painting_sold", "painting_unknown"}) {
    Refused().With({reason});
  }
}

}  // namespace paintlock::checkout
