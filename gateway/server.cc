#include "gateway/server.h"

#include "gateway/limit_routes.h"
#include "gateway/middleware.h"
#include "gateway/quota_routes.h"
#include "gateway/storefront_routes.h"

namespace paintlock::gateway {

void HttpApi::Install(httplib::Server& server) {
  const Config& config = api_.config;
  const Services& s = api_.services;
  // Every open availability stream holds a thread; they get their own
  // max_streams so they can never starve checkouts.
  const int threads = config.http_threads + (s.availability ? config.max_streams : 0);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(config.max_body_bytes);
  server.set_keep_alive_max_count(100000);
  // httplib 0.11 lets an idle keep-alive connection hold its worker (and a
  // SIGTERM drain) until this timeout: keep it short.
  server.set_keep_alive_timeout(5);
  server.set_read_timeout(10, 0);
  server.set_write_timeout(10, 0);
  server.set_tcp_nodelay(true);

  InstallMiddleware(server, config);
  InstallHealthRoutes(server, api_);
  // /paintlock.js and /v1/paintings/stream, before /v1/paintings/{id}.
  InstallStorefrontRoutes(server, config, s.availability);
  InstallPaintingRoutes(server, api_);
  InstallCheckoutRoutes(server, api_);
  InstallReservationRoutes(server, api_);
  InstallWebhookRoutes(server, api_);
  InstallLimitRoutes(
      server, {[&config](const auto& req, auto& res) { return RequireApiKey(config, req, res); },
               s.credits, s.rate_limiter, s.leases});
  if (s.quotas) InstallQuotaRoutes(server, config, *s.quotas, s.visitors);

  if (!config.storefront_dir.empty()) {
    server.set_mount_point("/shop", config.storefront_dir);
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/shop/", 303);
    });
  }
}

}  // namespace paintlock::gateway
