// paintlock: the checkout gateway. Only this file wires concrete objects.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "base/http_server.h"
#include "base/log.h"
#include "base/version.h"
#include "checkout/checkout.h"
#include "gateway/availability_stream.h"
#include "gateway/availability_stream_listener.h"
#include "gateway/config.h"
#include "gateway/edge/edge_server.h"
#include "gateway/idempotency.h"
#include "gateway/limit_routes.h"
#include "gateway/metrics_routes.h"
#include "gateway/quota_routes.h"
#include "gateway/reactor_routes.h"
#include "gateway/server.h"
#include "gateway/stripe_budget.h"
#include "locks/audit.h"
#include "locks/catalogue.h"
#include "locks/credits.h"
#include "locks/database.h"
#include "locks/health.h"
#include "locks/hold_counts.h"
#include "locks/idempotency.h"
#include "locks/leases.h"
#include "locks/licenses.h"
#include "locks/migrator.h"
#include "locks/quotas.h"
#include "locks/rate_limits.h"
#include "locks/reservations.h"
#include "stripe/https_client.h"
#include "webhooks/fulfilment.h"
#include "webhooks/subscriptions.h"

using namespace paintlock;

namespace {

constexpr const char* kUsage =
    "Usage: paintlock [--help] [--version]\n"
    "\n"
    "The paintlock checkout gateway: all-or-nothing painting reservations on PostgreSQL and\n"
    "Stripe Checkout Sessions. Configured entirely by environment variables; apply the\n"
    "schema first with `paintlockctl migrate`. SIGTERM or Ctrl-C drains in-flight requests\n"
    "and exits.\n\n";

int Fail(const std::string& line) {
  std::fprintf(stderr, "paintlock: %s\n", line.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << kUsage << gateway::ConfigHelp();
      return 0;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::cout << "paintlock " << base::kVersion << "\n";
      return 0;
    }
    std::fprintf(stderr, "paintlock: unknown argument \"%s\" (see --help)\n", argv[i]);
    return 2;
  }

  std::vector<std::string> problems;
  gateway::Config config = gateway::ParseConfig(base::ProcessEnv, &problems);
  if (!problems.empty()) {
    for (const auto& p : problems) std::fprintf(stderr, "paintlock: config: %s\n", p.c_str());
    std::fprintf(stderr, "paintlock: %zu configuration problem(s); see paintlock --help\n",
                 problems.size());
    return 2;
  }
  base::SetLogComponent("gateway");
  base::LogLevel level;
  if (base::ParseLogLevel(config.log_level, &level)) base::SetLogLevel(level);

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string error;
  std::vector<std::string> pending;
  if (!locks::PendingMigrations(config.database.url, &pending, &error)) return Fail(error);
  if (!pending.empty()) {
    std::string names;
    for (const auto& p : pending) names += (names.empty() ? "" : ", ") + p;
    return Fail("the database lacks migration(s) " + names +
                ": run `paintlockctl migrate` with the same DATABASE_URL");
  }

  auto db = locks::Database::Open(config.database, &error);
  if (!db) return Fail(error);

  auto https_stripe = stripe::HttpsStripeClient::Create(config.stripe, &error);
  if (!https_stripe) return Fail("Stripe settings: " + error);
  auto stripe_client =
      std::make_unique<gateway::StripeBudget>(*https_stripe, config.stripe_max_waiting);

  locks::Catalogue catalogue(*db);
  locks::ReservationStore reservations(*db, config.hold_ttl);
  locks::AuditLog audit(*db);
  webhooks::Fulfilment fulfilment(*db, *stripe_client, config.delayed_payment_hold);
  checkout::CheckoutSettings settings;
  settings.success_url =
      config.public_url + "/v1/checkout/success?session_id={CHECKOUT_SESSION_ID}";
  settings.cancel_url = config.cancel_url;
  settings.session_ttl = config.session_ttl;
  settings.collection = config.checkout_collection;
  // PAINTLOCK_ON_DATABASE_DOWN=sell: the catalogue as last read, for
  // checkouts while the database is down (checkout/catalogue_snapshot.h).
  checkout::CatalogueSnapshot offline_snapshot;
  if (config.sell_when_database_down) {
    if (!offline_snapshot.Refresh(catalogue)) {
      base::LogWarn("catalogue_snapshot_not_read",
                    {{"why", "checkouts answer 503 while the database is down until it is read"}});
    }
    offline_snapshot.StartRefreshing(catalogue, config.availability_full_read);
    settings.snapshot = &offline_snapshot;
  }
  checkout::ReleaseService release(*db, stripe_client.get(), &fulfilment, "gateway");
  checkout::Checkout checkout(catalogue, reservations, *stripe_client, fulfilment, audit, release,
                              settings);
  locks::Health health(*db);

  const bool random_visitor_key = config.visitor_key.empty();
  const std::optional<std::string> visitor_key = base::VisitorKeyOrRandom(config.visitor_key);
  if (!visitor_key)
    return Fail("cannot draw a random visitor key (the system's random source failed)");
  if (random_visitor_key) {
    base::LogWarn("visitor_key_random",
                  {{"why",
                    "PAINTLOCK_VISITOR_KEY is not set: visitor ids differ between gateway "
                    "processes and restarts, so per-visitor quotas and limits are per process"}});
  }
  std::string bad_network;
  const auto trusted_proxies = base::ParseNetworks(config.trusted_proxies, &bad_network);
  if (!trusted_proxies) return Fail("PAINTLOCK_TRUSTED_PROXIES: not a network: " + bad_network);
  base::VisitorIdentity visitors(*visitor_key, *trusted_proxies);

  gateway::edge::EdgeOptions edge_options;
  edge_options.request_deadline = config.request_deadline;
  edge_options.idle_timeout = config.idle_timeout;
  edge_options.keepalive_linger = config.keepalive_linger;
  edge_options.max_header_bytes = config.max_header_bytes;
  edge_options.max_body_bytes = config.max_body_bytes;
  edge_options.max_connections = config.max_connections;
  edge_options.max_connections_per_address = config.max_connections_per_address;
  edge_options.unlimited_addresses = *trusted_proxies;
  edge_options.workers = config.http_threads;
  gateway::edge::EdgeServer server(edge_options);
  gateway::Services services{health,  catalogue,  reservations,   checkout,
                             release, fulfilment, *stripe_client, visitors};
  // Credit holds, rate limits, leases, and the per-visitor checkout limit.
  locks::CreditStore credits(*db);
  locks::RateLimiter rate_limiter(*db, config.rate_buckets);
  locks::LeaseStore leases(*db);
  gateway::CheckoutRateLimit checkout_limit(rate_limiter, visitors);
  services.credits = &credits;
  services.rate_limiter = &rate_limiter;
  services.leases = &leases;
  services.checkout_limit = config.checkout_rate_limit ? &checkout_limit : nullptr;
  // Idempotency-Key on the server API's POSTs (gateway/idempotency.h).
  locks::IdempotencyStore idempotency_keys(*db);
  gateway::IdempotentRequests idempotent_requests(idempotency_keys);
  services.idempotency = &idempotent_requests;
  locks::LineStore lines(*db, {config.line_max, config.line_per_visitor, config.line_claim});
  services.lines = &lines;
  // Daily quotas and the licences that lift them (locks/QUOTAS.md).
  locks::QuotaStore quotas(*db, config.quotas);
  auto unknown_zones = quotas.UnknownTimeZones();
  if (auto* f = std::get_if<locks::DbFailure>(&unknown_zones)) {
    return Fail("cannot check the quotas' time zones: " + f->detail);
  }
  for (const auto& zone : std::get<std::vector<std::string>>(unknown_zones)) {
    std::fprintf(stderr,
                 "paintlock: config: PAINTLOCK_QUOTAS: the database knows no time zone "
                 "\"%s\" (names are case-sensitive: UTC, Europe/Paris)\n",
                 zone.c_str());
  }
  if (!std::get<std::vector<std::string>>(unknown_zones).empty()) return 2;
  locks::LicenseStore license_store(*db);
  locks::LicenseValidator licenses(
      [&license_store](const std::string& digest) { return license_store.FindByDigest(digest); },
      config.license_cache_max_age);
  webhooks::SubscriptionLicenses subscriptions(*db, config.license_secret);
  gateway::QuotaServices quota_services{quotas, licenses, subscriptions};
  services.quotas = &quota_services;
  if (config.license_secret.empty()) {
    base::LogWarn("licenses_disabled",
                  {{"why",
                    "PAINTLOCK_LICENSE_SECRET is not set: customer.subscription.* "
                    "webhooks answer 503 and no licence can be issued"}});
  }
  // Live availability, fed by LISTEN/NOTIFY on a connection of its own.
  gateway::AvailabilityStreamOptions stream_options;
  stream_options.max_streams = config.max_streams;
  stream_options.heartbeat = config.stream_heartbeat;
  gateway::AvailabilityStream availability(stream_options);
  gateway::AvailabilityListenerOptions listener_options;
  listener_options.database = config.database;
  if (!config.listen_database_url.empty()) {
    listener_options.database.url = config.listen_database_url;
  } else if (config.database.statements == locks::StatementMode::kUnnamed) {
    base::LogWarn("availability_listener_through_pool",
                  {{"why",
                    "PAINTLOCK_DB_STATEMENTS=unnamed without PAINTLOCK_LISTEN_DATABASE_URL: behind "
                    "PgBouncer's transaction pooling LISTEN hears nothing, so streams see changes "
                    "only at the periodic full re-read"},
                   {"full_read_seconds", config.availability_full_read.count()}});
  }
  listener_options.full_read_interval = config.availability_full_read;
  listener_options.idle_after = config.availability_idle;
  locks::AvailabilityFeed::Sink snapshot_sink = nullptr;
  if (config.sell_when_database_down) {
    snapshot_sink = [&offline_snapshot](const std::vector<locks::PaintingAvailability>& read) {
      offline_snapshot.Note(read);
    };
    services.offline_snapshot = &offline_snapshot;
  }
  gateway::AvailabilityListener availability_listener(listener_options, availability,
                                                      snapshot_sink);
  availability.SetChangeObserver([&server] { server.WakePushStreams(); });
  availability_listener.Start();
  services.availability = &availability;
  gateway::HttpApi api(config, services);
  api.Install(server);
  // Rate-limit takes, credit holds and commits, quota consumes and reserves
  // answered by the edge's reactor on connections of their own.
  std::shared_ptr<gateway::ReactorApi> reactor_api;
  if (config.db_async_connections > 0) {
    reactor_api = std::make_shared<gateway::ReactorApi>(config, rate_limiter, credits,
                                                        quota_services, visitors, reservations);
    server.SetReactorRoutes(reactor_api);
  }
  // GET /metrics (PAINTLOCK_METRICS): holds are read at most every 5 s.
  locks::HoldCounts hold_counts(*db, std::chrono::seconds(5));
  gateway::MetricsEndpoint metrics(
      {db.get(), &hold_counts, &availability, &checkout, reactor_api.get()});
  gateway::InstallMetricsRoute(server, config, metrics);
  gateway::MetricsListener metrics_listener(metrics);
  if (config.metrics == gateway::MetricsExposure::kListen &&
      metrics_listener.Start(config.metrics_listen_host, config.metrics_listen_port) < 0) {
    return Fail("cannot listen for metrics on " + config.metrics_listen_host + ":" +
                std::to_string(config.metrics_listen_port) +
                " (in use, or not an address of this machine): set PAINTLOCK_METRICS_LISTEN");
  }

  int port = config.listen_port;
  if (port == 0) {
    port = server.bind_to_any_port(config.listen_host);
  } else if (!server.bind_to_port(config.listen_host, port)) {
    port = -1;
  }
  if (port >= 0 && !server.WidenBacklog(1024)) {
    base::LogWarn("listen_backlog_not_widened", {{"backlog", 5}});
  }
  if (port < 0) {
    return Fail("cannot listen on " + config.listen_host + ":" +
                std::to_string(config.listen_port) +
                " (in use, or not an address of this machine): set PAINTLOCK_LISTEN");
  }

  // Waits for SIGTERM/SIGINT and drains the server. Joined before main
  // returns: it uses the server and the stream, which live on this stack.
  std::atomic<bool> listening_ended{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (listening_ended) return;  // woken by main itself: nothing to drain
    base::LogInfo("shutting_down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    availability.Close();  // open streams end now, not at their next heartbeat
    server.stop();
  });

  base::LogInfo("listening",
                {{"address", config.listen_host + ":" + std::to_string(port)},
                 {"port", port},
                 {"public_url", config.public_url},
                 {"stripe_api_base", config.stripe.api_base},
                 {"hold_seconds", config.hold_ttl.count()},
                 {"database", locks::RedactConnectionString(config.database.url)},
                 {"statements",
                  config.database.statements == locks::StatementMode::kNamed ? "named" : "unnamed"},
                 {"reservations_api", !config.api_key.empty()},
                 {"on_database_down", config.sell_when_database_down ? "sell" : "refuse"}});
  if (config.stripe_webhook_secrets.empty()) {
    base::LogWarn("webhooks_disabled",
                  {{"why", "STRIPE_WEBHOOK_SECRET is not set: every webhook will be refused"}});
  }
  server.listen_after_bind();  // returns once stop() has drained the workers
  listening_ended = true;
  pthread_kill(stopper.native_handle(), SIGTERM);  // a no-op wake-up if it already ran
  stopper.join();
  metrics_listener.Stop();
  availability_listener.Stop();
  offline_snapshot.StopRefreshing();
  base::LogInfo("stopped");
  return 0;
}
