// The storefront side of the gateway (fixtures/storefront/README.md):
//   GET /paintlock.js          the drop-in checkout-button script; its source is
//                              gateway/paintlock.js, compiled into the binary so
//                              the script always matches the API it calls
//   GET /v1/paintings/stream   live availability (gateway/availability_stream.h)
// and, for HTML form posts that lose their painting, the 303 to
// PAINTLOCK_UNAVAILABLE_URL. CORS for these is gateway/cors.h.
// Thread-safe.
#pragma once

#include <httplib.h>

#include <string>
#include <string_view>

#include "gateway/availability_stream.h"
#include "gateway/config.h"
#include "gateway/http_errors.h"

namespace paintlock::gateway {

// Registers the routes above. `availability` null: no stream route. Must be
// called before GET /v1/paintings/{id} is registered, which would match
// "stream" too.
void InstallStorefrontRoutes(httplib::Server& server, const Config& config,
                             AvailabilityStream* availability);

// Where a form post that failed with `error` goes: for a conflict (409:
// reserved, sold, busy) and a configured `unavailable_url`, that URL with
// painting, code and free_at (those the error has) added to its query;
// otherwise empty (the caller shows its HTML page).
std::string UnavailableLocation(const std::string& unavailable_url, const HttpError& error);

// Writes the 303 to UnavailableLocation(...) and returns true, or returns
// false when there is none.
bool RedirectToUnavailablePage(const std::string& unavailable_url, const HttpError& error,
                               httplib::Response& res);

// gateway/paintlock.js, as compiled in (generated/paintlock_js.cc).
std::string_view PaintlockScript();

}  // namespace paintlock::gateway
