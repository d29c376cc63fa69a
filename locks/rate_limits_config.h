// Named rate-limit buckets and how a key finds its bucket (locks/CREDITS.md).
//
// A bucket is a token bucket: it holds at most `capacity` tokens and gains
// `refill_per_second` tokens a second; a take of cost n is allowed when n
// tokens are there. Buckets are configured by name, e.g.
//   PAINTLOCK_RATE_LIMITS="api:100:10,checkout:10:0.2"
// and every stored key is "bucket:subject", so one subject has one row per
// bucket. Pure functions and plain values: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace paintlock::locks {

struct RateBucket {
  std::string name;           // [a-z0-9_-]{1,32}
  std::int64_t capacity = 0;  // whole tokens, 1..1e9: the most a burst may take
  std::string
      refill_per_second;  // a decimal > 0 exactly as configured ("0.2"): sent to SQL as numeric
  double refill = 0;      // the same, for messages and arithmetic in C++
};

// The bucket the gateway's own per-visitor checkout limit takes from.
constexpr const char* kCheckoutBucket = "checkout";
// Generous: a whole office behind one address can still buy; a script that
// hammers the button is told to wait. 120 at once, then 2 a second.
constexpr const char* kDefaultRateLimits = "checkout:120:2";

// Parses "name:capacity:refill,…" (spaces around items ignored). nullopt and
// *error (one sentence naming the bad item) on a malformed list, a duplicate
// name, capacity outside 1..1e9, or a refill that is not a decimal in
// (0, 1e9]. An empty list is valid.
std::optional<std::vector<RateBucket>> ParseRateBuckets(const std::string& list,
                                                        std::string* error);

// `list` with kDefaultRateLimits' buckets added for names it does not define.
std::vector<RateBucket> WithDefaultBuckets(std::vector<RateBucket> list);

// True for a key a caller may name: 1..200 of [A-Za-z0-9_.:@-].
bool IsValidRateKey(const std::string& key);

struct BucketKey {
  const RateBucket* bucket = nullptr;  // points into the list passed in
  std::string key;                     // the stored key: "bucket:subject"
};

enum class BucketKeyProblem { kNoBucket, kUnknownBucket };

// Finds `key`'s bucket: the explicit `bucket` when non-empty (the key gains
// the "bucket:" prefix unless it already has it), else the key's prefix up
// to its first ':'. So {"bucket": "api"} on key "u42" and no bucket on key
// "api:u42" are the same row. On failure: nullopt and *problem, *name (the
// bucket name that was asked for, if any).
std::optional<BucketKey> ResolveBucketKey(const std::vector<RateBucket>& buckets,
                                          const std::string& key, const std::string& bucket,
                                          BucketKeyProblem* problem, std::string* name);

}  // namespace paintlock::locks
