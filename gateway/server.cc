#include "gateway/server.h"

#include "base/log.h"
#include "gateway/edge/static_files.h"
#include "gateway/limit_routes.h"
#include "gateway/middleware.h"
#include "gateway/openapi_routes.h"
#include "gateway/quota_routes.h"
#include "gateway/storefront_routes.h"

namespace paintlock::gateway {

void HttpApi::Install(httplib::Server& server) {
  const Config& config = api_.config;
  const Services& s = api_.services;
  // Connections, workers and framing limits are the edge's
  // (gateway/edge/edge_server.h); these settings hold for a plain httplib::Server.
  server.set_payload_max_length(config.max_body_bytes);
  server.set_keep_alive_max_count(100000);
  // Announced in Keep-Alive headers; the edge closes idle connections after it.
  server.set_keep_alive_timeout(static_cast<time_t>(config.idle_timeout.count()));
  server.set_read_timeout(10, 0);
  server.set_write_timeout(10, 0);
  server.set_tcp_nodelay(true);

  InstallMiddleware(server, config);
  InstallHealthRoutes(server, api_);
  InstallOpenApiRoutes(server);
  // /paintlock.js and /v1/paintings/stream, before /v1/paintings/{id}.
  InstallStorefrontRoutes(server, config, s.availability);
  InstallLineRoutes(server, api_);  // /v1/paintings/{id}/line, before /v1/paintings/{id}
  InstallPaintingRoutes(server, api_);
  InstallCheckoutRoutes(server, api_);
  InstallReservationRoutes(server, api_);
  InstallWebhookRoutes(server, api_);
  InstallLimitRoutes(
      server, {[&config](const auto& req, auto& res) { return RequireApiKey(config, req, res); },
               s.credits, s.rate_limiter, s.leases, s.idempotency});
  if (s.quotas) InstallQuotaRoutes(server, config, *s.quotas, s.visitors, s.idempotency);

  if (!config.storefront_dir.empty()) {
    if (!edge::InstallStaticFiles(server, "/shop", config.storefront_dir)) {
      base::LogWarn("storefront_dir_missing", {{"dir", config.storefront_dir}});
    }
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/shop/", 303);
    });
  }
}

}  // namespace paintlock::gateway
