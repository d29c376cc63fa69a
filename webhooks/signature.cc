#include "webhooks/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdlib>
#include <string>

#include "base/ids.h"

namespace paintlock::webhooks {

std::string ComputeSignature(std::string_view secret, std::int64_t timestamp,
                             std::string_view payload) {
  std::string signed_payload = std::to_string(timestamp);
  signed_payload.push_back('.');
  signed_payload.append(payload);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_payload.data()), signed_payload.size(), mac,
       &mac_len);
  return base::Hex(mac, mac_len);
}

std::string SignatureHeader(std::string_view secret, std::int64_t timestamp,
                            std::string_view payload) {
  return "t=" + std::to_string(timestamp) + ",v1=" + ComputeSignature(secret, timestamp, payload);
}

namespace {

bool ParseTimestamp(std::string_view text, std::int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

SignatureCheck VerifySignature(std::string_view header, std::string_view payload,
                               const std::vector<std::string>& secrets, std::int64_t now_unix,
                               std::int64_t tolerance_seconds) {
  if (header.empty()) return SignatureCheck::kMissingHeader;
  std::int64_t timestamp = -1;
  std::vector<std::string_view> v1s;
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    if (key == "t") {
      if (!ParseTimestamp(value, &timestamp)) return SignatureCheck::kMalformedHeader;
    } else if (key == "v1") {
      v1s.push_back(value);
    }
    // v0 and unknown schemes are ignored on purpose.
  }
  if (timestamp < 0 || v1s.empty()) return SignatureCheck::kMalformedHeader;
  if (std::llabs(now_unix - timestamp) > tolerance_seconds) return SignatureCheck::kTimestampTooOld;
  for (const auto& secret : secrets) {
    const std::string expected = ComputeSignature(secret, timestamp, payload);
    for (std::string_view candidate : v1s) {
      if (ConstantTimeEquals(expected, candidate)) return SignatureCheck::kValid;
    }
  }
  return SignatureCheck::kNoMatchingSignature;
}

const char* ToString(SignatureCheck c) {
  switch (c) {
    case SignatureCheck::kValid:
      return "valid";
    case SignatureCheck::kMissingHeader:
      return "missing Stripe-Signature header";
    case SignatureCheck::kMalformedHeader:
      return "malformed Stripe-Signature header";
    case SignatureCheck::kTimestampTooOld:
      return "signature timestamp outside the tolerance";
    case SignatureCheck::kNoMatchingSignature:
      return "no v1 signature matches a configured secret";
  }
  return "unknown";
}

}  // namespace paintlock::webhooks
