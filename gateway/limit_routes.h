// Credit holds, rate limits and leases over HTTP (locks/CREDITS.md): the
// "one named owner of a piece of shared state" primitives beyond paintings.
// Server-to-server: every route needs the API key.
//
//   POST   /v1/ratelimits/{key}/take      {"cost"?, "bucket"?} → 200, or 429 + Retry-After
//   POST   /v1/leases/{name}              {"holder", "ttl_seconds"} → 200 + token,
//                                         or 409 lease_held
//   POST   /v1/leases/{name}/renew        {"holder", "token", "ttl_seconds"} → 200,
//                                         or 409 lease_lost
//   DELETE /v1/leases/{name}?holder=…&token=…
//   GET    /v1/leases/{name}
// plus the credit routes of gateway/credit_routes.h. A take without an
// Idempotency-Key is answered by the edge's reactor when the gateway has
// asynchronous connections (gateway/reactor_routes.h), with the functions below.
//
// The gateway also limits its own POST /v1/checkout per visitor
// (CheckoutRateLimit), before any reservation is attempted.
//
// Thread-safe: handlers share only thread-safe stores.
#pragma once

#include <httplib.h>

#include "base/visitor.h"
#include "gateway/credit_routes.h"
#include "gateway/http_errors.h"
#include "gateway/idempotency.h"
#include "gateway/limit_requests.h"
#include "gateway/limit_routes_parsing.h"
#include "gateway/middleware.h"
#include "locks/credits.h"
#include "locks/leases.h"
#include "locks/rate_limits.h"

namespace paintlock::gateway {

struct LimitRoutes {
  AuthorizeFn authorized;
  locks::CreditStore* credits = nullptr;       // null: its routes are not installed
  locks::RateLimiter* rate_limiter = nullptr;  // likewise
  locks::LeaseStore* leases = nullptr;         // likewise
  // Null: the Idempotency-Key header is not honoured (gateway/idempotency.h).
  IdempotentRequests* idempotency = nullptr;
};

void InstallLimitRoutes(httplib::Server& server, const LimitRoutes& routes);

// The take's route, and its two halves around the statement (shared by the
// worker's handler and the reactor's, gateway/reactor_routes.h).
inline constexpr const char* kRateLimitTakeRoute = R"(/v1/ratelimits/([^/]+)/take)";
struct TakeCall {
  std::string key;  // as in the path (req.matches[1])
  TakeRequest request;
};
// False with the 4xx written when the key or the body is not a take.
bool ReadTake(const httplib::Request& req, httplib::Response& res, TakeCall* call);
void WriteTake(const locks::RateLimiter& limiter, const locks::TakeOutcome& outcome,
               httplib::Response& res);
// A granted take's body: the bytes WriteJson gives the object {allowed: true,
// key, remaining}, written without building the object (the answer the
// gateway writes most often; WriteTake uses it).
std::string AllowedTakeBody(const std::string& key, std::int64_t remaining);

// The per-visitor limit on POST /v1/checkout: one token of the "checkout"
// bucket per attempt, keyed by base::VisitorIdentity (an HMAC of the client
// address, never the address). Wired only when enabled
// (PAINTLOCK_CHECKOUT_RATE_LIMIT). Thread-safe.
class CheckoutRateLimit {
 public:
  CheckoutRateLimit(locks::RateLimiter& limiter, const base::VisitorIdentity& visitors)
      : limiter_(limiter), visitors_(visitors) {}

  // True when the checkout may go on. Otherwise false with a 429 written
  // (JSON, or a small HTML page for a form post) carrying Retry-After. If the
  // limit cannot be decided (database trouble), the checkout goes on: the
  // reservation that follows reports that trouble itself.
  bool Admit(const httplib::Request& req, httplib::Response& res);

 private:
  locks::RateLimiter& limiter_;
  const base::VisitorIdentity& visitors_;
};

// What the checkout limit does with a take: admit or refuse, and what it
// must log. Anything but a clear allow or limit admits the checkout (the limit
// is a safety net, not a gate) but is never silent: a misconfigured bucket or
// an undecided take names an event to log.
struct AdmitDecision {
  bool admit = true;
  int retry_after_seconds = 0;  // when refused
  std::string log_event;        // empty: nothing to log
  std::string why;
};
AdmitDecision DecideAdmission(const locks::TakeOutcome& outcome);

}  // namespace paintlock::gateway
