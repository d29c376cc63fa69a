#include "gateway/storefront_routes.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace paintlock::gateway {

namespace {

// RFC 3986 unreserved characters stay, everything else is %XX.
std::string QueryEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// A strong validator for the compiled-in script (FNV-1a of its text).
std::string ScriptEtag() {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : PaintlockScript()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"%016llx\"", static_cast<unsigned long long>(h));
  return buf;
}

void ServeScript(const httplib::Request& req, httplib::Response& res) {
  static const std::string etag = ScriptEtag();
  // Unlike the API's answers, the script may be cached, briefly: a gateway
  // upgrade reaches every page within five minutes.
  res.headers.erase("Cache-Control");
  res.set_header("Cache-Control", "public, max-age=300");
  res.set_header("ETag", etag);
  res.set_header("Cross-Origin-Resource-Policy", "cross-origin");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (req.get_header_value("If-None-Match") == etag) {
    res.status = 304;
    return;
  }
  res.set_content(std::string(PaintlockScript()), "text/javascript; charset=utf-8");
}

}  // namespace

void InstallStorefrontRoutes(httplib::Server& server, const Config&,
                             AvailabilityStream* availability) {
  server.Get("/paintlock.js", ServeScript);
  if (availability != nullptr) {
    server.Get("/v1/paintings/stream",
               [availability](const httplib::Request& req, httplib::Response& res) {
                 availability->Serve(req, res);
               });
  }
}

std::string UnavailableLocation(const std::string& unavailable_url, const HttpError& error) {
  if (unavailable_url.empty() || error.status != 409) return "";
  std::string query;
  auto add = [&](const std::string& name, const std::string& value) {
    if (value.empty()) return;
    query += (query.empty() ? "" : "&") + name + "=" + QueryEscape(value);
  };
  if (error.extra.is_object()) add("painting", error.extra.value("painting", ""));
  add("code", error.code);
  if (error.extra.is_object()) add("free_at", error.extra.value("free_at", ""));

  // The query goes before any #fragment, after any query the URL has.
  std::string url = unavailable_url, fragment;
  if (const auto hash = url.find('#'); hash != std::string::npos) {
    fragment = url.substr(hash);
    url.resize(hash);
  }
  const char joiner = url.find('?') == std::string::npos
                          ? '?'
                          : (url.back() == '?' || url.back() == '&' ? '\0' : '&');
  if (joiner != '\0') url.push_back(joiner);
  return url + query + fragment;
}

bool RedirectToUnavailablePage(const std::string& unavailable_url, const HttpError& error,
                               httplib::Response& res) {
  const std::string location = UnavailableLocation(unavailable_url, error);
  if (location.empty()) return false;
  if (error.retry_after_seconds > 0)
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  res.set_redirect(location, 303);
  return true;
}

}  // namespace paintlock::gateway
