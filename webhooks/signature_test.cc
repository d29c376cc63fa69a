#include "webhooks/signature.h"

#include <doctest/doctest.h>

using namespace paintlock::webhooks;

TEST_CASE("HMAC-SHA256 over t.body matches a known vector") {
  // echo -n '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test
  CHECK(ComputeSignature("whsec_test", 1700000000, R"({"id":"evt_1"})") ==
        "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925");
}

TEST_CASE("a signature verifies for any configured secret and any v1") {
  const std::string body = R"({"id":"evt_1","type":"checkout.session.completed"})";
  const std::int64_t t = 1700000000;
  const std::string header = SignatureHeader("whsec_new", t, body);
  CHECK(VerifySignature(header, body, {"whsec_new"}, t + 10, 300) == SignatureCheck::kValid);
  CHECK(VerifySignature(header, body, {"whsec_old", "whsec_new"}, t, 300) ==
        SignatureCheck::kValid);
  // Two v1 entries during a roll; v0 and unknown schemes are ignored.
  const std::string rolled = "t=" + std::to_string(t) +
                             ",v0=abc,v1=" + ComputeSignature("whsec_old", t, body) +
                             ",v1=" + ComputeSignature("whsec_new", t, body) + ",v9=zzz";
  CHECK(VerifySignature(rolled, body, {"whsec_new"}, t, 300) == SignatureCheck::kValid);
  CHECK(VerifySignature(rolled, body, {"whsec_old"}, t, 300) == SignatureCheck::kValid);
}

TEST_CASE("changed bytes, wrong secrets, old timestamps and missing headers are refused") {
  const std::string body = R"({"id":"evt_1"})";
  const std::int64_t t = 1700000000;
  const std::string header = SignatureHeader("whsec_a", t, body);
  CHECK(VerifySignature(header, R"({"id":"evt_2"})", {"whsec_a"}, t, 300) ==
        SignatureCheck::kNoMatchingSignature);
  CHECK(VerifySignature(header, body, {"whsec_b"}, t, 300) == SignatureCheck::kNoMatchingSignature);
  CHECK(VerifySignature(header, body, {"whsec_a"}, t + 301, 300) ==
        SignatureCheck::kTimestampTooOld);
  CHECK(VerifySignature("", body, {"whsec_a"}, t, 300) == SignatureCheck::kMissingHeader);
  CHECK(VerifySignature("v1=abc", body, {"whsec_a"}, t, 300) == SignatureCheck::kMalformedHeader);
  CHECK(VerifySignature("t=abc,v1=abc", body, {"whsec_a"}, t, 300) ==
        SignatureCheck::kMalformedHeader);
  CHECK(VerifySignature("t=1700000000,v0=" + ComputeSignature("whsec_a", t, body), body,
                        {"whsec_a"}, t, 300) == SignatureCheck::kMalformedHeader);
}
