// The requests the edge's reactor answers itself (gateway/edge/edge_server.h,
// ReactorRoutes), with statements driven by asynchronous libpq
// (locks/async_pool.h) on PAINTLOCK_DB_ASYNC_CONNECTIONS connections of their
// own.
//
// Today: POST /v1/ratelimits/{key}/take without an Idempotency-Key, the
// gateway's cheapest and busiest statement, where a worker's two sleeps (for
// the request, for PostgreSQL) cost more than the statement
// (bench/reports/2026-12-05-0110-async-event-loop-probe.md). The answer is the
// worker route's: the same middleware halves (request id, CORS, access log,
// metrics), API key check, parser and response writer (gateway/limit_routes.h);
// only the statement runs differently. A take with an Idempotency-Key goes to
// the workers, whose idempotency store is synchronous.
//
// Failures are the worker route's too (locks::AsyncReply::Failure): a
// statement that cannot have run is sent once more on a fresh connection; one
// whose connection broke after it was sent may have taken its tokens, and is
// answered 503 (the take is counted, never refunded: the safe side of a limit).
//
// Reactor thread only, as every ReactorRoutes.
#pragma once

#include <memory>
#include <regex>
#include <string>

#include "gateway/config.h"
#include "gateway/edge/edge_server.h"
#include "locks/async_pool.h"
#include "locks/rate_limits.h"

namespace paintlock::gateway {

// The pool the reactor routes run on: the database settings of `config`
// (URL, statement mode, session settings) and its async connection count.
locks::AsyncPoolOptions ReactorPoolOptions(const Config& config);

class ReactorTakes : public edge::ReactorRoutes {
 public:
  ReactorTakes(const Config& config, locks::RateLimiter& limiter);

  void Start(locks::AsyncLoop& loop) override;
  void Stop() override;
  bool Wants(const std::string& method, const std::string& target) const override;
  bool Serve(std::shared_ptr<httplib::Request> req, Answer answer) override;
  void OnEvent(void* tag, std::uint32_t events) override;
  Clock::time_point Tick(Clock::time_point now) override;

 private:
  const Config& config_;
  locks::RateLimiter& limiter_;
  const std::regex route_;
  std::unique_ptr<locks::AsyncPool> pool_;  // between Start and Stop
};

}  // namespace paintlock::gateway
