// The gateway's HTTP API (README.md, "API"): routes, request parsing, and the
// wiring of outcomes to responses through gateway/http_errors.h.
//
// Every response carries X-Request-Id (the caller's, when it sent a sane one)
// and every log line written while serving it has the same request_id. A
// handler that throws answers 500 with no internals and logs the request id.
// Thread-safe: handlers run on httplib's worker threads and share nothing
// but thread-safe collaborators.
#pragma once

#include <httplib.h>

#include "gateway/availability_stream.h"
#include "gateway/checkout.h"
#include "gateway/config.h"
#include "gateway/limit_routes.h"
#include "gateway/quota_routes.h"
#include "gateway/visitor.h"
#include "locks/catalogue.h"
#include "locks/database.h"
#include "locks/reservations.h"
#include "stripe/client.h"
#include "webhooks/fulfilment.h"

namespace paintlock::gateway {

struct Services {
  locks::Database& db;
  locks::Catalogue& catalogue;
  locks::ReservationStore& reservations;
  Checkout& checkout;
  webhooks::Fulfilment& fulfilment;
  stripe::StripeClient& stripe;
  VisitorIdentity& visitors;
  // Issue 7 (gateway/limit_routes.h): credit holds, rate limits, leases. Null:
  // those routes are not served; a null checkout_limit: checkouts are not
  // rate-limited per visitor.
  locks::CreditStore* credits = nullptr;
  locks::RateLimiter* rate_limiter = nullptr;
  locks::LeaseStore* leases = nullptr;
  CheckoutRateLimit* checkout_limit = nullptr;
  // Issue 6 (gateway/quota_routes.h): daily quotas, licences, subscription
  // webhooks. Null: those routes are not served, subscription events ignored.
  QuotaServices* quotas = nullptr;
  // Issue 5 (gateway/storefront_routes.h): live availability. Null: no
  // /v1/paintings/stream.
  AvailabilityStream* availability = nullptr;
};

class HttpApi {
 public:
  HttpApi(const Config& config, Services services) : config_(config), s_(services) {}

  // Installs routes, limits, request ids, logging and error handlers.
  void Install(httplib::Server& server);

 private:
  void Paintings(const httplib::Request& req, httplib::Response& res);
  void Painting(const httplib::Request& req, httplib::Response& res);
  void StartCheckout(const httplib::Request& req, httplib::Response& res);
  void CheckoutSuccess(const httplib::Request& req, httplib::Response& res);
  void CreateReservation(const httplib::Request& req, httplib::Response& res);
  void GetReservation(const httplib::Request& req, httplib::Response& res);
  void DeleteReservation(const httplib::Request& req, httplib::Response& res);
  void StripeWebhook(const httplib::Request& req, httplib::Response& res);
  void Ready(const httplib::Request& req, httplib::Response& res);

  // False (and the 401 written) unless the request carries the API key.
  bool Authorized(const httplib::Request& req, httplib::Response& res);

  const Config& config_;
  Services s_;
};

}  // namespace paintlock::gateway
