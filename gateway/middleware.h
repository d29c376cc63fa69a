// What runs around every route: request ids, CORS (preflights answered here),
// the access log, and the last-resort answers for requests no route served or
// a handler that threw. Plus the server API's key check, which routes call.
//
// Every response carries X-Request-Id (the caller's, when it sent a sane one)
// and every log line written while serving it has the same request_id. A
// handler that throws answers 500 with no internals and logs the request id.
// Thread-safe.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "gateway/config.h"

namespace paintlock::gateway {

void InstallMiddleware(httplib::Server& server, const Config& config);

// The middleware's two halves, for a request served outside httplib (the
// edge's reactor routes, gateway/reactor_routes.h), on the thread serving it:
// BeginRequest sets the request id (thread-local, for log lines, and the
// X-Request-Id header), Cache-Control and the CORS headers, and is true when
// that answered the request already (a preflight); EndRequest writes the
// access-log line, counts the request (under `route`, or the label
// RouteLabel reads from req.matches when it is empty), and clears the
// request id.
bool BeginRequest(const Config& config, const httplib::Request& req, httplib::Response& res);
void EndRequest(const httplib::Request& req, const httplib::Response& res,
                std::chrono::steady_clock::time_point started, std::string_view route = {});

// False (and the 401 written) unless the request carries
// Authorization: Bearer <PAINTLOCK_API_KEY>; compared in constant time.
bool RequireApiKey(const Config& config, const httplib::Request& req, httplib::Response& res);

// The same check as a callable, for route groups that take one.
using AuthorizeFn = std::function<bool(const httplib::Request&, httplib::Response&)>;

// The request's media type: lowercase, without parameters.
std::string MediaTypeOf(const httplib::Request& req);

// The request path as it may be logged: a licence key in the path is a
// secret and is replaced.
std::string LoggablePath(const std::string& path);

}  // namespace paintlock::gateway
