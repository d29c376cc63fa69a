// The credit-hold endpoints (locks/CREDITS.md), server-to-server behind the
// API key:
//   GET  /v1/accounts/{id}                 balance, held, available (computed now)
//   POST /v1/accounts/{id}/credits         top up; Idempotency-Key header required
//   POST /v1/accounts/{id}/holds           {"amount", "ttl_seconds"} → 201 hold or 409
//   GET  /v1/holds/{id}
//   POST /v1/holds/{id}/commit             moves the balance once; repeats replay
//   POST /v1/holds/{id}/release            cancels; repeats replay
// Outcomes (locks/credits.h) map to statuses in one place, CreditError().
// Thread-safe: handlers share only the thread-safe store.
#pragma once

#include <httplib.h>

#include <functional>

#include "gateway/idempotency.h"
#include "gateway/limit_requests.h"
#include "gateway/middleware.h"
#include "locks/credits.h"

namespace paintlock::gateway {

// False (and the 401 written) unless the request carries the API key.

// Holds, commits and releases honour an Idempotency-Key through
// `idempotency` (null: they ignore it); a top-up keeps its own required key.
void InstallCreditRoutes(httplib::Server& server, AuthorizeFn authorized,
                         locks::CreditStore& credits, IdempotentRequests* idempotency = nullptr);

// The hold's and the commit's routes and the halves around their statements,
// shared by the workers' handlers and the reactor's (gateway/reactor_routes.h).
inline constexpr const char* kCreditHoldRoute = R"(/v1/accounts/([^/]+)/holds)";
inline constexpr const char* kCreditCommitRoute = R"(/v1/holds/([^/]+)/commit)";
struct HoldCall {
  std::string account;  // as in the path (req.matches[1])
  HoldRequest request;
};
// False with the 4xx written when the body is not a hold.
bool ReadHold(const httplib::Request& req, httplib::Response& res, HoldCall* call);
void WriteHold(const HoldCall& call, const locks::HoldOutcome& outcome, httplib::Response& res);
void WriteCommit(const locks::CommitOutcome& outcome, httplib::Response& res);

}  // namespace paintlock::gateway
