#include "gateway/http_errors.h"

#include <algorithm>

#include "base/http_text.h"
#include "base/json_text.h"
#include "base/log.h"
#include "checkout/checkout.h"
#include "gateway/limit_routes_parsing.h"
#include "gateway/request_parsing.h"
#include "locks/credits.h"
#include "locks/leases.h"
#include "locks/licenses.h"
#include "locks/lines.h"
#include "locks/quotas.h"
#include "locks/rate_limits.h"
#include "locks/reservations.h"
#include "webhooks/fulfilment.h"
#include "webhooks/signature.h"
#include "webhooks/subscriptions.h"

namespace paintlock::gateway {

namespace {

using nlohmann::json;

// "2026-12-02T14:05:09Z" → "14:05:09 UTC": what a buyer reads in a sentence.
std::string ClockTime(const std::string& rfc3339) {
  if (rfc3339.size() >= 19) return rfc3339.substr(11, 8) + " UTC";
  return rfc3339;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

HttpError Internal(const std::string& message) {
  return {500, "internal", message, json::object(), 0};
}

}  // namespace

// --- The request itself ------------------------------------------------------

HttpError InvalidRequest(const std::string& message, const std::string& param) {
  HttpError e{400, "invalid_request", message, json::object(), 0};
  if (!param.empty()) e.extra["param"] = param;
  return e;
}

HttpError ErrorFor(const FieldError& error) { return InvalidRequest(error.message, error.param); }

HttpError UnsupportedMediaType(const std::string& what_to_send) {
  return {415, "unsupported_media_type", what_to_send, json::object(), 0};
}

HttpError RequestTooLarge(const std::string& message) {
  return {413, "request_too_large", message, json::object(), 0};
}

HttpError HeaderTooLarge(const std::string& what, std::size_t limit) {
  return {431, "header_too_large", what + " is longer than " + std::to_string(limit) + " bytes.",
          json::object(), 0};
}

HttpError NoSuchEndpoint() {
  return {404, "not_found", "There is no such endpoint.", json::object(), 0};
}

HttpError CannotServe(int status) {
  if (status == 400) return InvalidRequest("The request could not be read.");
  if (status == 413) return RequestTooLarge();
  if (status == 404) return NoSuchEndpoint();
  return {status, "http_error", "The request could not be served.", json::object(), 0};
}

HttpError Unauthorized(bool api_key_configured, const std::string& why) {
  return {401, "unauthorized",
          api_key_configured ? why
                             : "The server API is disabled: set PAINTLOCK_API_KEY on the gateway.",
          json::object(), 0};
}

HttpError IdempotencyKeyRequired(const std::string& why) {
  return {400, "idempotency_key_required", why, {{"param", "Idempotency-Key"}}, 0};
}

HttpError IdempotencyKeyReused() {
  return {422,
          "idempotency_key_reused",
          "This Idempotency-Key was used for another request (another route or body); use a new "
          "key for a different request. Nothing was done.",
          {{"param", "Idempotency-Key"}},
          0};
}

HttpError IdempotencyKeyInUse(int retry_after_seconds) {
  return {409,
          "idempotency_key_in_use",
          "A request with this Idempotency-Key is being served right now; retry shortly to get "
          "its answer.",
          {{"param", "Idempotency-Key"}},
          retry_after_seconds};
}

HttpError OriginNotAllowed(const std::string& origin) {
  return {403,
          "origin_not_allowed",
          "This gateway does not accept cross-origin requests from " + origin +
              ": its operator can add the origin to PAINTLOCK_ALLOWED_ORIGINS.",
          {{"origin", origin}},
          0};
}

// --- Paintings, checkout and reservations ----------------------------------------

HttpError ErrorFor(const locks::Busy& busy) {
  HttpError e;
  e.status = 409;
  e.code = "painting_reserved";
  e.message = "Painting \"" + busy.painting +
              "\" is being bought by someone else right now. If they do not complete the "
              "purchase it will be free again at " +
              ClockTime(busy.free_at) + " (" + busy.free_at + ").";
  e.extra = {{"painting", busy.painting}, {"free_at", busy.free_at}};
  if (busy.line_position) {
    e.message += " You are number " + std::to_string(*busy.line_position) +
                 " in its line; your turn comes when the ones before you have had theirs.";
    e.extra["line_position"] = *busy.line_position;
  }
  e.retry_after_seconds = std::max(1, busy.retry_after_seconds);
  return e;
}

HttpError ErrorFor(const locks::Withdrawn& withdrawn) {
  return {409,
          "painting_withdrawn",
          "Painting \"" + withdrawn.painting + "\" is not for sale at the moment.",
          {{"painting", withdrawn.painting}},
          0};
}

HttpError ErrorFor(const locks::Sold& sold) {
  return {409,
          "painting_sold",
          "Painting \"" + sold.painting + "\" has been sold.",
          {{"painting", sold.painting}},
          0};
}

HttpError ErrorFor(const locks::Unknown& unknown) {
  return {404,
          "painting_not_found",
          "There is no painting \"" + unknown.painting + "\".",
          {{"painting", unknown.painting}},
          0};
}

HttpError StartingAfterNotFound(const std::string& painting) {
  HttpError e = InvalidRequest("starting_after names no painting (\"" + painting +
                                   "\"): pass the id of the last painting of the page before.",
                               "starting_after");
  e.code = "starting_after_not_found";
  return e;
}

HttpError ErrorFor(const checkout::MixedCurrency& mixed) {
  HttpError e = InvalidRequest(
      "The paintings in this cart are priced in different currencies; buy them separately.",
      "paintings");
  e.extra["currencies"] = mixed.currencies;
  return e;
}

HttpError ErrorFor(const checkout::BuyerLeft&) {
  // Nobody reads it: the status is for the access log and the metrics (nginx's
  // "client closed request"), not a server error.
  return {499, "client_gone",
          "The client left before its checkout started; its paintings were released.",
          json::object(), 0};
}

HttpError ErrorFor(const checkout::StripeFailed& failed) {
  if (failed.unavailable) {
    return {503, "stripe_unavailable",
            "The payment provider could not be reached. Nothing was reserved or charged; "
            "please try again in a moment.",
            json::object(), 5};
  }
  return {502,
          "stripe_error",
          "The payment provider refused to start the checkout. Nothing was reserved or charged.",
          {{"stripe_error_type", failed.stripe_type}},
          0};
}

HttpError ErrorFor(const checkout::ReservationPaid& paid) {
  return {409,
          "reservation_paid",
          "This reservation has been paid (or a payment is settling); it cannot be released.",
          {{"state", paid.state}},
          0};
}

HttpError ReservationNotFound() {
  return {404, "reservation_not_found", "There is no such reservation.", json::object(), 0};
}

HttpError SessionNotFound() {
  return {404, "session_not_found", "There is no such checkout session.", json::object(), 0};
}

HttpError PaymentRefunded() {
  return {409, "payment_refunded",
          "Another buyer completed the purchase of a painting in your cart before your payment "
          "arrived. Your payment has been refunded in full.",
          json::object(), 0};
}

HttpError CheckoutRateLimited(int retry_after_seconds) {
  // The bucket key is the visitor's keyed hash: harmless, but of no use to a buyer.
  return {429,
          "rate_limited",
          "Too many checkout attempts from your address. Please wait " +
              std::to_string(retry_after_seconds) +
              (retry_after_seconds == 1 ? " second" : " seconds") +
              " and try again. Nothing was reserved or charged.",
          {{"retry_after_seconds", retry_after_seconds}},
          retry_after_seconds};
}

HttpError NotReady() {
  return {503, "not_ready", "The database is not reachable.", json::object(), 2};
}

HttpError TooManyStreams() {
  return {503, "too_many_streams",
          "This gateway has as many live availability streams open as it allows; try again "
          "shortly.",
          json::object(), 10};
}

HttpError ShuttingDown() {
  return {503, "unavailable", "This gateway is shutting down; try again shortly.", json::object(),
          2};
}

// --- Waiting lines -------------------------------------------------------------

HttpError ErrorFor(const locks::PaintingFree& free) {
  return {409,
          "painting_free",
          "Painting \"" + free.painting +
              "\" is free right now and nobody is waiting for it: buy it instead of queueing.",
          {{"painting", free.painting}},
          0};
}

HttpError ErrorFor(const locks::AlreadyInLine& already) {
  return {409,
          "already_in_line",
          "You are already waiting in the line for painting \"" + already.painting +
              "\" (at most " + std::to_string(already.per_visitor) +
              " place(s) per visitor). Use the line token you were given.",
          {{"painting", already.painting}, {"per_visitor", already.per_visitor}},
          0};
}

HttpError ErrorFor(const locks::LineFull& full) {
  return {409,
          "line_full",
          "The line for painting \"" + full.painting + "\" is full (" +
              std::to_string(full.max_length) + " waiting). Try again later.",
          {{"painting", full.painting}, {"max_length", full.max_length}},
          0};
}

HttpError ErrorFor(const locks::LineTokenInvalid& invalid) {
  if (invalid.state.empty()) {
    return {404,
            "line_token_invalid",
            "No place in the line for painting \"" + invalid.painting +
                "\" has this line token. Join the line to get one.",
            {{"painting", invalid.painting}},
            0};
  }
  const std::string why = invalid.state == "passed"   ? "its turn came and went unused"
                          : invalid.state == "left"   ? "it left the line"
                          : invalid.state == "closed" ? "the line was closed"
                                                      : "its turn was used for a purchase";
  return {409,
          "line_token_invalid",
          "This line token no longer waits in the line for painting \"" + invalid.painting +
              "\": " + why + ".",
          {{"painting", invalid.painting}, {"state", invalid.state}},
          0};
}

// --- Database trouble ----------------------------------------------------------

HttpError ErrorFor(const locks::DbFailure& failure, Surface surface) {
  switch (failure.kind) {
    case locks::DbFailureKind::kContended:
      switch (surface) {
        case Surface::kPaintings:
          return {409, "painting_busy",
                  "Someone else is buying one of these paintings at this very moment. "
                  "Please try again in a second.",
                  json::object(), 1};
        case Surface::kQuotas:
          return {503, "quota_busy",
                  "Too many requests for this quota are being decided at this very moment; try "
                  "again in a second.",
                  json::object(), 1};
        case Surface::kLimits:
        case Surface::kWebhooks:
          return {503, "busy",
                  "Other requests are changing this right now. Nothing changed; retry in a "
                  "moment.",
                  json::object(), 1};
      }
      break;
    case locks::DbFailureKind::kUnavailable:
      if (failure.may_have_committed && surface == Surface::kPaintings) {
        return {503, "outcome_unknown",
                "The gateway lost its database part-way through. Your paintings may be held "
                "for you for a few minutes (the hold lapses by itself); nothing was charged. "
                "Please try again shortly.",
                json::object(), 2};
      }
      if (failure.may_have_committed) {
        // The write reached the database and the connection broke before its
        // answer: "nothing changed" could be a lie.
        return {503, "outcome_unknown",
                "The gateway lost its database part-way through: this change may or may not "
                "have been made. Read it back (GET) before you retry; a credit hold that was "
                "made lapses at its TTL unless committed.",
                json::object(), 2};
      }
      return {503, "unavailable",
              surface == Surface::kPaintings
                  ? "The gateway cannot reach its database right now. Nothing was reserved or "
                    "charged; please try again in a moment."
                  : "The gateway cannot reach its database right now. Nothing changed; retry in "
                    "a moment.",
              json::object(), 2};
    case locks::DbFailureKind::kInternal:
      break;
  }
  return Internal(
      "Something went wrong on our side. Nothing was charged. Quote the request id if you "
      "contact the seller.");
}

// --- Webhooks ------------------------------------------------------------------

HttpError ErrorFor(webhooks::SignatureCheck check) {
  return {400, "invalid_signature",
          std::string("Webhook signature refused: ") + webhooks::ToString(check) + ".",
          json::object(), 0};
}

HttpError MalformedEvent(const std::string& problem) {
  return InvalidRequest("Malformed event: " + problem);
}

HttpError ErrorFor(webhooks::FulfilmentFailure failure) {
  // Not applied (or a refund still owed): Stripe retries, and the retry is safe.
  if (failure == webhooks::FulfilmentFailure::kInternal) {
    return Internal("The event was not applied; retry later.");
  }
  return {503, "unavailable", "The event was not applied; retry later.", json::object(), 5};
}

HttpError ErrorFor(webhooks::SubscriptionFailure failure) {
  switch (failure) {
    case webhooks::SubscriptionFailure::kNotConfigured:
      return {503, "licenses_not_configured",
              "This gateway cannot issue licences (PAINTLOCK_LICENSE_SECRET is not set); the "
              "event was not applied. Retry later.",
              json::object(), 60};
    case webhooks::SubscriptionFailure::kDatabaseUnavailable:
      return {503, "unavailable", "The event was not applied; retry later.", json::object(), 5};
    case webhooks::SubscriptionFailure::kInternal:
      break;
  }
  return Internal("The event was not applied; retry later.");
}

// --- Rate limits -----------------------------------------------------------------

HttpError ErrorFor(const locks::RateLimited& limited) {
  return {429,
          "rate_limited",
          "Rate limit reached for \"" + limited.key + "\"; retry in " +
              std::to_string(limited.retry_after_seconds) + " s.",
          {{"allowed", false},
           {"key", limited.key},
           {"remaining", limited.remaining},
           {"retry_after_seconds", limited.retry_after_seconds}},
          limited.retry_after_seconds};
}

HttpError ErrorFor(const locks::UnknownBucket& unknown, const std::vector<std::string>& buckets) {
  return {400,
          "unknown_bucket",
          unknown.bucket.empty()
              ? "Name the bucket: a \"bucket\" field, or a key \"bucket:subject\". Configured "
                "buckets: " +
                    Joined(buckets) + "."
              : "There is no bucket \"" + unknown.bucket +
                    "\" (PAINTLOCK_RATE_LIMITS). Configured buckets: " + Joined(buckets) + ".",
          {{"param", "bucket"}},
          0};
}

HttpError ErrorFor(const locks::CostOverCapacity& over) {
  return {422,
          "cost_over_capacity",
          "A cost of " + std::to_string(over.cost) +
              " can never be taken from a bucket that holds at most " +
              std::to_string(over.capacity) + ".",
          {{"param", "cost"}, {"capacity", over.capacity}},
          0};
}

// --- Credits -----------------------------------------------------------------------

namespace {

HttpError CreditError(const locks::InsufficientCredits& o) {
  return {409,
          "insufficient_credits",
          "Only " + std::to_string(o.available) + " credits are available; " +
              std::to_string(o.requested) + " were asked for. Nothing was held.",
          {{"available", o.available}, {"requested", o.requested}},
          0};
}

HttpError CreditError(const locks::AccountNotFound&) {
  return {404, "account_not_found", "There is no such account.", json::object(), 0};
}

HttpError CreditError(const locks::HoldNotFound&) {
  return {404, "hold_not_found", "There is no such hold.", json::object(), 0};
}

HttpError CreditError(const locks::HoldWasReleased& o) {
  return {409,
          "hold_released",
          "The hold was released; it cannot be committed. Nothing moved.",
          {{"amount", o.amount}},
          0};
}

HttpError CreditError(const locks::HoldLapsed& o) {
  return {409,
          "hold_expired",
          "The hold expired at " + o.expired_at + " and its " + std::to_string(o.amount) +
              " credits are no longer available (" + std::to_string(o.available) +
              " are). Nothing was committed.",
          {{"expired_at", o.expired_at}, {"amount", o.amount}, {"available", o.available}},
          0};
}

HttpError CreditError(const locks::HoldWasCommitted& o) {
  return {409,
          "hold_committed",
          "The hold was committed; it cannot be released.",
          {{"amount", o.amount}},
          0};
}

HttpError CreditError(const locks::IdempotencyKeyReused& o) {
  return {422,
          "idempotency_key_reused",
          "This Idempotency-Key was already used on this account for a top-up of " +
              std::to_string(o.original_amount) +
              " credits; use a new key for a different top-up. Nothing moved.",
          {{"original_amount", o.original_amount}},
          0};
}

HttpError CreditError(const locks::BalanceLimitReached& o) {
  return {422,
          "balance_limit",
          "The balance would pass " + std::to_string(locks::kMaxCreditBalance) +
              " credits. Nothing moved.",
          {{"balance", o.balance}},
          0};
}

}  // namespace

HttpError ErrorForCredits(const CreditRefusal& refusal) {
  return std::visit([](const auto& r) { return CreditError(r); }, refusal);
}

// --- Leases -------------------------------------------------------------------------

HttpError ErrorFor(const locks::LeaseHeld& held, const std::string& name) {
  return {409,
          "lease_held",
          "Lease \"" + name + "\" is held by \"" + held.holder + "\" until " + held.expires_at +
              " unless they renew it.",
          {{"holder", held.holder}, {"expires_at", held.expires_at}},
          std::max(1, held.retry_after_seconds)};
}

HttpError ErrorFor(const locks::LeaseLost& lost, const std::string& doing) {
  HttpError e{409, "lease_lost",
              "This holder's grant of lease \"" + lost.name + "\" is no longer current (it " +
                  "lapsed, was released, or was granted again since); it cannot " + doing +
                  " it. Acquire it again for a new token.",
              json::object(), 0};
  e.extra["holder"] = lost.holder ? json(*lost.holder) : json(nullptr);
  if (!lost.expires_at.empty()) e.extra["expires_at"] = lost.expires_at;
  return e;
}

HttpError LeaseNotFound(const std::string& name) {
  return {404, "lease_not_found", "There is no lease \"" + name + "\".", json::object(), 0};
}

// --- Quotas and licences ------------------------------------------------------------

HttpError QuotaNotFound(const std::string& name, const std::vector<std::string>& quotas) {
  return {404,
          "quota_not_found",
          "There is no quota \"" + name.substr(0, 64) +
              "\". This gateway counts: " + Joined(quotas) + ".",
          {{"quota", name.substr(0, 64)}, {"quotas", quotas}},
          0};
}

HttpError ErrorFor(const locks::QuotaExceeded& e, const locks::QuotaPolicy& quota) {
  HttpError error;
  error.status = 429;
  error.code = "quota_exceeded";
  error.message = quota.limit == 0
                      ? "The \"" + quota.name + "\" quota is for licence holders only."
                      : "You have used all " + std::to_string(quota.limit) + " \"" + quota.name +
                            "\" allowed today. The count starts again at midnight (" +
                            quota.time_zone + "), at " + e.resets_at + ".";
  error.extra = {
      {"quota", quota.name}, {"used", e.used}, {"limit", e.limit}, {"resets_at", e.resets_at}};
  error.retry_after_seconds = std::max(1, e.retry_after_seconds);
  return error;
}

HttpError ErrorFor(const locks::LicenseInactive& inactive) {
  return {403,
          "license_inactive",
          "This licence's subscription is " + inactive.license.status +
              ": it no longer lifts the quota. Renew the subscription, or send the request "
              "without the key to use the free daily quota.",
          {{"status", inactive.license.status}},
          0};
}

HttpError LicenseInvalid() {
  return {401, "license_invalid",
          "This licence key is not valid. Check it, or send the request without it to use the "
          "free daily quota.",
          json::object(), 0};
}

HttpError LicenseNotFound() {
  return {404, "license_not_found", "There is no licence with this key.", json::object(), 0};
}

HttpError LicenseMissing() {
  return {401, "license_missing",
          "Send the licence key as Authorization: License <key> or as X-License-Key: <key>.",
          json::object(), 0};
}

// --- Writers ----------------------------------------------------------------------

void WriteJson(httplib::Response& res, int status, const nlohmann::json& body) {
  // Replacing invalid UTF-8 (with U+FFFD) rather than throwing: whatever a
  // request carried and a message quotes, the caller gets its answer.
  SetJsonBody(res, status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void SetJsonBody(httplib::Response& res, int status, std::string json) {
  res.status = status;
  res.body = std::move(json);
  res.headers.erase("Content-Type");  // as set_content does
  res.set_header("Content-Type", "application/json");
}

void WriteError(httplib::Response& res, const HttpError& error) {
  // The object `extra` + code, message and request_id (these three win over
  // extra's), written member by member in nlohmann's key order rather than
  // copied into a new document: every refused reserve writes one.
  const std::string& request_id = base::CurrentRequestId();
  const std::pair<std::string_view, std::string_view> own[] = {
      {"code", error.code}, {"message", error.message}, {"request_id", request_id}};
  const std::size_t own_count = request_id.empty() ? 2 : 3;
  std::size_t next_own = 0;
  std::string body;
  base::JsonObjectText out(body);
  const auto own_before = [&](const std::string* key) {  // null: all the rest
    for (; next_own < own_count && (!key || own[next_own].first < *key); ++next_own) {
      out.String(own[next_own].first, own[next_own].second);
    }
  };
  if (error.extra.is_object()) {
    for (const auto& [key, value] : error.extra.items()) {
      own_before(&key);
      if (next_own < own_count && own[next_own].first == key) continue;
      out.Raw(key, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  own_before(nullptr);
  out.End();
  if (error.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  SetJsonBody(res, error.status, std::move(body));
}

void WriteErrorPage(httplib::Response& res, const HttpError& error) {
  if (error.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  res.status = error.status;
  res.set_content(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><title>Not available</title>"
      "<style>body{font:17px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;"
      "padding:0 1em;color:#222}a{color:#134}</style></head><body><h1>Not available right now</h1>"
      "<p data-code=\"" +
          base::HtmlEscape(error.code) + "\">" + base::HtmlEscape(error.message) +
          "</p><p><a href=\"javascript:history.back()\">Back to the shop</a></p></body></html>",
      "text/html; charset=utf-8");
}

}  // namespace paintlock::gateway
