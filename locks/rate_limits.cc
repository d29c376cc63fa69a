#include "locks/rate_limits.h"

#include "locks/statements.h"

namespace paintlock::locks {

TakeOutcome RateLimiter::Take(const std::string& key, const std::string& bucket,
                              std::int64_t cost) {
  BucketKeyProblem problem = BucketKeyProblem::kNoBucket;
  std::string name;
  auto resolved = ResolveBucketKey(buckets_, key, bucket, &problem, &name);
  if (!resolved) return UnknownBucket{name};
  const RateBucket& b = *resolved->bucket;
  if (cost > b.capacity) return CostOverCapacity{cost, b.capacity};

  auto taken = db_.Run("ratelimit_take", [&](pqxx::connection& c) -> TakeOutcome {
    pqxx::nontransaction n(c);  // one statement: its own transaction
    pqxx::row row = Exec1(n, "ratelimit_take", resolved->key, static_cast<int>(cost),
                          std::to_string(b.capacity), b.refill_per_second);
    const std::int64_t remaining = row["remaining"].as<std::int64_t>();
    if (row["allowed"].as<bool>()) return RateAllowed{resolved->key, remaining};
    const std::int64_t wait = row["retry_after"].as<std::int64_t>(1);
    return RateLimited{resolved->key, remaining,
                       static_cast<int>(std::min<std::int64_t>(wait, 1000000000))};
  });
  if (auto* failure = std::get_if<DbFailure>(&taken)) return *failure;
  return std::get<TakeOutcome>(std::move(taken));
}

}  // namespace paintlock::locks
