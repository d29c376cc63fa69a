#include "gateway/metrics_routes.h"

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "base/version.h"
#include "checkout/reservation_metrics.h"
#include "gateway/middleware.h"
#include "stripe/stripe_metrics.h"
#include "webhooks/webhook_metrics.h"

namespace paintlock::gateway {

namespace metrics = base::metrics;

const char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";

namespace {

metrics::Family<metrics::Counter>& Requests() {
  static metrics::Family<metrics::Counter>& f = metrics::DefaultRegistry().AddCounter(
      "paintlock_http_requests_total",
      "HTTP requests answered by the gateway's routes, by route pattern, method and status.",
      {"route", "method", "status"}, 1024);
  return f;
}

metrics::Family<metrics::Histogram>& Durations() {
  static metrics::Family<metrics::Histogram>& f = metrics::DefaultRegistry().AddHistogram(
      "paintlock_http_request_duration_seconds",
      "Time from routing a request to its answer (a stream: to its first bytes), by route "
      "pattern and method.",
      {"route", "method"}, metrics::kRequestSecondsBuckets, 256);
  return f;
}

const char* MethodLabel(const std::string& method) {
  for (const char* known : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}) {
    if (method == known) return known;
  }
  return "other";
}

// An event type as Stripe spells them (checkout.session.completed); anything
// else is not used as a label.
bool LooksLikeEventType(const std::string& type) {
  if (type.empty() || type.size() > 80) return false;
  for (char c : type) {
    if (!(c >= 'a' && c <= 'z') && c != '.' && c != '_') return false;
  }
  return true;
}

std::vector<metrics::Sample> One(double value) { return {metrics::Sample{{}, value}}; }

}  // namespace

std::string RouteLabel(const httplib::Request& req) {
  const std::smatch& m = req.matches;
  if (m.empty() || !m[0].matched) return "unmatched";
  std::string route;  // appended in place: every request labels its route
  route.reserve(req.path.size() + 2 * m.size());
  std::size_t done = 0;
  for (std::size_t i = 1; i < m.size(); ++i) {
    if (!m[i].matched) continue;
    const auto start = static_cast<std::size_t>(m.position(i));
    if (start < done) continue;  // inside a group already written as {}
    route.append(req.path, done, start - done).append("{}");
    done = start + static_cast<std::size_t>(m.length(i));
  }
  return route.append(req.path, std::min(done, req.path.size()));
}

void CountRequest(const httplib::Request& req, const httplib::Response& res, double seconds,
                  std::string_view route) {
  std::string read;  // a given label is used as it is, not copied
  if (route.empty()) route = read = RouteLabel(req);
  const char* method = MethodLabel(req.method);
  Requests().With({route, method, std::to_string(res.status)}).Inc();
  Durations().With({route, method}).Observe(seconds);
}

void CountWebhook(const WebhookTally& tally) {
  webhooks::CountWebhookEvent(LooksLikeEventType(tally.type) ? tally.type : "other", tally.outcome);
}

MetricsEndpoint::MetricsEndpoint(MetricsSources sources) : sources_(sources) {
  Requests();
  Durations();
  stripe::Metrics();
  checkout::RegisterReservationMetrics();
  webhooks::RegisterWebhookMetrics();

  scrape_time_.AddCallback("paintlock_build_info", "The running paintlock's version.", "gauge",
                           {"version"}, [] {
                             return std::vector<metrics::Sample>{{{base::kVersion}, 1}};
                           });
  if (locks::Database* db = sources_.database) {
    scrape_time_.AddCallback(
        "paintlock_db_pool_connections", "Pooled database connections open, by state.", "gauge",
        {"state"}, [db] {
          const auto s = db->Stats();
          return std::vector<metrics::Sample>{{{"in_use"}, double(s.open - s.idle)},
                                              {{"idle"}, double(s.idle)}};
        });
    scrape_time_.AddCallback("paintlock_db_pool_size",
                             "Most database connections the pool opens (PAINTLOCK_DB_POOL).",
                             "gauge", {}, [db] { return One(db->Stats().size); });
    scrape_time_.AddCallback("paintlock_db_pool_waiting",
                             "Callers waiting for a free database connection now.", "gauge", {},
                             [db] { return One(db->Stats().waiting); });
    scrape_time_.AddCallback(
        "paintlock_db_async_ready",
        "Asynchronous connections (PAINTLOCK_DB_ASYNC_CONNECTIONS) connected and set up now.",
        "gauge", {},
        [this] { return One(sources_.reactor ? sources_.reactor->Stats().ready : 0); });
    scrape_time_.AddCallback(
        "paintlock_db_async_waiting",
        "Statements of the reactor's routes waiting for a free asynchronous connection now.",
        "gauge", {},
        [this] { return One(sources_.reactor ? sources_.reactor->Stats().waiting : 0); });
    scrape_time_.AddCallback(
        "paintlock_db_pool_acquire_timeouts_total",
        "Callers that found no free database connection within the acquire timeout.", "counter", {},
        [db] { return One(static_cast<double>(db->Stats().acquire_timeouts)); });
  }
  if (locks::HoldCounts* holds = sources_.holds) {
    scrape_time_.AddCallback(
        "paintlock_holds",
        "Holds by condition, as paintlockctl holds lists them (stuck=\"true\": an operator "
        "acts); read from the database at most every few seconds.",
        "gauge", {"condition", "stuck"}, [this, holds] {
          std::vector<metrics::Sample> samples;
          auto read = holds->Read();
          holds_read_ = std::holds_alternative<std::vector<locks::HoldCount>>(read);
          if (!holds_read_) return samples;
          for (const auto& h : std::get<std::vector<locks::HoldCount>>(read)) {
            samples.push_back({{h.condition, h.stuck ? "true" : "false"}, double(h.holds)});
          }
          return samples;
        });
    // Registered after paintlock_holds: callbacks run in registration order.
    scrape_time_.AddCallback(
        "paintlock_holds_read_ok",
        "1 when the holds above were read from the database for this scrape, else 0.", "gauge", {},
        [this] { return One(holds_read_ ? 1 : 0); });
  }
  if (AvailabilityStream* availability = sources_.availability) {
    scrape_time_.AddCallback("paintlock_availability_streams_open",
                             "Open /v1/paintings/stream (SSE) connections.", "gauge", {},
                             [availability] { return One(availability->OpenStreams()); });
  }
  if (checkout::Checkout* checkout = sources_.checkout) {
    scrape_time_.AddCallback(
        "paintlock_offline_checkouts_total",
        "Checkouts sold from the catalogue snapshot while the database was down "
        "(PAINTLOCK_ON_DATABASE_DOWN=sell), as /healthz reports them.",
        "counter", {},
        [checkout] { return One(static_cast<double>(checkout->OfflineCheckouts())); });
  }
}

std::string MetricsEndpoint::Scrape() {
  return metrics::DefaultRegistry().Render() + scrape_time_.Render();
}

void InstallMetricsRoute(httplib::Server& server, const Config& config, MetricsEndpoint& endpoint) {
  if (config.metrics != MetricsExposure::kApiKey) return;
  server.Get("/metrics", [&config, &endpoint](const httplib::Request& req, httplib::Response& res) {
    if (!RequireApiKey(config, req, res)) return;
    res.set_content(endpoint.Scrape(), kMetricsContentType);
  });
}

MetricsListener::MetricsListener(MetricsEndpoint& endpoint) : endpoint_(endpoint) {
  server_.new_task_queue = [] { return new httplib::ThreadPool(2); };
  server_.set_read_timeout(5, 0);
  server_.set_write_timeout(5, 0);
  server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(endpoint_.Scrape(), kMetricsContentType);
  });
}

MetricsListener::~MetricsListener() { Stop(); }

int MetricsListener::Start(const std::string& host, int port) {
  if (port == 0) {
    port = server_.bind_to_any_port(host);
  } else if (!server_.bind_to_port(host, port)) {
    port = -1;
  }
  if (port < 0) return -1;
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  base::LogInfo("metrics_listening",
                {{"address", host + ":" + std::to_string(port)}, {"port", port}});
  return port;
}

void MetricsListener::Stop() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace paintlock::gateway
