// Every error the gateway answers, in one table: outcome → HTTP status, a
// stable `code`, and a human `message`. Bodies are JSON
//   {"code": "painting_reserved", "message": "…", "request_id": "…", …extra}
// and never carry internals (SQL, Stripe keys, stack traces).
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "gateway/checkout.h"

namespace paintlock::gateway {

struct HttpError {
  int status = 500;
  std::string code;
  std::string message;
  nlohmann::json extra = nlohmann::json::object();
  int retry_after_seconds = 0;  // 0: no Retry-After header
};

HttpError InvalidRequest(const std::string& message, const std::string& param = "");

// The table. Outcomes that are successes (Granted, CheckoutStarted) are not
// errors and must not be passed.
HttpError ErrorFor(const locks::Busy& busy);
HttpError ErrorFor(const locks::Sold& sold);
HttpError ErrorFor(const locks::Unknown& unknown);
HttpError ErrorFor(const MixedCurrency& mixed);
HttpError ErrorFor(const StripeFailed& failed);
HttpError ErrorFor(const locks::DbFailure& failure);

// Writes the error as JSON (with the request id) and its headers.
void WriteError(httplib::Response& res, const HttpError& error);
// The same error as a small readable HTML page, for HTML form posts.
void WriteErrorPage(httplib::Response& res, const HttpError& error);

void WriteJson(httplib::Response& res, int status, const nlohmann::json& body);

}  // namespace paintlock::gateway
