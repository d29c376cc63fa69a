// The gateway's configuration, read from the environment at start-up.
//
// ParseConfig checks everything at once and reports one line per problem, so
// an operator fixes a bad deployment in one go. Secrets (STRIPE_SECRET_KEY,
// STRIPE_WEBHOOK_SECRET, PAINTLOCK_API_KEY, passwords in DATABASE_URL) never
// appear in a problem line or a log.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "locks/database.h"
#include "locks/quotas_config.h"
#include "locks/rate_limits_config.h"
#include "stripe/checkout_collection.h"
#include "stripe/https_client.h"

namespace paintlock::gateway {

// How GET /metrics is served (PAINTLOCK_METRICS): not at all (404), on the
// gateway's address behind the API key, or open on its own listen address
// (PAINTLOCK_METRICS_LISTEN) and nowhere else.
enum class MetricsExposure { kOff, kApiKey, kListen };

struct Config {
  // DATABASE_URL and the pool (PAINTLOCK_DB_POOL, PAINTLOCK_DB_*_TIMEOUT_MS).
  locks::DatabaseOptions database = [] {
    locks::DatabaseOptions o;
    o.pool_size = 32;
    return o;
  }();
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;                            // 0: any free port (logged at start)
  std::string public_url = "http://127.0.0.1:8080";  // where buyers reach the gateway
  std::string
      success_url;  // default: {public_url}/shop/success.html?session_id={CHECKOUT_SESSION_ID}
  std::string cancel_url;  // default: {public_url}/shop/

  // STRIPE_SECRET_KEY, STRIPE_API_BASE, STRIPE_CA_FILE (optional extra trust,
  // for tests), STRIPE_MAX_RETRIES, STRIPE_TIMEOUT_MS and STRIPE_DEADLINE_MS
  // (one Stripe call, retries included, never takes longer).
  stripe::HttpsClientOptions stripe = [] {
    stripe::HttpsClientOptions o;
    o.deadline = std::chrono::milliseconds(10000);
    return o;
  }();
  std::vector<std::string> stripe_webhook_secrets;
  int stripe_max_waiting = 16;  // PAINTLOCK_STRIPE_MAX_WAITING (gateway/stripe_budget.h)
  std::chrono::seconds webhook_tolerance{300};

  std::string api_key;  // server-to-server endpoints; empty: they answer 401
  std::chrono::seconds hold_ttl{420};
  std::chrono::seconds session_ttl{35 * 60};  // Stripe's minimum is 30 min: keep a margin
  std::chrono::seconds delayed_payment_hold{14 * 24 * 3600};
  // Waiting lines (locks/lines.h): PAINTLOCK_LINE_MAX, _PER_VISITOR, _CLAIM_SECONDS.
  int line_max = 100;
  int line_per_visitor = 1;
  std::chrono::seconds line_claim{120};

  int http_threads = 64;
  // Connections of asynchronous libpq for the requests the edge's reactor
  // answers itself (gateway/reactor_routes.h); 0: the workers serve them.
  int db_async_connections = 8;
  std::size_t max_body_bytes = 64 * 1024;
  std::string storefront_dir;  // served at /shop/ when set
  // Visitors are HMAC(visitor_key, client IP) (base/visitor.h). Gateways
  // that must agree on who a visitor is share the key. Empty: a random key
  // per process, with a warning at start-up.
  std::string visitor_key;
  std::string trusted_proxies;  // comma-separated IPs/CIDRs allowed to set X-Forwarded-For
  std::string log_level = "info";

  // Named token buckets (locks/CREDITS.md) for /v1/ratelimits and the
  // per-visitor checkout limit, which takes from the "checkout" bucket (always
  // defined: locks::kDefaultRateLimits unless PAINTLOCK_RATE_LIMITS names it).
  std::vector<locks::RateBucket> rate_buckets = locks::WithDefaultBuckets({});
  bool checkout_rate_limit = true;  // PAINTLOCK_CHECKOUT_RATE_LIMIT=off: no per-visitor limit

  // Daily quotas per visitor (locks/QUOTAS.md), and the licences
  // that lift them. An empty licence secret: subscription webhooks answer 503.
  std::vector<locks::QuotaPolicy> quotas = locks::DefaultQuotaPolicies();  // PAINTLOCK_QUOTAS
  std::string license_secret;                      // PAINTLOCK_LICENSE_SECRET, >= 32 chars
  std::chrono::seconds license_cache_max_age{45};  // PAINTLOCK_LICENSE_CACHE_SECONDS

  // The storefront side (fixtures/storefront/README.md).
  std::vector<std::string> allowed_origins;  // PAINTLOCK_ALLOWED_ORIGINS: exact origins given CORS
  std::string unavailable_url;  // PAINTLOCK_UNAVAILABLE_URL: a form post that loses gets a 303 here
  // PAINTLOCK_MAX_STREAMS: open availability streams; more get 503. They are
  // served by the edge's reactor and hold no worker thread.
  int max_streams = 200;
  std::chrono::seconds stream_heartbeat{15};  // PAINTLOCK_STREAM_HEARTBEAT_SECONDS

  // The HTTP edge (gateway/edge/edge_server.h).
  std::chrono::seconds request_deadline{
      10};  // PAINTLOCK_REQUEST_DEADLINE_SECONDS: first byte → whole request
  std::chrono::seconds idle_timeout{5};  // PAINTLOCK_IDLE_TIMEOUT_SECONDS: idle keep-alive
  // PAINTLOCK_KEEPALIVE_LINGER_MS: a worker waits this long for the same
  // keep-alive client's next request while another worker is idle (0: never).
  std::chrono::milliseconds keepalive_linger{2};
  std::size_t max_header_bytes = 16 * 1024;  // PAINTLOCK_MAX_HEADER_BYTES
  int max_connections = 4096;                // PAINTLOCK_MAX_CONNECTIONS
  int max_connections_per_address = 64;      // PAINTLOCK_MAX_CONNECTIONS_PER_ADDRESS
  // PAINTLOCK_AVAILABILITY_FULL_READ_SECONDS: how soon a lost publish heals.
  std::chrono::seconds availability_full_read{30};
  // PAINTLOCK_AVAILABILITY_IDLE_SECONDS: how long after the last stream
  // closed the availability feed stops reading.
  std::chrono::seconds availability_idle{30};
  // PAINTLOCK_LISTEN_DATABASE_URL: where the availability listener LISTENs
  // (a direct connection to the primary, never through PgBouncer's transaction
  // pooling). Empty: DATABASE_URL.
  std::string listen_database_url;

  // PAINTLOCK_ON_DATABASE_DOWN: what a checkout does when the database cannot
  // be reached (checkout/offline_checkout.h). false (refuse): 503, nothing
  // charged. true (sell): a Stripe session priced from the catalogue snapshot
  // in memory, applied as a late payment when the database is back.
  bool sell_when_database_down = false;

  // GET /metrics (gateway/metrics_routes.h).
  MetricsExposure metrics = MetricsExposure::kOff;
  std::string metrics_listen_host = "127.0.0.1";
  int metrics_listen_port = 9464;  // 0: any free port (logged at start)

  // What every Checkout Session asks the buyer for: PAINTLOCK_SHIPPING_COUNTRIES,
  // PAINTLOCK_COLLECT_PHONE, PAINTLOCK_CHECKOUT_LOCALE, PAINTLOCK_SHIPPING_RATE.
  stripe::CheckoutCollection checkout_collection;
};

// Reads every setting; each problem found is appended to *problems as one
// line ("PAINTLOCK_HOLD_SECONDS: must be a whole number of seconds from 30 to
// 86400, got \"abc\""). The config is usable only when *problems is empty.
Config ParseConfig(const base::EnvLookup& env, std::vector<std::string>* problems);

// The help text listing every variable with its default.
std::string ConfigHelp();

}  // namespace paintlock::gateway
