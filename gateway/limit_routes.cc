#include "gateway/limit_routes.h"

#include <cctype>

#include "base/json_text.h"
#include "base/log.h"
#include "gateway/limit_requests.h"

namespace paintlock::gateway {

using nlohmann::json;

namespace {

std::vector<std::string> BucketNames(const std::vector<locks::RateBucket>& buckets) {
  std::vector<std::string> names;
  for (const auto& b : buckets) names.push_back(b.name);
  return names;
}

// ------------------------------------------------------------ rate limits --

void Take(locks::RateLimiter& limiter, const httplib::Request& req, httplib::Response& res) {
  TakeCall call;
  if (!ReadTake(req, res, &call)) return;
  WriteTake(limiter, limiter.Take(call.key, call.request.bucket, call.request.cost), res);
}

// ----------------------------------------------------------------- leases --

json LeaseJson(const locks::LeaseGranted& g) {
  return {{"name", g.name}, {"holder", g.holder}, {"token", g.token}, {"expires_at", g.expires_at}};
}

bool ValidLeaseName(const std::string& name, httplib::Response& res) {
  if (locks::IsValidLeaseName(name)) return true;
  WriteError(res, InvalidRequest("A lease name is 1 to 128 letters, digits and _.:- (starting "
                                 "with a letter or digit).",
                                 "name"));
  return false;
}

// The lease body (gateway/limit_requests.h) of a JSON request; false with the
// 4xx written.
bool ReadLeaseRequest(const httplib::Request& req, httplib::Response& res, bool with_token,
                      LeaseRequest* out) {
  if (MediaTypeOf(req) != "application/json") {
    WriteError(res, UnsupportedMediaType("Send the body as application/json ({\"holder\": "
                                         "\"worker-1\", \"ttl_seconds\": 30})."));
    return false;
  }
  auto parsed = ParseLeaseRequest(req.body, with_token);
  if (auto* e = std::get_if<FieldError>(&parsed)) return WriteError(res, ErrorFor(*e)), false;
  *out = std::get<LeaseRequest>(std::move(parsed));
  return true;
}

void Acquire(locks::LeaseStore& leases, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  if (!ValidLeaseName(name, res)) return;
  LeaseRequest lease;
  if (!ReadLeaseRequest(req, res, /*with_token=*/false, &lease)) return;
  const locks::AcquireOutcome outcome = leases.Acquire(name, lease.holder, lease.ttl);
  if (auto* g = std::get_if<locks::LeaseGranted>(&outcome))
    return WriteJson(res, 200, LeaseJson(*g));
  if (auto* held = std::get_if<locks::LeaseHeld>(&outcome)) {
    return WriteError(res, ErrorFor(*held, name));
  }
  WriteError(res, ErrorFor(std::get<locks::DbFailure>(outcome), Surface::kLimits));
}

void Renew(locks::LeaseStore& leases, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  if (!ValidLeaseName(name, res)) return;
  LeaseRequest lease;
  if (!ReadLeaseRequest(req, res, /*with_token=*/true, &lease)) return;
  const locks::RenewOutcome outcome = leases.Renew(name, lease.holder, lease.token, lease.ttl);
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, locks::LeaseGranted>)
          WriteJson(res, 200, LeaseJson(o));
        else if constexpr (std::is_same_v<T, locks::LeaseLost>)
          WriteError(res, ErrorFor(o, "renew"));
        else if constexpr (std::is_same_v<T, locks::LeaseNotFound>)
          WriteError(res, LeaseNotFound(name));
        else
          WriteError(res, ErrorFor(o, Surface::kLimits));
      },
      outcome);
}

void Release(locks::LeaseStore& leases, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  if (!ValidLeaseName(name, res)) return;
  const std::string holder = req.get_param_value("holder");
  if (!locks::IsValidLeaseHolder(holder)) {
    return WriteError(res, InvalidRequest("Name the holder: ?holder=…&token=… (the holder and "
                                          "the token it was granted).",
                                          "holder"));
  }
  auto token = ParseWholeNumber(req.get_param_value("token"), 1, INT64_MAX);
  if (!token) {
    return WriteError(res, InvalidRequest("\"token\" must be the whole-number fencing token the "
                                          "holder was granted.",
                                          "token"));
  }
  const locks::LeaseReleaseOutcome outcome = leases.Release(name, holder, *token);
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, locks::LeaseReleased>) {
          if (o.replayed) res.set_header("Idempotent-Replayed", "true");
          WriteJson(res, 200, {{"name", o.name}, {"token", o.token}, {"released", true}});
        } else if constexpr (std::is_same_v<T, locks::LeaseLost>) {
          WriteError(res, ErrorFor(o, "release"));
        } else if constexpr (std::is_same_v<T, locks::LeaseNotFound>) {
          WriteError(res, LeaseNotFound(name));
        } else {
          WriteError(res, ErrorFor(o, Surface::kLimits));
        }
      },
      outcome);
}

void GetLease(locks::LeaseStore& leases, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  auto got = leases.Get(name);
  if (auto* f = std::get_if<locks::DbFailure>(&got))
    return WriteError(res, ErrorFor(*f, Surface::kLimits));
  const auto& v = std::get<std::optional<locks::LeaseView>>(got);
  if (!v) return WriteError(res, LeaseNotFound(name.substr(0, 128)));
  json j = {
      {"name", v->name}, {"live", v->live}, {"token", v->token}, {"granted_at", v->granted_at}};
  // A lapsed grant names nobody: the lease is free.
  j["holder"] = v->live && v->holder ? json(*v->holder) : json(nullptr);
  if (v->live) j["expires_at"] = v->expires_at;
  WriteJson(res, 200, j);
}

// The API key first, then (for a POST that acts: `idempotency` not null) the
// Idempotency-Key, then the handler.
template <class Store>
auto Guarded(const AuthorizeFn& authorized, Store& store,
             void (*handler)(Store&, const httplib::Request&, httplib::Response&),
             IdempotentRequests* idempotency = nullptr) {
  return [authorized, &store, handler, idempotency](const httplib::Request& req,
                                                    httplib::Response& res) {
    if (!authorized(req, res)) return;
    ServeIdempotently(idempotency, req, res, Surface::kLimits, [&] { handler(store, req, res); });
  };
}

}  // namespace

bool ReadTake(const httplib::Request& req, httplib::Response& res, TakeCall* call) {
  call->key = req.matches[1];
  if (!locks::IsValidRateKey(call->key)) {
    WriteError(res, InvalidRequest("A rate-limit key is 1 to 200 letters, digits and "
                                   "_.:@- (\"bucket:subject\").",
                                   "key"));
    return false;
  }
  auto parsed = ParseTakeRequest(req.body);
  if (auto* e = std::get_if<FieldError>(&parsed)) return WriteError(res, ErrorFor(*e)), false;
  call->request = std::get<TakeRequest>(std::move(parsed));
  return true;
}

std::string AllowedTakeBody(const std::string& key, std::int64_t remaining) {
  // nlohmann's object would cost some twenty allocations a take (a map, an
  // array for each pair, copies of every string); base::JsonObjectText writes
  // nlohmann's bytes (invalid UTF-8 replaced as WriteJson does) into one
  // string. One allocation.
  std::string body;
  body.reserve(48 + key.size());
  base::JsonObjectText(body)
      .Bool("allowed", true)
      .String("key", key)
      .Int("remaining", remaining)
      .End();
  return body;
}

void WriteTake(const locks::RateLimiter& limiter, const locks::TakeOutcome& outcome,
               httplib::Response& res) {
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, locks::RateAllowed>) {
          SetJsonBody(res, 200, AllowedTakeBody(o.key, o.remaining));
        } else if constexpr (std::is_same_v<T, locks::RateLimited>) {
          WriteError(res, ErrorFor(o));
        } else if constexpr (std::is_same_v<T, locks::UnknownBucket>) {
          WriteError(res, ErrorFor(o, BucketNames(limiter.buckets())));
        } else if constexpr (std::is_same_v<T, locks::CostOverCapacity>) {
          WriteError(res, ErrorFor(o));
        } else {
          WriteError(res, ErrorFor(o, Surface::kLimits));
        }
      },
      outcome);
}

void InstallLimitRoutes(httplib::Server& server, const LimitRoutes& routes) {
  if (routes.credits) {
    InstallCreditRoutes(server, routes.authorized, *routes.credits, routes.idempotency);
  }
  if (routes.rate_limiter) {
    server.Post(kRateLimitTakeRoute,
                Guarded(routes.authorized, *routes.rate_limiter, Take, routes.idempotency));
  }
  if (routes.leases) {
    locks::LeaseStore& leases = *routes.leases;
    server.Post(R"(/v1/leases/([^/]+))",
                Guarded(routes.authorized, leases, Acquire, routes.idempotency));
    server.Post(R"(/v1/leases/([^/]+)/renew)",
                Guarded(routes.authorized, leases, Renew, routes.idempotency));
    server.Delete(R"(/v1/leases/([^/]+))", Guarded(routes.authorized, leases, Release));
    server.Get(R"(/v1/leases/([^/]+))", Guarded(routes.authorized, leases, GetLease));
  }
}

bool CheckoutRateLimit::Admit(const httplib::Request& req, httplib::Response& res) {
  const locks::TakeOutcome outcome =
      limiter_.Take(visitors_.VisitorOf(req), locks::kCheckoutBucket, 1);
  const AdmitDecision decision = DecideAdmission(outcome);
  if (!decision.log_event.empty()) {
    base::LogWarn(decision.log_event, {{"why", decision.why}});
  }
  if (decision.admit) return true;
  base::LogInfo("checkout_rate_limited", {{"retry_after_seconds", decision.retry_after_seconds}});
  const HttpError e = CheckoutRateLimited(decision.retry_after_seconds);
  if (MediaTypeOf(req) == "application/x-www-form-urlencoded") {
    WriteErrorPage(res, e);
  } else {
    WriteError(res, e);
  }
  return false;
}

AdmitDecision DecideAdmission(const locks::TakeOutcome& outcome) {
  return std::visit(
      [](const auto& o) -> AdmitDecision {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, locks::RateAllowed>) {
          return {true, 0, "", ""};
        } else if constexpr (std::is_same_v<T, locks::RateLimited>) {
          return {false, o.retry_after_seconds, "", ""};
        } else if constexpr (std::is_same_v<T, locks::UnknownBucket>) {
          return {true, 0, "checkout_rate_limit_misconfigured",
                  "the \"checkout\" bucket is not configured: checkouts are not limited"};
        } else if constexpr (std::is_same_v<T, locks::CostOverCapacity>) {
          return {
              true, 0, "checkout_rate_limit_misconfigured",
              "the \"checkout\" bucket holds less than one checkout: checkouts are not limited"};
        } else {
          // The reservation that follows reports the database trouble itself.
          return {true, 0, "checkout_rate_limit_undecided", o.detail};
        }
      },
      outcome);
}

}  // namespace paintlock::gateway
