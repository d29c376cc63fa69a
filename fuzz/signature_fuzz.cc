// The Stripe-Signature header (webhooks/signature.h) against a raw body.
// Input: "header\0body". Properties: a verdict never throws or reads out of
// bounds; kValid only when the header carries the HMAC for a configured
// secret at a timestamp within the tolerance; a header we produce for the
// same body always verifies.
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "webhooks/signature.h"

using namespace paintlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto fields = fuzz::Fields(fuzz::AsText(data, size), 2);
  const std::string& header = fields[0];
  const std::string& body = fields[1];
  const std::vector<std::string> secrets = {"whsec_fuzz_one", "whsec_fuzz_two"};
  constexpr std::int64_t kNow = 1767225600;  // a fixed clock: verdicts are reproducible
  constexpr std::int64_t kTolerance = 300;

  const webhooks::SignatureCheck check =
      webhooks::VerifySignature(header, body, secrets, kNow, kTolerance);
  FUZZ_CHECK(webhooks::ToString(check) != nullptr);
  if (check == webhooks::SignatureCheck::kValid) {
    // Only a forgery-free way in: some t within tolerance whose HMAC is in the header.
    bool carried = false;
    for (std::int64_t t = kNow - kTolerance; t <= kNow + kTolerance && !carried; ++t) {
      for (const auto& secret : secrets) {
        if (header.find(webhooks::ComputeSignature(secret, t, body)) != std::string::npos) {
          carried = true;
        }
      }
    }
    FUZZ_CHECK(carried);
  }
  // Round trip: what we sign verifies, also with the fuzzed header's junk
  // appended as further (unknown or wrong) items.
  const std::string signed_header = webhooks::SignatureHeader(secrets[1], kNow - 7, body);
  FUZZ_CHECK(webhooks::VerifySignature(signed_header, body, secrets, kNow, kTolerance) ==
             webhooks::SignatureCheck::kValid);
  if (header.find("t=") == std::string::npos) {
    FUZZ_CHECK(webhooks::VerifySignature(signed_header + "," + header, body, secrets, kNow,
                                         kTolerance) == webhooks::SignatureCheck::kValid);
  }
  return 0;
}
