// Stripe webhook signatures (STRIPE.md, "Webhooks").
//
// A signature is HMAC-SHA256 over the exact string "{t}.{raw body}" with the
// endpoint secret used as-is, written as lowercase hex. The header is
// "t=<unix>,v1=<hex>[,v1=<hex>...]"; only v1 counts, unknown schemes are
// ignored, and any v1 may match any configured secret (secret rolls).
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paintlock::webhooks {

// Lowercase hex HMAC-SHA256 of "{timestamp}.{payload}" under `secret`.
std::string ComputeSignature(std::string_view secret, std::int64_t timestamp,
                             std::string_view payload);

// A complete Stripe-Signature header value for one secret.
std::string SignatureHeader(std::string_view secret, std::int64_t timestamp,
                            std::string_view payload);

enum class SignatureCheck {
  kValid,
  kMissingHeader,    // header absent or empty
  kMalformedHeader,  // no t= or no v1=
  kTimestampTooOld,  // outside the tolerance (either direction)
  kNoMatchingSignature,
};

// Verifies `header` against `payload` (the raw request body, never a
// re-serialisation) for any of `secrets`. `now_unix` is injected so tests
// control time; `tolerance_seconds` bounds |now - t|.
SignatureCheck VerifySignature(std::string_view header, std::string_view payload,
                               const std::vector<std::string>& secrets, std::int64_t now_unix,
                               std::int64_t tolerance_seconds);

const char* ToString(SignatureCheck c);

}  // namespace paintlock::webhooks
