#include "locks/rate_limits.h"

#include <algorithm>
#include <iterator>

#include "locks/row_columns.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

// The statement's row as the take's outcome.
TakeOutcome Decided(const std::string& key, const Column& column) {
  const std::int64_t left = std::stoll(column("remaining"));
  if (column("allowed") == "t") return RateAllowed{key, left};
  const std::string retry_after = column("retry_after");
  const std::int64_t wait = retry_after.empty() ? 1 : std::stoll(retry_after);
  return RateLimited{key, left, static_cast<int>(std::min<std::int64_t>(wait, 1000000000))};
}

}  // namespace

std::variant<std::vector<std::string>, TakeOutcome> RateLimiter::Prepare(const std::string& key,
                                                                         const std::string& bucket,
                                                                         std::int64_t cost) const {
  BucketKeyProblem problem = BucketKeyProblem::kNoBucket;
  std::string name;
  auto resolved = ResolveBucketKey(buckets_, key, bucket, &problem, &name);
  if (!resolved) return UnknownBucket{name};
  const RateBucket& b = *resolved->bucket;
  if (cost > b.capacity) return CostOverCapacity{cost, b.capacity};
  return std::vector<std::string>{resolved->key, std::to_string(cost), std::to_string(b.capacity),
                                  pqxx::to_string(b.refill_per_second)};
}

TakeOutcome RateLimiter::Take(const std::string& key, const std::string& bucket,
                              std::int64_t cost) {
  auto prepared = Prepare(key, bucket, cost);
  if (auto* early = std::get_if<TakeOutcome>(&prepared)) return *early;
  const auto& p = std::get<std::vector<std::string>>(prepared);
  return Flatten<TakeOutcome>(db_.Run("ratelimit_take", [&](pqxx::connection& c) -> TakeOutcome {
    pqxx::nontransaction n(c);  // one statement: its own transaction
    pqxx::row row = Exec1(n, "ratelimit_take", p[0], p[1], p[2], p[3]);
    return Decided(p[0], ColumnsOf(row));
  }));
}

void RateLimiter::TakeAsync(AsyncPool& pool, int statement, const std::string& key,
                            const std::string& bucket, std::int64_t cost,
                            std::function<void(TakeOutcome)> done, std::function<bool()> wanted) {
  auto prepared = Prepare(key, bucket, cost);
  if (auto* early = std::get_if<TakeOutcome>(&prepared)) return done(std::move(*early));
  auto prepared_params = std::get<std::vector<std::string>>(std::move(prepared));
  std::string stored_key = prepared_params[0];
  std::vector<AsyncPool::Param> params(std::make_move_iterator(prepared_params.begin()),
                                       std::make_move_iterator(prepared_params.end()));
  pool.Submit(
      statement, std::move(params),
      [key = std::move(stored_key), done = std::move(done)](AsyncReply reply) {
        done(FromReply<TakeOutcome>(reply, "ratelimit_take",
                                    [&](const Column& column) { return Decided(key, column); }));
      },
      std::move(wanted));
}

}  // namespace paintlock::locks
