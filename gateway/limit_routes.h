// Credit holds, rate limits and leases over HTTP (locks/CREDITS.md): the
// "one named owner of a piece of shared state" primitives beyond paintings.
// Server-to-server: every route needs the API key.
//
//   POST   /v1/ratelimits/{key}/take      {"cost"?, "bucket"?} → 200, or 429 + Retry-After
//   POST   /v1/leases/{name}              {"holder", "ttl_seconds"} → 200 + token, or 409
//   lease_held POST   /v1/leases/{name}/renew        {"holder", "token", "ttl_seconds"} → 200, or
//   409 lease_lost DELETE /v1/leases/{name}?holder=…&token=… GET    /v1/leases/{name}
// plus the credit routes of gateway/credit_routes.h.
//
// The gateway also limits its own POST /v1/checkout per visitor
// (CheckoutRateLimit), before any reservation is attempted.
//
// Thread-safe: handlers share only thread-safe stores.
#pragma once

#include <httplib.h>

#include "gateway/credit_routes.h"
#include "gateway/http_errors.h"
#include "gateway/limit_routes_parsing.h"
#include "gateway/visitor.h"
#include "locks/credits.h"
#include "locks/leases.h"
#include "locks/rate_limits.h"

namespace paintlock::gateway {

struct LimitRoutes {
  AuthorizeFn authorized;
  locks::CreditStore* credits = nullptr;       // null: its routes are not installed
  locks::RateLimiter* rate_limiter = nullptr;  // likewise
  locks::LeaseStore* leases = nullptr;         // likewise
};

void InstallLimitRoutes(httplib::Server& server, const LimitRoutes& routes);

// The per-visitor limit on POST /v1/checkout: one token of the "checkout"
// bucket per attempt, keyed by VisitorIdentity (an HMAC of the client
// address, never the address). Wired only when enabled
// (PAINTLOCK_CHECKOUT_RATE_LIMIT). Thread-safe.
class CheckoutRateLimit {
 public:
  CheckoutRateLimit(locks::RateLimiter& limiter, const VisitorIdentity& visitors)
      : limiter_(limiter), visitors_(visitors) {}

  // True when the checkout may go on. Otherwise false with a 429 written
  // (JSON, or a small HTML page for a form post) carrying Retry-After. If the
  // limit cannot be decided (database trouble), the checkout goes on: the
  // reservation that follows reports that trouble itself.
  bool Admit(const httplib::Request& req, httplib::Response& res);

 private:
  locks::RateLimiter& limiter_;
  const VisitorIdentity& visitors_;
};

// Shared by the credit, rate-limit and lease handlers.
HttpError ErrorForField(const FieldError& error);
// Database trouble in words that fit these endpoints (nothing about paintings).
HttpError ErrorForLimits(const locks::DbFailure& failure);
// The request's media type (lowercase, without parameters).
std::string RequestMediaType(const httplib::Request& req);

}  // namespace paintlock::gateway
