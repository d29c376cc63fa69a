// Per-key rate limits: token buckets kept in PostgreSQL, one row per key.
//
// Take() is one statement (sql/queries/ratelimit_take.sql): INSERT … ON
// CONFLICT DO UPDATE locks the key's row, refills it from the database clock,
// and takes the cost or refuses. Any number of gateways share the rows, so a
// bucket's budget is exact across all of them: never a token more, whatever
// the concurrency. A refusal costs nothing.
//
// Thread-safe: every call runs on its own pooled connection; the bucket list
// is immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "locks/async_pool.h"
#include "locks/database.h"
#include "locks/rate_limits_config.h"

namespace paintlock::locks {

struct RateAllowed {
  std::string key;             // the stored key, "bucket:subject"
  std::int64_t remaining = 0;  // whole tokens left right after this take
};
struct RateLimited {
  std::string key;
  std::int64_t remaining = 0;
  int retry_after_seconds = 1;  // when the cost will have refilled (≥ 1)
};
// The key names no bucket, or a bucket that is not configured.
struct UnknownBucket {
  std::string bucket;  // empty: the key had no "bucket:" prefix and no bucket was given
};
// The cost is more than the bucket can ever hold: it would never be allowed.
struct CostOverCapacity {
  std::int64_t cost = 0;
  std::int64_t capacity = 0;
};

using TakeOutcome =
    std::variant<RateAllowed, RateLimited, UnknownBucket, CostOverCapacity, DbFailure>;

class RateLimiter {
 public:
  RateLimiter(Database& db, std::vector<RateBucket> buckets)
      : db_(db), buckets_(std::move(buckets)) {}

  // Takes `cost` (≥ 1) tokens from `key`'s bucket (see ResolveBucketKey for
  // how `key` and `bucket` name it). `key` must pass IsValidRateKey.
  TakeOutcome Take(const std::string& key, const std::string& bucket, std::int64_t cost);
  // The same take with asynchronous libpq: `statement` is sql/queries/
  // ratelimit_take.sql's index in `pool`'s statements. `done` gets the outcome
  // on the pool's thread — before TakeAsync returns when no statement is needed
  // (an unknown bucket, a cost over the capacity). `wanted`: as
  // AsyncPool::Submit's (false drops the statement unrun; `done` is not called).
  void TakeAsync(AsyncPool& pool, int statement, const std::string& key, const std::string& bucket,
                 std::int64_t cost, std::function<void(TakeOutcome)> done,
                 std::function<bool()> wanted = nullptr);

  const std::vector<RateBucket>& buckets() const { return buckets_; }

 private:
  // The statement's parameters ($1 key, $2 cost, $3 capacity, $4 refill), or
  // the outcome when no statement is needed.
  std::variant<std::vector<std::string>, TakeOutcome> Prepare(const std::string& key,
                                                              const std::string& bucket,
                                                              std::int64_t cost) const;

  Database& db_;
  const std::vector<RateBucket> buckets_;
};

}  // namespace paintlock::locks
