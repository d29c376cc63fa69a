#include "gateway/cors.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

#include "base/text.h"
#include "gateway/http_errors.h"

namespace paintlock::gateway {

namespace {

bool IsAllowed(const std::vector<std::string>& allowed, const std::string& origin) {
  return !origin.empty() &&
         std::find(allowed.begin(), allowed.end(), base::AsciiLower(origin)) != allowed.end();
}

const char* MethodsFor(const std::string& path) {
  if (path == "/v1/checkout") return "POST, OPTIONS";
  const bool line = path.size() > 5 && path.compare(path.size() - 5, 5, "/line") == 0;
  return line ? "GET, POST, DELETE, OPTIONS" : "GET, OPTIONS";
}

}  // namespace

bool IsPublicPath(const std::string& path) {
  return path == "/v1/checkout" || path == "/v1/paintings" ||
         path.rfind("/v1/paintings/", 0) == 0 || path == "/paintlock.js";
}

std::optional<std::vector<std::string>> ParseAllowedOrigins(const std::string& text,
                                                            std::string* problem) {
  static const std::regex origin_re(
      R"(^(https?)://([a-z0-9.-]+|\[[0-9a-f:.]+\])(:([0-9]{1,5}))?$)");
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = base::Trim(item);
    if (item.empty()) continue;
    std::smatch m;
    const std::string lower = base::AsciiLower(item);
    if (!std::regex_match(lower, m, origin_re) || (m[4].matched && std::stol(m[4].str()) > 65535)) {
      *problem = "\"" + item + "\" is not an origin: write scheme://host[:port] (such as " +
                 "https://shop.example), with no path, no trailing slash and no wildcard";
      return std::nullopt;
    }
    std::string origin = std::string(m[1]) + "://" + std::string(m[2]);
    const bool default_port =
        (m[1] == "http" && m[4] == "80") || (m[1] == "https" && m[4] == "443");
    if (m[4].matched && !default_port) origin += ":" + std::string(m[4]);
    if (std::find(out.begin(), out.end(), origin) == out.end()) out.push_back(origin);
  }
  return out;
}

bool ApplyCors(const std::vector<std::string>& allowed_origins, const httplib::Request& req,
               httplib::Response& res) {
  if (!IsPublicPath(req.path)) return false;
  const std::string origin = req.get_header_value("Origin");
  const bool allowed = IsAllowed(allowed_origins, origin);
  const bool preflight = req.method == "OPTIONS";
  res.set_header("Vary",
                 preflight ? "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
                           : "Origin");
  if (allowed) {
    res.set_header("Access-Control-Allow-Origin", base::AsciiLower(origin));
    res.set_header("Access-Control-Expose-Headers", "Retry-After, X-Request-Id");
  }
  if (!preflight) return false;

  if (!origin.empty() && !allowed) {
    WriteError(res, OriginNotAllowed(origin));
    return true;
  }
  if (allowed) {
    res.set_header("Access-Control-Allow-Methods", MethodsFor(req.path));
    res.set_header("Access-Control-Allow-Headers",
                   "Content-Type, X-Request-Id, Last-Event-ID, Paintlock-Line-Token");
    res.set_header("Access-Control-Max-Age", "600");
  }
  res.set_header("Allow", MethodsFor(req.path));
  res.status = 204;
  return true;
}

}  // namespace paintlock::gateway
