// The form body of POST /v1/checkout/sessions (base/form.h's wire format).
//
// Pure function, no state: safe from any thread.
#pragma once

#include "base/form.h"
#include "stripe/client.h"

namespace paintlock::stripe {

// The fields of POST /v1/checkout/sessions for `p`: mode=payment, one
// quantity-1 `price_data` line per item, then success_url, cancel_url,
// expires_at, client_reference_id, metadata[...], then what the buyer is asked
// for (shipping_address_collection[allowed_countries][i],
// phone_number_collection[enabled], locale, shipping_options[0][shipping_rate])
// — each omitted when empty (expires_at when 0), so Stripe applies its own
// default or its own error.
// The idempotency key is not a field; it travels as a header.
base::FormFields CheckoutSessionForm(const CreateSessionParams& p);

}  // namespace paintlock::stripe
