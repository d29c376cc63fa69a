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

#include <functional>
#include <string>

#include "gateway/config.h"

namespace paintlock::gateway {

void InstallMiddleware(httplib::Server& server, const Config& config);

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
