#include "gateway/quota_routes.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "gateway/log.h"
#include "gateway/request_parsing.h"

namespace paintlock::gateway {

namespace {

constexpr std::size_t kMaxAuthorizationBytes = 1024;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string MediaTypeOf(const httplib::Request& req) {
  std::string ct = req.get_header_value("Content-Type");
  return Trim(Lower(ct.substr(0, ct.find(';'))));
}

// `Authorization: SCHEME credentials` with the scheme compared case-insensitively
// (RFC 9110); the credentials, or nullopt for another scheme.
std::optional<std::string> Credentials(const httplib::Request& req, const std::string& scheme) {
  const std::string header = req.get_header_value("Authorization");
  if (header.size() <= scheme.size() ||
      Lower(header.substr(0, scheme.size() + 1)) != scheme + " ") {
    return std::nullopt;
  }
  return Trim(header.substr(scheme.size() + 1));
}

HttpError TooLarge(const std::string& what, std::size_t limit) {
  return {431, "header_too_large", what + " is longer than " + std::to_string(limit) + " bytes.",
          nlohmann::json::object(), 0};
}

enum class ApiKey { kAbsent, kValid, kWrong };

ApiKey ApiKeyOf(const httplib::Request& req, const Config& config) {
  const auto given = Credentials(req, "bearer");
  if (!given) return ApiKey::kAbsent;
  const bool ok = !config.api_key.empty() && given->size() == config.api_key.size() &&
                  CRYPTO_memcmp(given->data(), config.api_key.data(), given->size()) == 0;
  return ok ? ApiKey::kValid : ApiKey::kWrong;
}

HttpError Unauthorized(const Config& config, const std::string& why) {
  return {401, "unauthorized",
          config.api_key.empty()
              ? "Naming a subject needs the API key, and the API key is disabled: "
                "set PAINTLOCK_API_KEY on the gateway."
              : why,
          nlohmann::json::object(), 0};
}

HttpError QuotaNotFound(const std::string& name, const locks::QuotaStore& store) {
  std::vector<std::string> names;
  for (const auto& p : store.policies()) names.push_back(p.name);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return {404,
          "quota_not_found",
          "There is no quota \"" + PrintableExcerpt(name, 64) + "\". This gateway counts: " + list +
              ".",
          {{"quota", PrintableExcerpt(name, 64)}, {"quotas", names}},
          0};
}

HttpError ErrorForQuotas(const locks::DbFailure& failure) {
  switch (failure.kind) {
    case locks::DbFailureKind::kContended:
      return {503, "quota_busy",
              "Too many requests for this quota are being decided at this very moment; try again "
              "in a second.",
              nlohmann::json::object(), 1};
    case locks::DbFailureKind::kUnavailable:
      return {503, "unavailable",
              "The gateway cannot reach its database right now; try again in a moment.",
              nlohmann::json::object(), 2};
    case locks::DbFailureKind::kInternal:
      break;
  }
  return {500, "internal",
          "Something went wrong on our side. Quote the request id if you contact the seller.",
          nlohmann::json::object(), 0};
}

HttpError LicenseRefused(const locks::LicenseCheck& check) {
  if (const auto* inactive = std::get_if<locks::LicenseInactive>(&check)) {
    return {403,
            "license_inactive",
            "This licence's subscription is " + inactive->license.status +
                ": it no longer lifts the quota. Renew the subscription, or send the request "
                "without the key to use the free daily quota.",
            {{"status", inactive->license.status}},
            0};
  }
  return {401, "license_invalid",
          "This licence key is not valid. Check it, or send the request without it to use the "
          "free daily quota.",
          nlohmann::json::object(), 0};
}

nlohmann::json LicenseJson(const locks::LicenseView& v) {
  nlohmann::json j = {{"status", v.status}};
  j["current_period_end"] =
      v.current_period_end.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.current_period_end);
  return j;
}

// "midnight (Europe/Paris), at 2026-12-02T23:00:00Z"
std::string ResetPhrase(const locks::QuotaPolicy& quota, const std::string& resets_at) {
  return "midnight (" + quota.time_zone + "), at " + resets_at;
}

HttpError Exceeded(const locks::QuotaPolicy& quota, const locks::QuotaExceeded& e) {
  HttpError error;
  error.status = 429;
  error.code = "quota_exceeded";
  error.message = quota.limit == 0
                      ? "The \"" + quota.name + "\" quota is for licence holders only."
                      : "You have used all " + std::to_string(quota.limit) + " \"" + quota.name +
                            "\" allowed today. The count starts again at " +
                            ResetPhrase(quota, e.resets_at) + ".";
  error.extra = {
      {"quota", quota.name}, {"used", e.used}, {"limit", e.limit}, {"resets_at", e.resets_at}};
  error.retry_after_seconds = std::max(1, e.retry_after_seconds);
  return error;
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

struct Routes {
  const Config& config;
  QuotaServices& s;
  const VisitorIdentity& visitors;

  void Consume(const httplib::Request& req, httplib::Response& res) {
    const locks::QuotaPolicy* quota = s.quotas.Find(req.matches[1]);
    if (quota == nullptr) return WriteError(res, QuotaNotFound(req.matches[1], s.quotas));
    HttpError error;
    Presented presented;
    if (!ReadPresented(req, config, &presented, &error)) return WriteError(res, error);
    std::optional<std::string> subject;
    if (!ParseConsumeBody(req, &subject, &error)) return WriteError(res, error);
    if (subject && presented.api_key != ApiKey::kValid) {
      return WriteError(res, Unauthorized(config,
                                          "Naming a subject needs the API key: send "
                                          "Authorization: Bearer <PAINTLOCK_API_KEY>."));
    }
    if (presented.license) return AnswerForLicense(s, *quota, *presented.license, res);

    const std::string who =
        subject ? locks::NamedSubject(*subject) : locks::VisitorSubject(visitors.VisitorOf(req));
    const locks::ConsumeOutcome outcome = s.quotas.Consume(*quota, who);
    if (const auto* f = std::get_if<locks::DbFailure>(&outcome))
      return WriteError(res, ErrorForQuotas(*f));
    if (const auto* e = std::get_if<locks::QuotaExceeded>(&outcome))
      return WriteError(res, Exceeded(*quota, *e));
    const auto& a = std::get<locks::QuotaAllowed>(outcome);
    WriteJson(res, 200,
              {{"allowed", true},
               {"quota", quota->name},
               {"used", a.used},
               {"limit", a.limit},
               {"remaining", std::max(0, a.limit - a.used)},
               {"resets_at", a.resets_at}});
  }

  void Usage(const httplib::Request& req, httplib::Response& res) {
    const locks::QuotaPolicy* quota = s.quotas.Find(req.matches[1]);
    if (quota == nullptr) return WriteError(res, QuotaNotFound(req.matches[1], s.quotas));
    HttpError error;
    Presented presented;
    if (!ReadPresented(req, config, &presented, &error)) return WriteError(res, error);
    std::optional<std::string> subject;
    if (req.has_param("subject")) {
      subject = req.get_param_value("subject");
      if (const std::string problem = locks::SubjectNameProblem(*subject); !problem.empty()) {
        return WriteError(res, InvalidRequest(problem, "subject"));
      }
      if (presented.api_key != ApiKey::kValid) {
        return WriteError(res, Unauthorized(config,
                                            "Naming a subject needs the API key: send "
                                            "Authorization: Bearer <PAINTLOCK_API_KEY>."));
      }
    }
    if (presented.license) return AnswerForLicense(s, *quota, *presented.license, res);

    const std::string who =
        subject ? locks::NamedSubject(*subject) : locks::VisitorSubject(visitors.VisitorOf(req));
    auto usage = s.quotas.Usage(*quota, who);
    if (const auto* f = std::get_if<locks::DbFailure>(&usage))
      return WriteError(res, ErrorForQuotas(*f));
    const auto& u = std::get<locks::QuotaUsage>(usage);
    WriteJson(res, 200,
              {{"quota", quota->name},
               {"used", u.used},
               {"limit", u.limit},
               {"remaining", std::max(0, u.limit - u.used)},
               {"resets_at", u.resets_at}});
  }

  void ValidateLicense(const std::string& key, httplib::Response& res) {
    const locks::LicenseCheck check = s.licenses.Check(key);
    if (const auto* f = std::get_if<locks::DbFailure>(&check))
      return WriteError(res, ErrorForQuotas(*f));
    if (std::holds_alternative<locks::LicenseUnknown>(check)) {
      return WriteError(res, {404, "license_not_found", "There is no licence with this key.",
                              nlohmann::json::object(), 0});
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
      return WriteError(res, {401, "license_missing",
                              "Send the licence key as Authorization: License <key> or as "
                              "X-License-Key: <key>.",
                              nlohmann::json::object(), 0});
    }
    ValidateLicense(*key, res);
  }
};

}  // namespace

bool LicenseKeyOf(const httplib::Request& req, std::optional<std::string>* key, HttpError* error) {
  key->reset();
  if (req.has_header("X-License-Key")) {
    const std::string value = req.get_header_value("X-License-Key");
    if (value.size() > kMaxLicenseHeaderBytes) {
      *error = TooLarge("The X-License-Key header", kMaxLicenseHeaderBytes);
      return false;
    }
    *key = Trim(value);
  }
  if (auto in_authorization = Credentials(req, "license")) {
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
    *error = {413, "request_too_large",
              "The request body is larger than " + std::to_string(kMaxQuotaBodyBytes) +
                  " bytes; send nothing, or {\"subject\": \"…\"}.",
              nlohmann::json::object(), 0};
    return false;
  }
  if (Trim(req.body).empty()) return true;
  if (MediaTypeOf(req) != "application/json") {
    *error = {415, "unsupported_media_type",
              "Send no body, or {\"subject\": \"…\"} as application/json.",
              nlohmann::json::object(), 0};
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
                        const VisitorIdentity& visitors) {
  auto routes = std::make_shared<Routes>(Routes{config, services, visitors});
  server.Post(R"(/v1/quotas/([^/]+)/consume)",
              [routes](const auto& req, auto& res) { routes->Consume(req, res); });
  server.Get(R"(/v1/quotas/([^/]+))",
             [routes](const auto& req, auto& res) { routes->Usage(req, res); });
  server.Get(R"(/v1/licenses/([^/]+))",
             [routes](const auto& req, auto& res) { routes->LicenseInPath(req, res); });
  server.Get("/v1/license",
             [routes](const auto& req, auto& res) { routes->LicenseInHeaders(req, res); });
}

void ApplySubscriptionWebhook(QuotaServices& services, const std::string& body,
                              httplib::Response& res) {
  std::string problem;
  auto event = webhooks::DecodeSubscriptionEvent(body, &problem);
  if (!event) {
    LogWarn("webhook_malformed", {{"error", problem}});
    return WriteError(res, InvalidRequest("Malformed event: " + problem));
  }
  auto applied = services.subscriptions.Apply(*event);
  if (const auto* failure = std::get_if<webhooks::SubscriptionFailure>(&applied)) {
    switch (*failure) {
      case webhooks::SubscriptionFailure::kNotConfigured:
        LogWarn("subscription_not_applied",
                {{"event_id", event->event_id},
                 {"why", "PAINTLOCK_LICENSE_SECRET is not set: licences cannot be derived"}});
        return WriteError(res, {503, "licenses_not_configured",
                                "This gateway cannot issue licences (PAINTLOCK_LICENSE_SECRET is "
                                "not set); the event was not applied. Retry later.",
                                nlohmann::json::object(), 60});
      case webhooks::SubscriptionFailure::kDatabaseUnavailable:
        return WriteError(res, {503, "unavailable", "The event was not applied; retry later.",
                                nlohmann::json::object(), 5});
      case webhooks::SubscriptionFailure::kInternal:
        break;
    }
    return WriteError(res, {500, "internal", "The event was not applied; retry later.",
                            nlohmann::json::object(), 0});
  }
  const auto& a = std::get<webhooks::SubscriptionApplied>(applied);
  WriteJson(res, 200, {{"received", true}, {"handled", true}, {"outcome", a.outcome}});
}

}  // namespace paintlock::gateway
