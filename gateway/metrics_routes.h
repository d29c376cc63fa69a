// GET /metrics: the process's metrics in the Prometheus text exposition
// format 0.0.4 (base/metrics.h; README.md, "Metrics"), served as
// PAINTLOCK_METRICS says: not at all (404), on the gateway's address behind
// the API key, or open on a listener of its own (MetricsListener) and nowhere
// else.
//
// Counted on every request (from the middleware's access log): requests by
// route pattern (the route's regex with each captured part written "{}", so
// /v1/paintings/p7 is "/v1/paintings/{}"; "unmatched" when no route served
// it), method and status, and their latency. Read at scrape time: the
// database pool, open availability streams, offline checkouts (the counter
// /healthz reports), and holds by condition (locks::HoldCounts: one query,
// reused for a few seconds).
//
// Thread-safe.
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "base/http_server.h"
#include "base/metrics.h"
#include "checkout/checkout.h"
#include "gateway/availability_stream.h"
#include "gateway/config.h"
#include "gateway/reactor_routes.h"
#include "locks/database.h"
#include "locks/hold_counts.h"

namespace paintlock::gateway {

// The route label of a request served (or refused) by the router.
std::string RouteLabel(const httplib::Request& req);

// Counts one answered request; called by the middleware's access log. Under
// `route`, or RouteLabel(req) when it is empty.
void CountRequest(const httplib::Request& req, const httplib::Response& res, double seconds,
                  std::string_view route = {});

// One answered webhook delivery: its event type ("unverified" when the
// signature or body was refused) and outcome (the fulfilment outcome,
// "ignored", or the error code answered).
struct WebhookTally {
  std::string type;
  std::string outcome;
};

// Counts it (webhooks/webhook_metrics.h); a type that does not look like a
// Stripe event type is counted as "other", so labels stay bounded.
void CountWebhook(const WebhookTally& tally);

// What a scrape reads besides the counters. Any pointer may be null: that
// family is then left out.
struct MetricsSources {
  locks::Database* database = nullptr;
  locks::HoldCounts* holds = nullptr;
  AvailabilityStream* availability = nullptr;
  checkout::Checkout* checkout = nullptr;
  ReactorApi* reactor = nullptr;  // null: PAINTLOCK_DB_ASYNC_CONNECTIONS=0
};

class MetricsEndpoint {
 public:
  // Registers every family, so the first scrape already names them all.
  explicit MetricsEndpoint(MetricsSources sources);

  // The whole exposition: base::metrics::DefaultRegistry() and the
  // scrape-time gauges.
  std::string Scrape();

 private:
  const MetricsSources sources_;
  base::metrics::Registry scrape_time_;
  std::atomic<bool> holds_read_{false};  // the last holds read succeeded
};

extern const char kMetricsContentType[];

// With PAINTLOCK_METRICS=api-key, GET /metrics on `server` behind the API
// key; otherwise nothing (the path answers 404 like any unknown one).
void InstallMetricsRoute(httplib::Server& server, const Config& config, MetricsEndpoint& endpoint);

// With PAINTLOCK_METRICS=listen, a small server of its own answering only
// GET /metrics, open, on PAINTLOCK_METRICS_LISTEN.
class MetricsListener {
 public:
  explicit MetricsListener(MetricsEndpoint& endpoint);
  ~MetricsListener();  // Stop()

  // Binds and starts serving on a thread; the port bound (useful with port
  // 0), or -1 when the address cannot be bound.
  int Start(const std::string& host, int port);
  void Stop();

 private:
  MetricsEndpoint& endpoint_;
  base::HttpServer server_;
  std::thread thread_;
};

}  // namespace paintlock::gateway
