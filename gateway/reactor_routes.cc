#include "gateway/reactor_routes.h"

#include "base/log.h"
#include "gateway/limit_routes.h"
#include "gateway/middleware.h"
#include "locks/statements.h"

namespace paintlock::gateway {

namespace {

constexpr const char* kTakePrefix = "/v1/ratelimits/";
constexpr const char* kTakeSuffix = "/take";
constexpr int kTakeStatement = 0;  // its index in ReactorPoolOptions' statements

}  // namespace

locks::AsyncPoolOptions ReactorPoolOptions(const Config& config) {
  locks::AsyncPoolOptions o;
  o.url = config.database.url;
  o.connections = config.db_async_connections;
  o.mode = config.database.statements;
  // Its own application_name: pg_stat_activity tells the two kinds apart.
  o.session_setup =
      locks::SessionSettingsSql(config.database, config.database.application_name + "-async");
  o.statements = {{"ratelimit_take", locks::NamedQuerySql("ratelimit_take")}};
  o.queue_timeout = config.database.acquire_timeout;
  return o;
}

ReactorTakes::ReactorTakes(const Config& config, locks::RateLimiter& limiter)
    : config_(config), limiter_(limiter), route_(kRateLimitTakeRoute) {}

void ReactorTakes::Start(locks::AsyncLoop& loop) {
  pool_ = std::make_unique<locks::AsyncPool>(ReactorPoolOptions(config_), loop);
}

void ReactorTakes::Stop() { pool_.reset(); }

bool ReactorTakes::Wants(const std::string& method, const std::string& target) const {
  if (!pool_ || method != "POST" || target.rfind(kTakePrefix, 0) != 0) return false;
  const std::string path = target.substr(0, target.find('?'));
  const std::size_t suffix = std::char_traits<char>::length(kTakeSuffix);
  return path.size() > suffix && path.compare(path.size() - suffix, suffix, kTakeSuffix) == 0;
}

bool ReactorTakes::Serve(std::shared_ptr<httplib::Request> req, Answer answer) {
  if (req->has_header("Idempotency-Key")) return false;
  if (!std::regex_match(req->path, req->matches, route_)) return false;
  const auto started = Clock::now();
  auto res = std::make_shared<httplib::Response>();
  auto finish = [req, res, started, answer = std::move(answer)] {
    EndRequest(*req, *res, started);
    answer(*res);
  };
  TakeCall call;
  if (BeginRequest(config_, *req, *res) || !RequireApiKey(config_, *req, *res) ||
      !ReadTake(*req, *res, &call)) {
    finish();
    return true;
  }
  const std::string request_id = base::CurrentRequestId();
  limiter_.TakeAsync(*pool_, kTakeStatement, call.key, call.request.bucket, call.request.cost,
                     [this, res, request_id, finish](locks::TakeOutcome outcome) {
                       base::SetCurrentRequestId(request_id);
                       WriteTake(limiter_, outcome, *res);
                       finish();
                     });
  base::SetCurrentRequestId("");  // other requests' lines follow on this thread meanwhile
  return true;
}

void ReactorTakes::OnEvent(void* tag, std::uint32_t events) {
  if (pool_) pool_->OnEvent(tag, events);
}

ReactorTakes::Clock::time_point ReactorTakes::Tick(Clock::time_point now) {
  return pool_ ? pool_->Tick(now) : Clock::time_point::max();
}

}  // namespace paintlock::gateway
