#include "gateway/quota_routes.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "base/http_text.h"
#include "base/log.h"
#include "base/text.h"
#include "gateway/middleware.h"
#include "gateway/request_parsing.h"

namespace paintlock::gateway {

namespace {

constexpr std::size_t kMaxAuthorizationBytes = 1024;

HttpError TooLarge(const std::string& what, std::size_t limit) {
  return HeaderTooLarge(what, limit);
}

enum class ApiKey { kAbsent, kValid, kWrong };

ApiKey ApiKeyOf(const httplib::Request& req, const Config& config) {
  const auto given = base::BearerTokenOf(req.get_header_value("Authorization"));
  if (!given) return ApiKey::kAbsent;
  const bool ok = !config.api_key.empty() && base::ConstantTimeEquals(*given, config.api_key);
  return ok ? ApiKey::kValid : ApiKey::kWrong;
}

HttpError Unauthorized(const Config& config, const std::string& why) {
  return gateway::Unauthorized(!config.api_key.empty(), why);
}

HttpError QuotaNotFound(const std::string& name, const locks::QuotaStore& store) {
  std::vector<std::string> names;
  for (const auto& p : store.policies()) names.push_back(p.name);
  return gateway::QuotaNotFound(name, names);
}

HttpError ErrorForQuotas(const locks::DbFailure& failure) {
  return ErrorFor(failure, Surface::kQuotas);
}

HttpError LicenseRefused(const locks::LicenseCheck& check) {
  if (const auto* inactive = std::get_if<locks::LicenseInactive>(&check))
    return ErrorFor(*inactive);
  return LicenseInvalid();
}

nlohmann::json LicenseJson(const locks::LicenseView& v) {
  nlohmann::json j = {{"status", v.status}};
  j["current_period_end"] =
      v.current_period_end.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.current_period_end);
  return j;
}

HttpError Exceeded(const locks::QuotaPolicy& quota, const locks::QuotaExceeded& e) {
  return ErrorFor(e, quota);
}

// What a request presents, read and checked before anything is decided.
struct Presented {
  ApiKey api_key = ApiKey::kAbsent;
  std::optional<std::string> license;
};

bool ReadPresented(const httplib::Request& req, const Config& config, Presented* p,
                   HttpError* error) {
  if (req.get_header_value("Authorization").size() > kMaxAuthorizationBytes) {
    *error = TooLarge("The Authorization header", kMaxAuthorizationBytes);
    return false;
  }
  p->api_key = ApiKeyOf(req, config);
  if (p->api_key == ApiKey::kWrong) {
    *error = Unauthorized(config,
                          "The API key is wrong: send Authorization: Bearer <PAINTLOCK_API_KEY>.");
    return false;
  }
  return LicenseKeyOf(req, &p->license, error);
}

// The answer for a request with a licence key: allowed and not counted, or
// refused because the key does not validate.
void AnswerForLicense(QuotaServices& s, const locks::QuotaPolicy& quota, const std::string& key,
                      httplib::Response& res) {
  const locks::LicenseCheck check = s.licenses.Check(key);
  if (const auto* f = std::get_if<locks::DbFailure>(&check))
    return WriteError(res, ErrorForQuotas(*f));
  if (const auto* valid = std::get_if<locks::LicenseValid>(&check)) {
    return WriteJson(res, 200,
                     {{"allowed", true},
                      {"licensed", true},
                      {"quota", quota.name},
                      {"limit", quota.limit},
                      {"license", LicenseJson(valid->license)}});
  }
  res.set_header("WWW-Authenticate", "License");
  WriteError(res, LicenseRefused(check));
}

// The quota in the path and whom the request counts against, in *call: the
// subject it names (which needs the API key), else the visitor. False when the
// request is already answered: an unknown quota, bad input, a licence key that decides
// it, or a subject it may not name. `read_subject(&subject, &error)` reads the
// subject the request names, if any.
template <class ReadSubject>
bool Count(const Config& config, QuotaServices& s, const base::VisitorIdentity& visitors,
           const httplib::Request& req, httplib::Response& res, ReadSubject read_subject,
           ConsumeCall* call) {
  const locks::QuotaPolicy* quota = s.quotas.Find(req.matches[1]);
  if (quota == nullptr) {
    WriteError(res, QuotaNotFound(req.matches[1], s.quotas));
    return false;
  }
  HttpError error;
  Presented presented;
  std::optional<std::string> subject;
  if (!ReadPresented(req, config, &presented, &error) || !read_subject(&subject, &error)) {
    WriteError(res, error);
    return false;
  }
  if (subject && presented.api_key != ApiKey::kValid) {
    WriteError(res, Unauthorized(config,
                                 "Naming a subject needs the API key: send "
                                 "Authorization: Bearer <PAINTLOCK_API_KEY>."));
    return false;
  }
  if (presented.license) {
    AnswerForLicense(s, *quota, *presented.license, res);
    return false;
  }
  *call = {quota,
           subject ? locks::NamedSubject(*subject) : locks::VisitorSubject(visitors.VisitorOf(req)),
           subject.has_value()};
  return true;
}

nlohmann::json Counts(const locks::QuotaPolicy& quota, int used, int limit,
                      const std::string& resets_at) {
  return {{"quota", quota.name},
          {"used", used},
          {"limit", limit},
          {"remaining", std::max(0, limit - used)},
          {"resets_at", resets_at}};
}

struct Routes {
  const Config& config;
  QuotaServices& s;
  const base::VisitorIdentity& visitors;
  IdempotentRequests* idempotency;

  void Consume(const httplib::Request& req, httplib::Response& res) {
    ConsumeCall call;
    if (!ReadConsume(config, s, visitors, req, res, &call)) return;
    ServeIdempotently(call.named ? idempotency : nullptr, req, res, Surface::kQuotas,
                      [&] { WriteConsume(call, s.quotas.Consume(*call.quota, call.who), res); });
  }

  void Usage(const httplib::Request& req, httplib::Response& res) {
    ConsumeCall c;  // a usage read counts whom a consume would
    const bool counts = Count(
        config, s, visitors, req, res,
        [&](std::optional<std::string>* subject, HttpError* error) {
          if (!req.has_param("subject")) return true;
          *subject = req.get_param_value("subject");
          const std::string problem = locks::SubjectNameProblem(**subject);
          if (!problem.empty()) *error = InvalidRequest(problem, "subject");
          return problem.empty();
        },
        &c);
    if (!counts) return;
    auto usage = s.quotas.Usage(*c.quota, c.who);
    if (const auto* f = std::get_if<locks::DbFailure>(&usage))
      return WriteError(res, ErrorForQuotas(*f));
    const auto& u = std::get<locks::QuotaUsage>(usage);
    WriteJson(res, 200, Counts(*c.quota, u.used, u.limit, u.resets_at));
  }

  void ValidateLicense(const std::string& key, httplib::Response& res) {
    const locks::LicenseCheck check = s.licenses.Check(key);
    if (const auto* f = std::get_if<locks::DbFailure>(&check))
      return WriteError(res, ErrorForQuotas(*f));
    if (std::holds_alternative<locks::LicenseUnknown>(check)) {
      return WriteError(res, LicenseNotFound());
    }
    const bool valid = std::holds_alternative<locks::LicenseValid>(check);
    const locks::LicenseView& v = valid ? std::get<locks::LicenseValid>(check).license
                                        : std::get<locks::LicenseInactive>(check).license;
    nlohmann::json body = LicenseJson(v);
    body["valid"] = valid;
    WriteJson(res, 200, body);
  }

  void LicenseInPath(const httplib::Request& req, httplib::Response& res) {
    ValidateLicense(req.matches[1], res);
  }

  void LicenseInHeaders(const httplib::Request& req, httplib::Response& res) {
    HttpError error;
    if (req.get_header_value("Authorization").size() > kMaxAuthorizationBytes) {
      return WriteError(res, TooLarge("The Authorization header", kMaxAuthorizationBytes));
    }
    std::optional<std::string> key;
    if (!LicenseKeyOf(req, &key, &error)) return WriteError(res, error);
    if (!key) {
      res.set_header("WWW-Authenticate", "License");
      return WriteError(res, LicenseMissing());
    }
    ValidateLicense(*key, res);
  }
};

}  // namespace

bool ConsumeNeedsLicense(const httplib::Request& req) {
  std::optional<std::string> key;
  HttpError error;
  return !LicenseKeyOf(req, &key, &error) || key.has_value();
}

bool ReadConsume(const Config& config, QuotaServices& services,
                 const base::VisitorIdentity& visitors, const httplib::Request& req,
                 httplib::Response& res, ConsumeCall* call) {
  return Count(
      config, services, visitors, req, res,
      [&](std::optional<std::string>* subject, HttpError* error) {
        return ParseConsumeBody(req, subject, error);
      },
      call);
}

void WriteConsume(const ConsumeCall& call, const locks::ConsumeOutcome& outcome,
                  httplib::Response& res) {
  if (const auto* f = std::get_if<locks::DbFailure>(&outcome))
    return WriteError(res, ErrorForQuotas(*f));
  if (const auto* e = std::get_if<locks::QuotaExceeded>(&outcome))
    return WriteError(res, Exceeded(*call.quota, *e));
  const auto& a = std::get<locks::QuotaAllowed>(outcome);
  nlohmann::json body = Counts(*call.quota, a.used, a.limit, a.resets_at);
  body["allowed"] = true;
  WriteJson(res, 200, body);
}

bool LicenseKeyOf(const httplib::Request& req, std::optional<std::string>* key, HttpError* error) {
  key->reset();
  if (req.has_header("X-License-Key")) {
    const std::string value = req.get_header_value("X-License-Key");
    if (value.size() > kMaxLicenseHeaderBytes) {
      *error = TooLarge("The X-License-Key header", kMaxLicenseHeaderBytes);
      return false;
    }
    *key = base::Trim(value);
  }
  if (auto in_authorization =
          base::CredentialsOf(req.get_header_value("Authorization"), "License")) {
    if (in_authorization->size() > kMaxLicenseHeaderBytes) {
      *error = TooLarge("The licence key", kMaxLicenseHeaderBytes);
      return false;
    }
    if (*key && **key != *in_authorization) {
      *error = InvalidRequest(
          "The request carries two different licence keys (Authorization and X-License-Key); "
          "send one.");
      return false;
    }
    *key = *in_authorization;
  }
  return true;
}

bool ParseConsumeBody(const httplib::Request& req, std::optional<std::string>* subject,
                      HttpError* error) {
  subject->reset();
  if (req.body.size() > kMaxQuotaBodyBytes) {
    *error =
        RequestTooLarge("The request body is larger than " + std::to_string(kMaxQuotaBodyBytes) +
                        " bytes; send nothing, or {\"subject\": \"…\"}.");
    return false;
  }
  if (base::Trim(req.body).empty()) return true;
  if (MediaTypeOf(req) != "application/json") {
    *error = UnsupportedMediaType("Send no body, or {\"subject\": \"…\"} as application/json.");
    return false;
  }
  const nlohmann::json j = nlohmann::json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = InvalidRequest("The body must be a JSON object: {\"subject\": \"…\"}.");
    return false;
  }
  for (const auto& [name, value] : j.items()) {
    // A mistyped field must not quietly count the caller's own address.
    if (name != "subject") {
      *error = InvalidRequest("Unknown field \"" + PrintableExcerpt(name, 64) +
                                  "\": the body may hold only \"subject\".",
                              PrintableExcerpt(name, 64));
      return false;
    }
    if (!value.is_string()) {
      *error = InvalidRequest("The subject must be a string.", "subject");
      return false;
    }
  }
  if (j.contains("subject")) {
    const std::string s = j["subject"].get<std::string>();
    if (const std::string problem = locks::SubjectNameProblem(s); !problem.empty()) {
      *error = InvalidRequest(problem, "subject");
      return false;
    }
    *subject = s;
  }
  return true;
}

void InstallQuotaRoutes(httplib::Server& server, const Config& config, QuotaServices& services,
                        const base::VisitorIdentity& visitors, IdempotentRequests* idempotency) {
  auto routes = std::make_shared<Routes>(Routes{config, services, visitors, idempotency});
  server.Post(kQuotaConsumeRoute,
              [routes](const auto& req, auto& res) { routes->Consume(req, res); });
  server.Get(R"(/v1/quotas/([^/]+))",
             [routes](const auto& req, auto& res) { routes->Usage(req, res); });
  server.Get(R"(/v1/licenses/([^/]+))",
             [routes](const auto& req, auto& res) { routes->LicenseInPath(req, res); });
  server.Get("/v1/license",
             [routes](const auto& req, auto& res) { routes->LicenseInHeaders(req, res); });
}

}  // namespace paintlock::gateway
