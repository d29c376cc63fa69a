// Cross-origin use of the public endpoints (fixtures/storefront/README.md,
// "CORS"): a storefront on another origin calls POST /v1/checkout, reads
// /v1/paintings*, subscribes to the stream and loads /paintlock.js.
//
// Only origins listed exactly in PAINTLOCK_ALLOWED_ORIGINS get CORS headers;
// there is no wildcard, and no credentials are ever allowed (nothing public
// needs cookies). Requests from other origins are still served, without CORS
// headers, so a browser keeps their answers from the page; their preflights
// are refused with 403. Same-origin pages (the demo shop at /shop/) and HTML
// form posts need no CORS at all. Pure functions: thread-safe.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>
#include <vector>

namespace paintlock::gateway {

// True for the endpoints a page on another origin may call: /v1/checkout,
// /v1/paintings, /v1/paintings/… (the stream included) and /paintlock.js.
bool IsPublicPath(const std::string& path);

// Reads PAINTLOCK_ALLOWED_ORIGINS: comma-separated origins
// ("https://shop.example, http://localhost:3000"), lower-cased, default ports
// dropped, as browsers send them. nullopt and *problem when one is not an
// origin (a path, a trailing slash, a wildcard).
std::optional<std::vector<std::string>> ParseAllowedOrigins(const std::string& text,
                                                            std::string* problem);

// Called for every request before routing. On a public path: adds
// Vary: Origin, and for an allowed Origin the Access-Control-* headers; answers
// a preflight (OPTIONS) itself, 204 for an allowed origin and 403
// origin_not_allowed for any other. Returns true when it answered.
bool ApplyCors(const std::vector<std::string>& allowed_origins, const httplib::Request& req,
               httplib::Response& res);

}  // namespace paintlock::gateway
