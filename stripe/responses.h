// Decoding Stripe's answers: a 2xx body into the object the call asked for,
// anything else into a StripeError carrying what Stripe said. Never throws for
// what the body holds.
#pragma once

#include <optional>
#include <string>

#include "stripe/client.h"

namespace paintlock::stripe {

// Decodes the 2xx answer `body` into *out. Returns an api_error StripeError
// with `status` when the body is not a Stripe object of the expected kind
// (a non-empty id and, when present, the right `object`).
std::optional<StripeError> DecodeResponse(int status, const std::string& body,
                                          CheckoutSession* out);
std::optional<StripeError> DecodeResponse(int status, const std::string& body, Refund* out);
// A list object ({"object":"list","data":[sessions],"has_more":…}).
std::optional<StripeError> DecodeResponse(int status, const std::string& body, SessionPage* out);

// The error of a non-2xx answer: Stripe's {"error":{type,code,message,param}}
// when present; otherwise api_error with a message naming the status.
StripeError ErrorFromBody(int status, const std::string& body);

}  // namespace paintlock::stripe
