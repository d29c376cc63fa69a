// Reading who paid and where to ship from a Checkout Session object.
//
// Stripe moved the shipping address of a session: API versions before
// 2025-03-31 give it as `shipping_details`, later ones as
// `collected_information.shipping_details` (paintlock pins a later one,
// stripe/https_client.h, but a webhook endpoint may be pinned to an older
// one). Both are read; the newer wins when both are present. Every field is
// bounded (kMaxBuyerFieldBytes, cut at a UTF-8 character boundary), so what
// Stripe sends can always be stored. Pure function: safe from any thread.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "stripe/client.h"

namespace paintlock::stripe {

inline constexpr std::size_t kMaxBuyerFieldBytes = 500;

// The buyer details of `session` (a checkout.session object); empty when it
// carries none (or is not an object). Never throws.
BuyerDetails BuyerDetailsOf(const nlohmann::json& session);

}  // namespace paintlock::stripe
