// The gateway's HTTP API, one file per resource (README.md, "API"):
//
//   health_routes.cc       GET /healthz, /readyz
//   openapi_routes.cc      GET /v1/openapi.json (docs/openapi.json, compiled in)
//   painting_routes.cc     GET /v1/paintings, /v1/paintings/{id}
//   storefront_routes.cc   GET /paintlock.js, /v1/paintings/stream (live availability)
//   checkout_routes.cc     POST /v1/checkout, GET /v1/checkout/success
//   reservation_routes.cc  POST/GET/DELETE /v1/reservations (server API)
//   line_routes.cc         POST/GET/DELETE /v1/paintings/{id}/line (waiting lines)
//   webhook_routes.cc      POST /v1/webhooks/stripe
//   quota_routes.cc        /v1/quotas, /v1/licenses
//   credit_routes.cc       /v1/credits
//   limit_routes.cc        /v1/ratelimits, /v1/leases
//   metrics_routes.cc      GET /metrics (installed by main as PAINTLOCK_METRICS says)
// with middleware.cc (request ids, CORS, access log, last-resort errors,
// the API key) around them and http_errors.cc as the one error table.
//
// Routes hold references to services that outlive the server. Handlers run
// on the server's worker threads and share only thread-safe services.
#pragma once

#include <httplib.h>

#include "base/visitor.h"
#include "checkout/checkout.h"
#include "checkout/release.h"
#include "gateway/availability_stream.h"
#include "gateway/config.h"
#include "locks/catalogue.h"
#include "locks/credits.h"
#include "locks/database.h"
#include "locks/health.h"
#include "locks/leases.h"
#include "locks/lines.h"
#include "locks/rate_limits.h"
#include "locks/reservations.h"
#include "stripe/client.h"
#include "webhooks/fulfilment.h"

namespace paintlock::gateway {

struct QuotaServices;
class CheckoutRateLimit;
class IdempotentRequests;

struct Services {
  locks::Health& health;
  locks::Catalogue& catalogue;
  locks::ReservationStore& reservations;
  checkout::Checkout& checkout;
  checkout::ReleaseService& release;
  webhooks::Fulfilment& fulfilment;
  stripe::StripeClient& stripe;
  base::VisitorIdentity& visitors;
  // Null: those routes are not served.
  locks::CreditStore* credits = nullptr;
  locks::RateLimiter* rate_limiter = nullptr;
  locks::LeaseStore* leases = nullptr;
  // Null: checkouts are not rate-limited per visitor.
  CheckoutRateLimit* checkout_limit = nullptr;
  // Null: no quota or licence routes, and subscription webhooks are ignored.
  QuotaServices* quotas = nullptr;
  // Null: no /v1/paintings/stream.
  AvailabilityStream* availability = nullptr;
  // Null: no /v1/paintings/{id}/line.
  locks::LineStore* lines = nullptr;
  // Null: PAINTLOCK_ON_DATABASE_DOWN=refuse. Otherwise what checkouts are
  // priced from while the database is down (checkout/checkout.h).
  checkout::CatalogueSnapshot* offline_snapshot = nullptr;
  // Null: the Idempotency-Key header is not honoured (gateway/idempotency.h).
  IdempotentRequests* idempotency = nullptr;
};

// What every route file is given.
struct Api {
  const Config& config;
  Services services;
};

void InstallHealthRoutes(httplib::Server& server, const Api& api);
void InstallPaintingRoutes(httplib::Server& server, const Api& api);
void InstallCheckoutRoutes(httplib::Server& server, const Api& api);
void InstallReservationRoutes(httplib::Server& server, const Api& api);
void InstallWebhookRoutes(httplib::Server& server, const Api& api);
void InstallLineRoutes(httplib::Server& server, const Api& api);

}  // namespace paintlock::gateway
