#include "gateway/reactor_routes.h"

#include <algorithm>

#include "base/log.h"
#include "checkout/reservation_metrics.h"
#include "gateway/credit_routes.h"
#include "gateway/http_errors.h"
#include "gateway/idempotency.h"
#include "gateway/limit_routes.h"
#include "gateway/middleware.h"
#include "gateway/reservation_routes.h"
#include "locks/statements.h"

namespace paintlock::gateway {

namespace {

// The statements' indices in ReactorPoolOptions' list.
enum Statement { kTake, kHold, kCommit, kConsume, kReserve, kReservationGet, kRelease };

// What a worker answers instead of the reactor (Route::to_workers): a request
// with an Idempotency-Key, on every route (CarriesIdempotencyKey: the
// idempotency store is synchronous), and a consume when its answer needs the
// licence check, which may read.
bool ConsumeToWorkers(const httplib::Request& req) {
  return CarriesIdempotencyKey(req) || ConsumeNeedsLicense(req);
}

}  // namespace

locks::AsyncPoolOptions ReactorPoolOptions(const Config& config) {
  locks::AsyncPoolOptions o;
  o.url = config.database.url;
  o.connections = config.db_async_connections;
  o.mode = config.database.statements;
  // Its own application_name: pg_stat_activity tells the two kinds apart.
  o.session_setup =
      locks::SessionSettingsSql(config.database, config.database.application_name + "-async");
  for (const char* name : {"ratelimit_take", "credit_hold", "credit_commit", "quota_consume",
                           "reserve", "reservation_get", "release"}) {
    o.statements.emplace_back(name, locks::NamedQuerySql(name));
  }
  o.queue_timeout = config.database.acquire_timeout;
  return o;
}

struct ReactorApi::Pending {
  std::shared_ptr<httplib::Request> req;
  httplib::Response res;
  Clock::time_point started;
  std::string_view route_label;  // empty: RouteLabel reads it from req.matches
  std::string request_id;
  edge::RouteTicket ticket;

  Pending(std::shared_ptr<httplib::Request> r, edge::RouteTicket t)
      : req(std::move(r)), started(Clock::now()), ticket(t) {}

  void Finish() {
    EndRequest(*req, res, started, route_label);
    ticket.Answer(res);
  }

  // Asked by the pool before the statement is sent: no work for a client
  // gone. It holds a pointer, not a copy: small enough for std::function's
  // own storage (no allocation), and the pool asks only while the statement's
  // continuation, which owns this Pending, is alive.
  std::function<bool()> Present() const {
    return [ticket = &ticket] { return ticket->Present(); };
  }

  // The statement's continuation: its outcome written into the answer by
  // `write(outcome, res)` (the worker route's own writer), then sent. Its log
  // lines carry the request id again.
  template <typename Outcome, typename Write>
  static std::function<void(Outcome)> Then(std::shared_ptr<Pending> p, Write write) {
    return [p = std::move(p), write](Outcome outcome) {
      base::SetCurrentRequestId(p->request_id);
      write(outcome, p->res);
      p->Finish();
    };
  }
};

ReactorApi::ReactorApi(const Config& config, locks::RateLimiter& limiter,
                       locks::CreditStore& credits, QuotaServices& quotas,
                       const base::VisitorIdentity& visitors, locks::ReservationStore& reservations)
    : config_(config),
      limiter_(limiter),
      credits_(credits),
      quotas_(quotas),
      visitors_(visitors),
      reservations_(reservations),
      routes_{{"/v1/ratelimits/", "/take", std::regex(kRateLimitTakeRoute), &ReactorApi::Take, true,
               CarriesIdempotencyKey},
              {"/v1/accounts/", "/holds", std::regex(kCreditHoldRoute), &ReactorApi::Hold, true,
               CarriesIdempotencyKey},
              {"/v1/holds/", "/commit", std::regex(kCreditCommitRoute), &ReactorApi::Commit, true,
               CarriesIdempotencyKey},
              {"/v1/quotas/", "/consume", std::regex(kQuotaConsumeRoute), &ReactorApi::Consume,
               false, ConsumeToWorkers},
              {kReservationsRoute, "", std::nullopt, &ReactorApi::Reserve, true,
               CarriesIdempotencyKey}} {}

ReactorApi::~ReactorApi() = default;

void ReactorApi::Start(locks::AsyncLoop& loop) {
  pool_ = std::make_unique<locks::AsyncPool>(ReactorPoolOptions(config_), loop);
}

void ReactorApi::Stop() {
  pool_.reset();
  Publish();
}

void ReactorApi::Publish() {
  ready_.store(pool_ ? pool_->ready() : 0, std::memory_order_relaxed);
  waiting_.store(pool_ ? static_cast<int>(pool_->waiting()) : 0, std::memory_order_relaxed);
}

ReactorApi::PoolStats ReactorApi::Stats() const {
  return {ready_.load(std::memory_order_relaxed), waiting_.load(std::memory_order_relaxed)};
}

bool ReactorApi::Route::Frames(std::string_view path) const {
  return path.size() >= prefix.size() + suffix.size() && path.substr(0, prefix.size()) == prefix &&
         path.substr(path.size() - suffix.size()) == suffix;
}

bool ReactorApi::Wants(const std::string& method, const std::string& target) const {
  if (!pool_ || method != "POST") return false;
  const std::string_view path = std::string_view(target).substr(0, target.find('?'));
  return std::any_of(routes_.begin(), routes_.end(),
                     [&](const Route& r) { return r.Frames(path); });
}

bool ReactorApi::Serve(std::shared_ptr<httplib::Request> req, edge::RouteTicket ticket) {
  const Route* route = nullptr;
  for (const Route& r : routes_) {
    if (!r.Frames(req->path)) continue;  // the cheap look first
    if (r.pattern ? std::regex_match(req->path, req->matches, *r.pattern) : req->path == r.prefix) {
      route = &r;
      break;
    }
  }
  if (!route || route->to_workers(*req)) return false;
  auto p = std::make_shared<Pending>(std::move(req), ticket);
  if (!route->pattern) p->route_label = route->prefix;  // req.matches left empty
  if (BeginRequest(config_, *p->req, p->res) ||
      (route->api_key && !RequireApiKey(config_, *p->req, p->res))) {
    p->Finish();
    return true;
  }
  p->request_id = base::CurrentRequestId();
  (this->*route->handler)(p);
  Publish();
  base::SetCurrentRequestId("");  // other requests' lines follow on this thread meanwhile
  return true;
}

void ReactorApi::Take(const std::shared_ptr<Pending>& p) {
  TakeCall call;
  if (!ReadTake(*p->req, p->res, &call)) return p->Finish();
  limiter_.TakeAsync(*pool_, kTake, call.key, call.request.bucket, call.request.cost,
                     Pending::Then<locks::TakeOutcome>(
                         p, [this](const locks::TakeOutcome& outcome,
                                   httplib::Response& res) { WriteTake(limiter_, outcome, res); }),
                     p->Present());
}

void ReactorApi::Hold(const std::shared_ptr<Pending>& p) {
  HoldCall call;
  if (!ReadHold(*p->req, p->res, &call)) return p->Finish();
  credits_.HoldAsync(*pool_, kHold, call.account, call.request.amount, call.request.ttl,
                     Pending::Then<locks::HoldOutcome>(
                         p, [call](const locks::HoldOutcome& outcome,
                                   httplib::Response& res) { WriteHold(call, outcome, res); }),
                     p->Present());
}

void ReactorApi::Commit(const std::shared_ptr<Pending>& p) {
  credits_.CommitAsync(*pool_, kCommit, p->req->matches[1],
                       Pending::Then<locks::CommitOutcome>(p, WriteCommit), p->Present());
}

void ReactorApi::Consume(const std::shared_ptr<Pending>& p) {
  ConsumeCall call;
  if (!ReadConsume(config_, quotas_, visitors_, *p->req, p->res, &call)) return p->Finish();
  quotas_.quotas.ConsumeAsync(
      *pool_, kConsume, *call.quota, call.who,
      Pending::Then<locks::ConsumeOutcome>(
          p, [call](const locks::ConsumeOutcome& outcome,
                    httplib::Response& res) { WriteConsume(call, outcome, res); }),
      p->Present());
}

void ReactorApi::Reserve(const std::shared_ptr<Pending>& p) {
  auto cart = std::make_shared<CartRequest>();
  if (!ReadReservationCart(*p->req, p->res, cart.get())) return p->Finish();
  reservations_.ReserveAsync(
      *pool_, {kReserve, kReservationGet}, cart->paintings, cart->buyer_ref, cart->line_token,
      [this, p, cart](locks::ReserveOutcome outcome) {
        base::SetCurrentRequestId(p->request_id);
        if (std::holds_alternative<locks::TakeOverNeeded>(outcome)) {
          // Expiring the lapsed holder's session at Stripe is a worker's work.
          // Nothing was reserved: the worker reserves again from the start.
          p->ticket.ToWorkers();
          base::SetCurrentRequestId("");
          return;
        }
        const checkout::Checkout::ReserveResult result = checkout::CountReservation(
            checkout::Narrow<checkout::Checkout::ReserveResult>(outcome));
        // Without an Idempotency-Key (those go to the workers) nobody can ask
        // for this answer again: a hold for a caller who has left is let go.
        if (const auto* granted = std::get_if<locks::Granted>(&result);
            granted && !p->ticket.Present()) {
          LetGo(*granted);
          WriteError(p->res, ErrorFor(checkout::BuyerLeft{}));
          return p->Finish();
        }
        WriteReservation(*cart, result, p->res);
        p->Finish();
      },
      p->Present());
}

void ReactorApi::LetGo(const locks::Granted& granted) {
  const std::string id = granted.reservation_id;
  const std::string request_id = base::CurrentRequestId();
  reservations_.ReleaseAsync(
      *pool_, kRelease, id, "client_gone", "gateway",
      [id, request_id](const locks::DbResult<locks::ReleaseOutcome>& released) {
        base::SetCurrentRequestId(request_id);
        const auto* o = std::get_if<locks::ReleaseOutcome>(&released);
        base::LogInfo("reservation_client_gone",
                      {{"reservation_id", id},
                       {"released", o != nullptr && o->result == locks::ReleaseResult::kReleased}});
        base::SetCurrentRequestId("");
      });
}

void ReactorApi::OnEvent(void* tag, std::uint32_t events) {
  if (!pool_) return;
  pool_->OnEvent(tag, events);
  Publish();
}

void ReactorApi::EventsRead(Clock::time_point wait_began) {
  if (pool_) pool_->EventsRead(wait_began);
}

ReactorApi::Clock::time_point ReactorApi::Tick(Clock::time_point now) {
  if (!pool_) return Clock::time_point::max();
  const auto next = pool_->Tick(now);
  Publish();
  return next;
}

}  // namespace paintlock::gateway
