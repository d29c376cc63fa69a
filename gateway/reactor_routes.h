// The requests the edge's reactor answers itself (gateway/edge/edge_server.h,
// ReactorRoutes), with statements driven by asynchronous libpq
// (locks/async_pool.h) on PAINTLOCK_DB_ASYNC_CONNECTIONS connections of their
// own:
//
//   POST /v1/ratelimits/{key}/take
//   POST /v1/accounts/{id}/holds
//   POST /v1/holds/{id}/commit
//   POST /v1/quotas/{name}/consume   (without a licence key: the licence
//                                     check is a worker's, it may read)
//   POST /v1/reservations            (one painting or a cart: the reserve)
//
// each one statement, the gateway's cheapest and busiest, where a worker's two
// sleeps (for the request, for PostgreSQL) cost more than the statement
// (bench/reports/2026-12-05-0110-async-event-loop-probe.md). The answer is the
// worker route's: the same middleware halves (request id, CORS, access log,
// metrics), API key check, parser and response writer (gateway/limit_routes.h,
// gateway/credit_routes.h, gateway/quota_routes.h), the same outcome from the same row (the stores'
// *Async calls); only the statement runs differently. A request with an
// Idempotency-Key goes to the workers, whose idempotency store is synchronous.
// A reserve that finds a lapsed holder whose Stripe session must be expired
// first (a take-over: Stripe calls) is passed on to a worker
// (edge::RouteTicket::ToWorkers), which reserves again from the
// start; nothing was reserved. A hold granted to a client that has gone is
// released (reason client_gone), as the worker route does.
//
// Failures are the worker route's too (locks::AsyncReply::Failure): a
// statement that cannot have run is sent once more on a fresh connection; one
// whose connection broke after it was sent is answered 503 with its outcome
// unknown — a take counted and never refunded (the safe side of a limit), a
// hold that lapses at its TTL if it was made, a commit the caller repeats
// (a repeated commit answers the first's result). A reserve whose connection
// broke after it was sent is looked up by its id once before it is answered
// (locks::ReservationStore::ReserveAsync).
//
// Reactor thread only, as every ReactorRoutes.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config.h"
#include "gateway/edge/edge_server.h"
#include "gateway/quota_routes.h"
#include "locks/async_pool.h"
#include "locks/credits.h"
#include "locks/rate_limits.h"
#include "locks/reservations.h"

namespace paintlock::gateway {

// The pool the reactor routes run on: the database settings of `config`
// (URL, statement mode, session settings) and its async connection count.
locks::AsyncPoolOptions ReactorPoolOptions(const Config& config);

class ReactorApi : public edge::ReactorRoutes {
 public:
  // All must outlive it.
  ReactorApi(const Config& config, locks::RateLimiter& limiter, locks::CreditStore& credits,
             QuotaServices& quotas, const base::VisitorIdentity& visitors,
             locks::ReservationStore& reservations);
  ~ReactorApi() override;

  void Start(locks::AsyncLoop& loop) override;
  void Stop() override;
  bool Wants(const std::string& method, const std::string& target) const override;
  bool Serve(std::shared_ptr<httplib::Request> req, edge::RouteTicket ticket) override;
  void OnEvent(void* tag, std::uint32_t events) override;
  void EventsRead(Clock::time_point wait_began) override;
  Clock::time_point Tick(Clock::time_point now) override;

  // The pool as it was after the reactor's last call into it (for metrics).
  // Thread-safe.
  struct PoolStats {
    int ready = 0;    // connections connected and set up
    int waiting = 0;  // statements waiting for one
  };
  PoolStats Stats() const;

 private:
  struct Pending;  // one request between Serve and its answer
  using Handler = void (ReactorApi::*)(const std::shared_ptr<Pending>&);
  struct Route {
    std::string prefix, suffix;  // Wants(): the target's cheap shape
    // Serve(): the worker route's own pattern, which fills req.matches as
    // httplib would. None for a route without a parameter: its path is the
    // prefix alone, compared as it is and counted under it (a regex match
    // cost a reserve about 1% of the gateway's CPU and three allocations).
    std::optional<std::regex> pattern;
    Handler handler;
    bool api_key;                                 // refused without it (the quota's is optional)
    bool (*to_workers)(const httplib::Request&);  // what a worker must answer
    bool Frames(std::string_view path) const;     // prefix…suffix
  };

  void Take(const std::shared_ptr<Pending>& p);
  void Hold(const std::shared_ptr<Pending>& p);
  void Commit(const std::shared_ptr<Pending>& p);
  void Consume(const std::shared_ptr<Pending>& p);
  void Reserve(const std::shared_ptr<Pending>& p);
  // A hold granted to a client that has gone: released, and logged.
  void LetGo(const locks::Granted& granted);
  void Publish();  // Stats(), after each call into the pool

  const Config& config_;
  locks::RateLimiter& limiter_;
  locks::CreditStore& credits_;
  QuotaServices& quotas_;
  const base::VisitorIdentity& visitors_;
  locks::ReservationStore& reservations_;
  const std::vector<Route> routes_;
  std::unique_ptr<locks::AsyncPool> pool_;  // between Start and Stop
  std::atomic<int> ready_{0}, waiting_{0};
};

}  // namespace paintlock::gateway
