// The JSON bodies of the credit, rate-limit and lease endpoints, each read in
// full by one pure function before anything is decided, so the handlers
// (gateway/limit_routes.cc, gateway/credit_routes.cc) and the fuzzers
// (fuzz/limit_bodies_fuzz.cc) read a body the same way. A body is accepted
// only with every field in range (gateway/limit_routes_parsing.h); otherwise
// the FieldError names the field. Pure functions: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>

#include "gateway/limit_routes_parsing.h"

namespace paintlock::gateway {

// POST /v1/ratelimits/{key}/take: {"cost"?: 1..1e9 (default 1), "bucket"?}; empty body allowed.
struct TakeRequest {
  std::int64_t cost = 1;
  std::string bucket;  // "": the key's prefix names the bucket
};
std::variant<TakeRequest, FieldError> ParseTakeRequest(const std::string& body);

// POST /v1/accounts/{id}/credits: {"amount": 1..locks::kMaxCreditAmount}.
struct TopUpRequest {
  std::int64_t amount = 0;
};
std::variant<TopUpRequest, FieldError> ParseTopUpRequest(const std::string& body);

// POST /v1/accounts/{id}/holds: {"amount", "ttl_seconds": 1..locks::kMaxHoldTtl}.
struct HoldRequest {
  std::int64_t amount = 0;
  std::chrono::seconds ttl{0};
};
std::variant<HoldRequest, FieldError> ParseHoldRequest(const std::string& body);

// POST /v1/leases/{name}: {"holder", "ttl_seconds": 1..locks::kMaxLeaseTtl}; with
// `with_token` (…/renew) also {"token": 1..INT64_MAX}. The holder passes
// locks::IsValidLeaseHolder.
struct LeaseRequest {
  std::string holder;
  std::chrono::seconds ttl{0};
  std::int64_t token = 0;  // 0 unless with_token
};
std::variant<LeaseRequest, FieldError> ParseLeaseRequest(const std::string& body, bool with_token);

}  // namespace paintlock::gateway
