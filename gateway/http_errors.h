// Every error the gateway answers, in one table: typed outcome → HTTP status,
// a stable `code`, and a human `message`. Bodies are JSON
//   {"code": "painting_reserved", "message": "…", "request_id": "…", …extra}
// and never carry internals (SQL, Stripe keys, stack traces). A new endpoint
// adds rows here, never a table of its own; the README's error table lists
// the codes.
//
// The outcome types are only declared here, so a route that includes this
// header does not pull in the stores, Stripe or the webhooks.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace paintlock::locks {
struct Busy;
struct Sold;
struct Withdrawn;
struct Unknown;
struct DbFailure;
struct RateLimited;
struct UnknownBucket;
struct CostOverCapacity;
struct QuotaExceeded;
struct QuotaPolicy;
struct LicenseInactive;
struct InsufficientCredits;
struct AccountNotFound;
struct HoldNotFound;
struct HoldWasReleased;
struct HoldLapsed;
struct HoldWasCommitted;
struct IdempotencyKeyReused;
struct BalanceLimitReached;
struct LeaseHeld;
struct LeaseLost;
struct LeaseNotFound;
struct PaintingFree;
struct AlreadyInLine;
struct LineFull;
struct LineTokenInvalid;
}  // namespace paintlock::locks
namespace paintlock::checkout {
struct MixedCurrency;
struct StripeFailed;
struct ReservationPaid;
struct BuyerLeft;
}  // namespace paintlock::checkout
namespace paintlock::webhooks {
enum class FulfilmentFailure;
enum class SubscriptionFailure;
enum class SignatureCheck;
}  // namespace paintlock::webhooks

namespace paintlock::gateway {

struct FieldError;

struct HttpError {
  int status = 500;
  std::string code;
  std::string message;
  nlohmann::json extra = nlohmann::json::object();
  int retry_after_seconds = 0;  // 0: no Retry-After header
};

// Which endpoints a database failure is reported to: the words differ (a
// credit hold says nothing about paintings), the codes do not.
enum class Surface { kPaintings, kLimits, kQuotas, kWebhooks };

// --- The request itself ----------------------------------------------------
HttpError InvalidRequest(const std::string& message, const std::string& param = "");
HttpError ErrorFor(const FieldError& error);
HttpError UnsupportedMediaType(const std::string& what_to_send);
HttpError RequestTooLarge(const std::string& message = "The request body is too large.");
HttpError HeaderTooLarge(const std::string& what, std::size_t limit);
HttpError NoSuchEndpoint();
HttpError CannotServe(int status);
// Authorization: Bearer <PAINTLOCK_API_KEY> missing or wrong. `why` says what
// the endpoint wanted it for; an unconfigured key says how to enable it.
HttpError Unauthorized(bool api_key_configured, const std::string& why);
HttpError IdempotencyKeyRequired(const std::string& why);
// An Idempotency-Key already names another request (another route or body).
HttpError IdempotencyKeyReused();
// Another request with this Idempotency-Key is being served right now.
HttpError IdempotencyKeyInUse(int retry_after_seconds);
HttpError OriginNotAllowed(const std::string& origin);

// --- Paintings, checkout and reservations ------------------------------------
HttpError ErrorFor(const locks::Busy& busy);
HttpError ErrorFor(const locks::Sold& sold);
HttpError ErrorFor(const locks::Withdrawn& withdrawn);
HttpError ErrorFor(const locks::Unknown& unknown);
HttpError ErrorFor(const checkout::MixedCurrency& mixed);
HttpError ErrorFor(const checkout::StripeFailed& failed);
HttpError ErrorFor(const checkout::BuyerLeft& left);
HttpError ErrorFor(const checkout::ReservationPaid& paid);
// GET /v1/paintings?starting_after= names no painting.
HttpError StartingAfterNotFound(const std::string& painting);
HttpError ReservationNotFound();
HttpError SessionNotFound();
// A late payment for a painting someone else bought meanwhile, refunded.
HttpError PaymentRefunded();
HttpError CheckoutRateLimited(int retry_after_seconds);
HttpError NotReady();
HttpError TooManyStreams();
HttpError ShuttingDown();

// --- Waiting lines -----------------------------------------------------------
HttpError ErrorFor(const locks::PaintingFree& free);
HttpError ErrorFor(const locks::AlreadyInLine& already);
HttpError ErrorFor(const locks::LineFull& full);
HttpError ErrorFor(const locks::LineTokenInvalid& invalid);

// --- Database trouble --------------------------------------------------------
HttpError ErrorFor(const locks::DbFailure& failure, Surface surface = Surface::kPaintings);

// --- Webhooks ---------------------------------------------------------------
HttpError ErrorFor(webhooks::SignatureCheck check);
HttpError MalformedEvent(const std::string& problem);
HttpError ErrorFor(webhooks::FulfilmentFailure failure);
HttpError ErrorFor(webhooks::SubscriptionFailure failure);

// --- Rate limits ------------------------------------------------------------
HttpError ErrorFor(const locks::RateLimited& limited);
HttpError ErrorFor(const locks::UnknownBucket& unknown, const std::vector<std::string>& buckets);
HttpError ErrorFor(const locks::CostOverCapacity& over);

// --- Credits ----------------------------------------------------------------
// Whatever a credit hold, commit, release or top-up was refused for.
using CreditRefusal =
    std::variant<locks::InsufficientCredits, locks::AccountNotFound, locks::HoldNotFound,
                 locks::HoldWasReleased, locks::HoldLapsed, locks::HoldWasCommitted,
                 locks::IdempotencyKeyReused, locks::BalanceLimitReached>;
// (Not an ErrorFor overload: converting to the variant needs the complete
// types, which the other routes do not include.)
HttpError ErrorForCredits(const CreditRefusal& refusal);

// --- Leases -----------------------------------------------------------------
HttpError ErrorFor(const locks::LeaseHeld& held, const std::string& name);
// `doing` is what the holder tried: "renew" or "release".
HttpError ErrorFor(const locks::LeaseLost& lost, const std::string& doing);
HttpError LeaseNotFound(const std::string& name);

// --- Quotas and licences ------------------------------------------------------
HttpError QuotaNotFound(const std::string& name, const std::vector<std::string>& quotas);
HttpError ErrorFor(const locks::QuotaExceeded& e, const locks::QuotaPolicy& quota);
HttpError ErrorFor(const locks::LicenseInactive& inactive);
HttpError LicenseInvalid();
HttpError LicenseNotFound();
HttpError LicenseMissing();

// --- Writers ----------------------------------------------------------------
// Writes the error as JSON (with the request id) and its headers.
void WriteError(httplib::Response& res, const HttpError& error);
// The same error as a small readable HTML page, for HTML form posts.
void WriteErrorPage(httplib::Response& res, const HttpError& error);
void WriteJson(httplib::Response& res, int status, const nlohmann::json& body);
// `json` (already JSON text) as the answer's body, moved in: httplib's
// set_content copies.
void SetJsonBody(httplib::Response& res, int status, std::string json);

}  // namespace paintlock::gateway
