// Daily quotas and licences over HTTP (locks/QUOTAS.md).
//
//   POST /v1/quotas/{name}/consume  → 200 {"allowed": true, "used", "limit", "resets_at", …}
//                                      or 429 quota_exceeded + Retry-After
//   GET  /v1/quotas/{name}          → today's count, counting nothing
//   GET  /v1/licenses/{key}         → {"valid", "status", "current_period_end"}; 404 if unknown
//   GET  /v1/license                → the same for the key in the request's headers
//
// Who is counted: the visitor (base::VisitorIdentity: an HMAC of the client
// address; the address itself is never stored or logged), or — for a caller
// with the API key — the subject it names ({"subject": "…"} in the body, or
// ?subject= on GET). A request carrying a valid licence key
// (Authorization: License plk_…, or X-License-Key) is allowed and not
// counted; a key that does not validate is refused (401/403) rather than
// silently counted, so a client learns that its key is wrong.
//
// Everything a request says is checked before anything is counted: bad input
// answers 4xx and changes nothing. Thread-safe: handlers share only
// thread-safe collaborators.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>

#include "base/visitor.h"
#include "gateway/config.h"
#include "gateway/http_errors.h"
#include "gateway/idempotency.h"
#include "locks/licenses.h"
#include "locks/quotas.h"
#include "webhooks/subscriptions.h"

namespace paintlock::gateway {

struct QuotaServices {
  locks::QuotaStore& quotas;
  locks::LicenseValidator& licenses;
  webhooks::SubscriptionLicenses& subscriptions;
};

// Installs the routes above. `services` and `visitors` must outlive the server.
// A consume that names a subject honours an Idempotency-Key through
// `idempotency` (null: ignored); a visitor's consume ignores the header.
void InstallQuotaRoutes(httplib::Server& server, const Config& config, QuotaServices& services,
                        const base::VisitorIdentity& visitors,
                        IdempotentRequests* idempotency = nullptr);

// Limits on what these routes read, far below the server-wide ones: a
// request beyond them is refused before anything else happens.
constexpr std::size_t kMaxQuotaBodyBytes = 1024;
constexpr std::size_t kMaxLicenseHeaderBytes = 256;

// The licence key a request carries, `Authorization: License KEY` or
// `X-License-Key: KEY`, in *key (nullopt when it carries none). False with
// *error when the headers are unusable (too long, or two different keys).
bool LicenseKeyOf(const httplib::Request& req, std::optional<std::string>* key, HttpError* error);

// A consume as read by the worker route, for the edge's reactor
// (gateway/reactor_routes.h), which runs the statement itself.
struct ConsumeCall {
  const locks::QuotaPolicy* quota = nullptr;  // the store's own
  std::string who;                            // the stored subject counted
  bool named = false;                         // named by the caller (API key): not a visitor
};

// Whether a consume's answer needs the licence check (the request carries a
// licence key, or licence headers that do not parse): the worker route's.
bool ConsumeNeedsLicense(const httplib::Request& req);

// Reads a consume request without a licence key as the worker route does:
// false when `res` holds its answer already (an unknown quota, bad input, a
// subject named without the API key).
bool ReadConsume(const Config& config, QuotaServices& services,
                 const base::VisitorIdentity& visitors, const httplib::Request& req,
                 httplib::Response& res, ConsumeCall* call);

// The answer for a consume's outcome.
void WriteConsume(const ConsumeCall& call, const locks::ConsumeOutcome& outcome,
                  httplib::Response& res);

// The route's pattern, for the reactor's match.
inline constexpr const char* kQuotaConsumeRoute = R"(/v1/quotas/([^/]+)/consume)";

// The body of a consume request: empty, or a JSON object whose only member is
// "subject". False with *error (a 4xx) otherwise; *subject is set when one is
// named, after checking it (locks::SubjectNameProblem).
bool ParseConsumeBody(const httplib::Request& req, std::optional<std::string>* subject,
                      HttpError* error);

}  // namespace paintlock::gateway
