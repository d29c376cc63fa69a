#include "gateway/limit_routes.h"

#include "gateway/limit_requests.h"

#include <cctype>

#include "gateway/log.h"

namespace paintlock::gateway {

using nlohmann::json;

HttpError ErrorForField(const FieldError& error) {
  return InvalidRequest(error.message, error.param);
}

HttpError ErrorForLimits(const locks::DbFailure& failure) {
  switch (failure.kind) {
    case locks::DbFailureKind::kContended:
      return {503, "busy",
              "Other requests are changing this right now. Nothing changed; retry in a moment.",
              json::object(), 1};
    case locks::DbFailureKind::kUnavailable:
      return {503, "unavailable",
              "The gateway cannot reach its database right now. Nothing changed; retry in a "
              "moment.",
              json::object(), 2};
    case locks::DbFailureKind::kInternal:
      break;
  }
  return ErrorFor(failure);  // the generic 500, no internals
}

std::string RequestMediaType(const httplib::Request& req) {
  std::string ct = req.get_header_value("Content-Type");
  ct = ct.substr(0, ct.find(';'));
  for (auto& c : ct) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!ct.empty() && ct.back() == ' ') ct.pop_back();
  return ct;
}

namespace {

HttpError LimitedError(const locks::RateLimited& limited) {
  return {429,
          "rate_limited",
          "Rate limit reached for \"" + limited.key + "\"; retry in " +
              std::to_string(limited.retry_after_seconds) + " s.",
          {{"allowed", false},
           {"key", limited.key},
           {"remaining", limited.remaining},
           {"retry_after_seconds", limited.retry_after_seconds}},
          limited.retry_after_seconds};
}

std::string BucketNames(const std::vector<locks::RateBucket>& buckets) {
  std::string names;
  for (const auto& b : buckets) names += (names.empty() ? "" : ", ") + b.name;
  return names;
}

// ------------------------------------------------------------ rate limits --

void Take(locks::RateLimiter& limiter, const httplib::Request& req, httplib::Response& res) {
  const std::string key = req.matches[1];
  if (!locks::IsValidRateKey(key)) {
    return WriteError(res, InvalidRequest("A rate-limit key is 1 to 200 letters, digits and "
                                          "_.:@- (\"bucket:subject\").",
                                          "key"));
  }
  auto parsed = ParseTakeRequest(req.body);
  if (auto* e = std::get_if<FieldError>(&parsed)) return WriteError(res, ErrorForField(*e));
  const TakeRequest& take = std::get<TakeRequest>(parsed);

  const locks::TakeOutcome outcome = limiter.Take(key, take.bucket, take.cost);
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, locks::RateAllowed>) {
          WriteJson(res, 200, {{"allowed", true}, {"key", o.key}, {"remaining", o.remaining}});
        } else if constexpr (std::is_same_v<T, locks::RateLimited>) {
          WriteError(res, LimitedError(o));
        } else if constexpr (std::is_same_v<T, locks::UnknownBucket>) {
          const std::string names = BucketNames(limiter.buckets());
          WriteError(res,
                     {400,
                      "unknown_bucket",
                      o.bucket.empty()
                          ? "Name the bucket: a \"bucket\" field, or a key \"bucket:subject\". "
                            "Configured buckets: " +
                                names + "."
                          : "There is no bucket \"" + o.bucket +
                                "\" (PAINTLOCK_RATE_LIMITS). Configured buckets: " + names + ".",
                      {{"param", "bucket"}},
                      0});
        } else if constexpr (std::is_same_v<T, locks::CostOverCapacity>) {
          WriteError(res, {422,
                           "cost_over_capacity",
                           "A cost of " + std::to_string(o.cost) +
                               " can never be taken from a "
                               "bucket that holds at most " +
                               std::to_string(o.capacity) + ".",
                           {{"param", "cost"}, {"capacity", o.capacity}},
                           0});
        } else {
          WriteError(res, ErrorForLimits(o));
        }
      },
      outcome);
}

// ----------------------------------------------------------------- leases --

json LeaseJson(const locks::LeaseGranted& g) {
  return {{"name", g.name}, {"holder", g.holder}, {"token", g.token}, {"expires_at", g.expires_at}};
}

HttpError LostError(const locks::LeaseLost& lost, const std::string& doing) {
  HttpError e{409, "lease_lost",
              "This holder's grant of lease \"" + lost.name + "\" is no longer current (it " +
                  "lapsed, was released, or was granted again since); it cannot " + doing +
                  " it. Acquire it again for a new token.",
              json::object(), 0};
  e.extra["holder"] = lost.holder ? json(*lost.holder) : json(nullptr);
  if (!lost.expires_at.empty()) e.extra["expires_at"] = lost.expires_at;
  return e;
}

HttpError LeaseNotFoundError(const std::string& name) {
  return {404, "lease_not_found", "There is no lease \"" + name + "\".", json::object(), 0};
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
  if (RequestMediaType(req) != "application/json") {
    WriteError(res, {415, "unsupported_media_type",
                     "Send the body as application/json ({\"holder\": \"worker-1\", "
                     "\"ttl_seconds\": 30}).",
                     json::object(), 0});
    return false;
  }
  auto parsed = ParseLeaseRequest(req.body, with_token);
  if (auto* e = std::get_if<FieldError>(&parsed)) return WriteError(res, ErrorForField(*e)), false;
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
    return WriteError(res, {409,
                            "lease_held",
                            "Lease \"" + name + "\" is held by \"" + held->holder + "\" until " +
                                held->expires_at + " unless they renew it.",
                            {{"holder", held->holder}, {"expires_at", held->expires_at}},
                            std::max(1, held->retry_after_seconds)});
  }
  WriteError(res, ErrorForLimits(std::get<locks::DbFailure>(outcome)));
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
          WriteError(res, LostError(o, "renew"));
        else if constexpr (std::is_same_v<T, locks::LeaseNotFound>)
          WriteError(res, LeaseNotFoundError(name));
        else
          WriteError(res, ErrorForLimits(o));
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
          WriteError(res, LostError(o, "release"));
        } else if constexpr (std::is_same_v<T, locks::LeaseNotFound>) {
          WriteError(res, LeaseNotFoundError(name));
        } else {
          WriteError(res, ErrorForLimits(o));
        }
      },
      outcome);
}

void GetLease(locks::LeaseStore& leases, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  auto got = leases.Get(name);
  if (auto* f = std::get_if<locks::DbFailure>(&got)) return WriteError(res, ErrorForLimits(*f));
  const auto& v = std::get<std::optional<locks::LeaseView>>(got);
  if (!v) return WriteError(res, LeaseNotFoundError(name.substr(0, 128)));
  json j = {
      {"name", v->name}, {"live", v->live}, {"token", v->token}, {"granted_at", v->granted_at}};
  // A lapsed grant names nobody: the lease is free.
  j["holder"] = v->live && v->holder ? json(*v->holder) : json(nullptr);
  if (v->live) j["expires_at"] = v->expires_at;
  WriteJson(res, 200, j);
}

template <class Store>
auto Guarded(const AuthorizeFn& authorized, Store& store,
             void (*handler)(Store&, const httplib::Request&, httplib::Response&)) {
  return [authorized, &store, handler](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res)) handler(store, req, res);
  };
}

}  // namespace

void InstallLimitRoutes(httplib::Server& server, const LimitRoutes& routes) {
  if (routes.credits) InstallCreditRoutes(server, routes.authorized, *routes.credits);
  if (routes.rate_limiter) {
    server.Post(R"(/v1/ratelimits/([^/]+)/take)",
                Guarded(routes.authorized, *routes.rate_limiter, Take));
  }
  if (routes.leases) {
    locks::LeaseStore& leases = *routes.leases;
    server.Post(R"(/v1/leases/([^/]+))", Guarded(routes.authorized, leases, Acquire));
    server.Post(R"(/v1/leases/([^/]+)/renew)", Guarded(routes.authorized, leases, Renew));
    server.Delete(R"(/v1/leases/([^/]+))", Guarded(routes.authorized, leases, Release));
    server.Get(R"(/v1/leases/([^/]+))", Guarded(routes.authorized, leases, GetLease));
  }
}

bool CheckoutRateLimit::Admit(const httplib::Request& req, httplib::Response& res) {
  const locks::TakeOutcome outcome =
      limiter_.Take(visitors_.VisitorOf(req), locks::kCheckoutBucket, 1);
  const auto* limited = std::get_if<locks::RateLimited>(&outcome);
  if (!limited) {
    if (const auto* f = std::get_if<locks::DbFailure>(&outcome)) {
      LogWarn("checkout_rate_limit_undecided", {{"error", f->detail}});
    }
    return true;
  }
  LogInfo("checkout_rate_limited", {{"retry_after_seconds", limited->retry_after_seconds}});
  // The key is the visitor's keyed hash: harmless, but of no use to a buyer.
  HttpError e{429,
              "rate_limited",
              "Too many checkout attempts from your address. Please wait " +
                  std::to_string(limited->retry_after_seconds) +
                  (limited->retry_after_seconds == 1 ? " second" : " seconds") +
                  " and try again. Nothing was reserved or charged.",
              {{"retry_after_seconds", limited->retry_after_seconds}},
              limited->retry_after_seconds};
  if (RequestMediaType(req) == "application/x-www-form-urlencoded") {
    WriteErrorPage(res, e);
  } else {
    WriteError(res, e);
  }
  return false;
}

}  // namespace paintlock::gateway
