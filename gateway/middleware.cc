#include "gateway/middleware.h"

#include <cctype>
#include <chrono>
#include <cmath>

#include "base/http_text.h"
#include "base/ids.h"
#include "base/log.h"
#include "gateway/cors.h"
#include "gateway/http_errors.h"
#include "gateway/metrics_routes.h"
#include "locks/database.h"

namespace paintlock::gateway {

namespace {

thread_local std::chrono::steady_clock::time_point t_request_start;

bool SaneRequestId(const std::string& id) {
  if (id.size() < 8 || id.size() > 64) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string MediaTypeOf(const httplib::Request& req) {
  return base::MediaTypeOf(req.get_header_value("Content-Type"));
}

std::string LoggablePath(const std::string& path) {
  return path.rfind("/v1/licenses/", 0) == 0 ? std::string("/v1/licenses/(redacted)") : path;
}

bool RequireApiKey(const Config& config, const httplib::Request& req, httplib::Response& res) {
  const auto given = base::BearerTokenOf(req.get_header_value("Authorization"));
  if (!config.api_key.empty() && given && base::ConstantTimeEquals(*given, config.api_key)) {
    return true;
  }
  res.set_header("WWW-Authenticate", "Bearer");
  WriteError(res, Unauthorized(!config.api_key.empty(),
                               "Send the API key as Authorization: Bearer <PAINTLOCK_API_KEY>."));
  return false;
}

bool BeginRequest(const Config& config, const httplib::Request& req, httplib::Response& res) {
  std::string id = req.get_header_value("X-Request-Id");
  if (!SaneRequestId(id)) id = base::NewRequestId();
  base::SetCurrentRequestId(id);
  res.set_header("X-Request-Id", id);
  res.set_header("Cache-Control", "no-store");
  return ApplyCors(config.allowed_origins, req, res);
}

void EndRequest(const httplib::Request& req, const httplib::Response& res,
                std::chrono::steady_clock::time_point started, std::string_view route) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  CountRequest(req, res, ms / 1000, route);
  // Every request writes this line, so no json object is built for it
  // (base::LogFields). Its fields in the order nlohmann's map would give them.
  const std::string path = LoggablePath(req.path);
  base::LogFields(res.status >= 500 ? base::LogLevel::kWarn : base::LogLevel::kInfo, "request",
                  {{"duration_ms", std::round(ms * 100) / 100},
                   {"method", req.method},
                   {"path", path},
                   {"status", std::int64_t{res.status}}});
  base::SetCurrentRequestId("");
}

void InstallMiddleware(httplib::Server& server, const Config& config) {
  server.set_pre_routing_handler([&config](const httplib::Request& req, httplib::Response& res) {
    t_request_start = std::chrono::steady_clock::now();
    return BeginRequest(config, req, res) ? httplib::Server::HandlerResponse::Handled
                                          : httplib::Server::HandlerResponse::Unhandled;
  });

  server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    if (base::CurrentRequestId().empty()) return;  // never routed (rejected while reading)
    EndRequest(req, res, t_request_start);
  });

  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.get_header_value("X-Request-Id").empty()) {
      std::string id = base::NewRequestId();
      base::SetCurrentRequestId(id);
      res.set_header("X-Request-Id", id);
    }
    WriteError(res, CannotServe(res.status));
  });

  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        base::LogError("unhandled_exception",
                       {{"path", LoggablePath(req.path)}, {"error", base::DescribeException(ep)}});
        WriteError(res, ErrorFor(locks::DbFailure{locks::DbFailureKind::kInternal, ""}));
      });
}

}  // namespace paintlock::gateway
