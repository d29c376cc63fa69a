#include "gateway/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "base/visitor.h"
#include "gateway/cors.h"

namespace paintlock::gateway {

namespace {

using Reader = base::SettingsReader;

bool IsHttpUrl(const std::string& url) {
  static const std::regex re(R"(^https?://[^\s/?#]+(/[^\s]*)?$)");
  return std::regex_match(url, re);
}

std::string TrimSlash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// HOST:PORT, HOST a name, an IPv4 address or a bracketed IPv6 address
// (returned without brackets); false when it is not that.
bool ParseHostPort(const std::string& value, std::string* host, int* port) {
  static const std::regex re(R"(^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$)");
  std::smatch m;
  if (!std::regex_match(value, m, re) || std::stol(m[2]) > 65535) return false;
  *host = m[1];
  if (host->front() == '[') *host = host->substr(1, host->size() - 2);
  *port = std::stoi(m[2]);
  return true;
}

void ParseMetrics(Reader& r, Config& c) {
  if (auto v = r.Get("PAINTLOCK_METRICS")) {
    if (*v == "off") {
      c.metrics = MetricsExposure::kOff;
    } else if (*v == "api-key") {
      c.metrics = MetricsExposure::kApiKey;
      if (c.api_key.empty()) {
        r.Problem("PAINTLOCK_METRICS",
                  "api-key needs PAINTLOCK_API_KEY (scrapers send it as Authorization: Bearer)");
      }
    } else if (*v == "listen") {
      c.metrics = MetricsExposure::kListen;
    } else {
      r.Problem("PAINTLOCK_METRICS", "must be off, api-key or listen, got \"" + *v + "\"");
    }
  }
  if (auto v = r.Get("PAINTLOCK_METRICS_LISTEN")) {
    if (!ParseHostPort(*v, &c.metrics_listen_host, &c.metrics_listen_port)) {
      r.Problem("PAINTLOCK_METRICS_LISTEN",
                "must be HOST:PORT such as 127.0.0.1:9464, got \"" + *v + "\"");
    } else if (c.metrics != MetricsExposure::kListen) {
      r.Problem("PAINTLOCK_METRICS_LISTEN", "is used only with PAINTLOCK_METRICS=listen");
    } else if (c.metrics_listen_port != 0 && c.metrics_listen_port == c.listen_port) {
      r.Problem("PAINTLOCK_METRICS_LISTEN",
                "must be another port than PAINTLOCK_LISTEN's (" + std::to_string(c.listen_port) +
                    "): metrics are served there only with PAINTLOCK_METRICS=api-key");
    }
  }
}

// What a Checkout Session asks the buyer for, checked by Stripe's own rules
// (stripe/checkout_collection.h) so a bad value stops the start, not every checkout.
void ParseCheckoutCollection(Reader& r, stripe::CheckoutCollection* out) {
  if (auto v = r.Get("PAINTLOCK_SHIPPING_COUNTRIES")) {
    for (std::string code : SplitCommas(*v)) {
      std::transform(code.begin(), code.end(), code.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
      if (!stripe::IsShippingCountry(code)) {
        r.Problem("PAINTLOCK_SHIPPING_COUNTRIES",
                  "\"" + code.substr(0, 16) +
                      "\" is not a two-letter ISO 3166-1 country code Stripe ships to");
        out->shipping_countries.clear();
        break;
      }
      if (std::find(out->shipping_countries.begin(), out->shipping_countries.end(), code) ==
          out->shipping_countries.end()) {
        out->shipping_countries.push_back(code);
      }
    }
  }
  if (auto v = r.Get("PAINTLOCK_COLLECT_PHONE")) {
    if (*v == "on" || *v == "off") {
      out->collect_phone = *v == "on";
    } else {
      r.Problem("PAINTLOCK_COLLECT_PHONE", "must be on or off, got \"" + v->substr(0, 16) + "\"");
    }
  }
  if (auto v = r.Get("PAINTLOCK_CHECKOUT_LOCALE")) {
    if (stripe::IsCheckoutLocale(*v)) {
      out->locale = *v;
    } else {
      r.Problem("PAINTLOCK_CHECKOUT_LOCALE",
                "\"" + v->substr(0, 16) +
                    "\" is not a Stripe Checkout locale (auto, en, de, fr, pt-BR, …)");
    }
  }
  if (auto v = r.Get("PAINTLOCK_SHIPPING_RATE")) {
    if (stripe::IsShippingRateId(*v)) {
      out->shipping_rate = *v;
    } else {
      r.Problem("PAINTLOCK_SHIPPING_RATE", "must be a Stripe shipping rate id (shr_…)");
    }
  }
}

}  // namespace

Config ParseConfig(const base::EnvLookup& env, std::vector<std::string>* problems) {
  Config c;
  Reader r(env, problems);

  if (auto v = r.Get("DATABASE_URL")) {
    c.database.url = *v;
  } else {
    r.Problem("DATABASE_URL", "is required (a libpq URI such as postgresql://user@host/db)");
  }

  if (auto v = r.Get("PAINTLOCK_LISTEN")) {
    if (!ParseHostPort(*v, &c.listen_host, &c.listen_port)) {
      r.Problem("PAINTLOCK_LISTEN", "must be HOST:PORT such as 127.0.0.1:8080, got \"" + *v + "\"");
    } else {
      c.public_url = "http://" + *v;
    }
  }
  if (auto v = r.Get("PAINTLOCK_PUBLIC_URL")) {
    if (!IsHttpUrl(*v)) {
      r.Problem("PAINTLOCK_PUBLIC_URL", "must be an http(s) URL, got \"" + *v + "\"");
    } else {
      c.public_url = TrimSlash(*v);
    }
  }
  c.success_url = c.public_url + "/shop/success.html?session_id={CHECKOUT_SESSION_ID}";
  c.cancel_url = c.public_url + "/shop/";
  if (auto v = r.Get("PAINTLOCK_SUCCESS_URL")) {
    if (!IsHttpUrl(*v))
      r.Problem("PAINTLOCK_SUCCESS_URL", "must be an http(s) URL");
    else
      c.success_url = *v;
  }
  if (auto v = r.Get("PAINTLOCK_CANCEL_URL")) {
    if (!IsHttpUrl(*v))
      r.Problem("PAINTLOCK_CANCEL_URL", "must be an http(s) URL");
    else
      c.cancel_url = *v;
  }

  stripe::ReadHttpsClientOptions(r, &c.stripe);
  if (auto v = r.Get("STRIPE_WEBHOOK_SECRET")) {
    c.stripe_webhook_secrets = SplitCommas(*v);
    for (const auto& s : c.stripe_webhook_secrets) {
      if (s.rfind("whsec_", 0) != 0) {
        r.Problem("STRIPE_WEBHOOK_SECRET",
                  "every secret must start with whsec_ (comma-separated list)");
        break;
      }
    }
  }
  r.Integer("PAINTLOCK_STRIPE_MAX_WAITING", 1, 4096, "a whole number", &c.stripe_max_waiting);
  r.Seconds("STRIPE_WEBHOOK_TOLERANCE_SECONDS", 1, 3600, &c.webhook_tolerance);

  if (auto v = r.Get("PAINTLOCK_API_KEY")) {
    if (v->size() < 16)
      r.Problem("PAINTLOCK_API_KEY", "must be at least 16 characters");
    else
      c.api_key = *v;
  }
  r.Seconds("PAINTLOCK_HOLD_SECONDS", 1, 86400, &c.hold_ttl);
  r.Seconds("PAINTLOCK_SESSION_SECONDS", 1860, 86400, &c.session_ttl);
  r.Seconds("PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS", 60, 60L * 86400, &c.delayed_payment_hold);
  r.Integer("PAINTLOCK_LINE_MAX", 1, 10000, "a whole number", &c.line_max);
  r.Integer("PAINTLOCK_LINE_PER_VISITOR", 1, 100, "a whole number", &c.line_per_visitor);
  r.Seconds("PAINTLOCK_LINE_CLAIM_SECONDS", 1, 3600, &c.line_claim);
  r.Integer("PAINTLOCK_HTTP_THREADS", 2, 1024, "a whole number", &c.http_threads);
  r.Integer("PAINTLOCK_DB_POOL", 1, 512, "a whole number", &c.database.pool_size);
  r.Integer("PAINTLOCK_DB_ASYNC_CONNECTIONS", 0, 512, "a whole number", &c.db_async_connections);
  r.Millis("PAINTLOCK_DB_LOCK_TIMEOUT_MS", 10, 60000, &c.database.lock_timeout);
  r.Millis("PAINTLOCK_DB_STATEMENT_TIMEOUT_MS", 100, 600000, &c.database.statement_timeout);
  r.Millis("PAINTLOCK_DB_OUTCOME_LOOKUP_MS", 0, 60000, &c.database.outcome_lookup_patience);
  if (auto v = r.Get("PAINTLOCK_DB_STATEMENTS")) {
    if (!locks::ParseStatementMode(*v, &c.database.statements)) {
      r.Problem("PAINTLOCK_DB_STATEMENTS", "must be named or unnamed, got \"" + *v + "\"");
    }
  }
  if (auto v = r.Get("PAINTLOCK_LISTEN_DATABASE_URL")) c.listen_database_url = *v;
  int max_body = static_cast<int>(c.max_body_bytes);
  r.Integer("PAINTLOCK_MAX_BODY_BYTES", 1024, 16 * 1024 * 1024, "a number of bytes", &max_body);
  c.max_body_bytes = static_cast<std::size_t>(max_body);
  if (auto v = r.Get("PAINTLOCK_STOREFRONT_DIR")) c.storefront_dir = *v;
  if (auto v = r.Get("PAINTLOCK_VISITOR_KEY")) {
    if (v->size() < 16)
      r.Problem("PAINTLOCK_VISITOR_KEY", "must be at least 16 characters");
    else
      c.visitor_key = *v;
  }
  if (auto v = r.Get("PAINTLOCK_TRUSTED_PROXIES")) {
    std::string bad;
    if (!base::ParseNetworks(*v, &bad)) {
      r.Problem("PAINTLOCK_TRUSTED_PROXIES",
                "\"" + bad + "\" is not an IP address or CIDR network");
    } else {
      c.trusted_proxies = *v;
    }
  }
  if (auto v = r.Get("PAINTLOCK_LOG_LEVEL")) {
    if (*v != "debug" && *v != "info" && *v != "warn" && *v != "error") {
      r.Problem("PAINTLOCK_LOG_LEVEL", "must be debug, info, warn or error");
    } else {
      c.log_level = *v;
    }
  }
  // Rate-limit buckets and the checkout limit (locks/CREDITS.md).
  if (auto v = r.Get("PAINTLOCK_RATE_LIMITS")) {
    std::string bad;
    auto buckets = locks::ParseRateBuckets(*v, &bad);
    if (!buckets)
      r.Problem("PAINTLOCK_RATE_LIMITS", bad);
    else
      c.rate_buckets = locks::WithDefaultBuckets(std::move(*buckets));
  }
  if (auto v = r.Get("PAINTLOCK_CHECKOUT_RATE_LIMIT")) {
    if (*v != "on" && *v != "off") {
      r.Problem("PAINTLOCK_CHECKOUT_RATE_LIMIT", "must be on or off, got \"" + *v + "\"");
    } else {
      c.checkout_rate_limit = *v == "on";
    }
  }
  // Daily quotas and licences (locks/QUOTAS.md).
  if (auto v = r.Get("PAINTLOCK_QUOTAS")) {
    std::vector<std::string> bad;
    if (auto quotas = locks::ParseQuotaPolicies(*v, &bad)) c.quotas = std::move(*quotas);
    for (const auto& b : bad) r.Problem("PAINTLOCK_QUOTAS", b);
  }
  if (auto v = r.Get("PAINTLOCK_LICENSE_SECRET")) {
    if (v->size() < 32)
      r.Problem("PAINTLOCK_LICENSE_SECRET", "must be at least 32 characters");
    else
      c.license_secret = *v;
  }
  r.Seconds("PAINTLOCK_LICENSE_CACHE_SECONDS", 0, 3600, &c.license_cache_max_age);
  // CORS, the unavailable page, the availability stream.
  if (auto v = r.Get("PAINTLOCK_ALLOWED_ORIGINS")) {
    std::string bad;
    if (auto origins = ParseAllowedOrigins(*v, &bad))
      c.allowed_origins = std::move(*origins);
    else
      r.Problem("PAINTLOCK_ALLOWED_ORIGINS", bad);
  }
  if (auto v = r.Get("PAINTLOCK_UNAVAILABLE_URL")) {
    if (!IsHttpUrl(*v))
      r.Problem("PAINTLOCK_UNAVAILABLE_URL", "must be an http(s) URL");
    else
      c.unavailable_url = *v;
  }
  r.Integer("PAINTLOCK_MAX_STREAMS", 0, 2000, "a whole number", &c.max_streams);
  r.Seconds("PAINTLOCK_STREAM_HEARTBEAT_SECONDS", 1, 300, &c.stream_heartbeat);
  // The HTTP edge (gateway/edge/edge_server.h).
  r.Seconds("PAINTLOCK_REQUEST_DEADLINE_SECONDS", 1, 300, &c.request_deadline);
  r.Seconds("PAINTLOCK_IDLE_TIMEOUT_SECONDS", 1, 3600, &c.idle_timeout);
  r.Millis("PAINTLOCK_KEEPALIVE_LINGER_MS", 0, 100, &c.keepalive_linger);
  int max_header = static_cast<int>(c.max_header_bytes);
  r.Integer("PAINTLOCK_MAX_HEADER_BYTES", 1024, 1024 * 1024, "a number of bytes", &max_header);
  c.max_header_bytes = static_cast<std::size_t>(max_header);
  r.Integer("PAINTLOCK_MAX_CONNECTIONS", 16, 1000000, "a whole number", &c.max_connections);
  r.Integer("PAINTLOCK_MAX_CONNECTIONS_PER_ADDRESS", 1, 1000000, "a whole number",
            &c.max_connections_per_address);
  r.Seconds("PAINTLOCK_AVAILABILITY_FULL_READ_SECONDS", 1, 3600, &c.availability_full_read);
  r.Seconds("PAINTLOCK_AVAILABILITY_IDLE_SECONDS", 0, 3600, &c.availability_idle);
  if (auto v = r.Get("PAINTLOCK_ON_DATABASE_DOWN")) {
    if (*v == "refuse" || *v == "sell") {
      c.sell_when_database_down = *v == "sell";
    } else {
      r.Problem("PAINTLOCK_ON_DATABASE_DOWN", "must be refuse or sell, got \"" + *v + "\"");
    }
  }
  ParseMetrics(r, c);
  ParseCheckoutCollection(r, &c.checkout_collection);
  return c;
}

std::string ConfigHelp() {
  return R"(Configuration (environment variables):
  DATABASE_URL                      PostgreSQL connection URI (required)
  PAINTLOCK_LISTEN                  HOST:PORT to listen on (default 127.0.0.1:8080; port 0 = any)
  PAINTLOCK_PUBLIC_URL              URL buyers use to reach the gateway (default http://LISTEN)
  PAINTLOCK_SUCCESS_URL             Stripe success_url (default PUBLIC_URL/shop/success.html?session_id={CHECKOUT_SESSION_ID})
  PAINTLOCK_CANCEL_URL              Stripe cancel_url (default PUBLIC_URL/shop/)
  PAINTLOCK_API_KEY                 Bearer key for /v1/reservations (>= 16 chars; unset: disabled)
  PAINTLOCK_HOLD_SECONDS            how long a reservation holds its paintings (default 420)
  PAINTLOCK_SESSION_SECONDS         Stripe session lifetime, 1860..86400 (default 2100)
  PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS  hold while a delayed payment settles (default 1209600)
  PAINTLOCK_LINE_MAX                entries waiting in one painting's line, 1..10000 (default 100)
  PAINTLOCK_LINE_PER_VISITOR        places one visitor may hold in one line, 1..100 (default 1)
  PAINTLOCK_LINE_CLAIM_SECONDS      how long each turn in a line lasts, 1..3600 (default 120)
  PAINTLOCK_HTTP_THREADS            HTTP worker threads: requests being handled at once (default 64)
  PAINTLOCK_REQUEST_DEADLINE_SECONDS  a request must arrive whole (headers and body) this long
                                    after its first byte, else 408 and close, 1..300 (default 10)
  PAINTLOCK_IDLE_TIMEOUT_SECONDS    an idle keep-alive connection is closed after this, 1..3600
                                    (default 5)
  PAINTLOCK_KEEPALIVE_LINGER_MS     a worker that answered waits this long for the same client's
                                    next request while another worker is idle, 0..100 (default 2)
  PAINTLOCK_MAX_HEADER_BYTES        largest request line + headers, else 431 (default 16384)
  PAINTLOCK_MAX_CONNECTIONS         open connections in all, beyond: 503 (default 4096)
  PAINTLOCK_MAX_CONNECTIONS_PER_ADDRESS  open connections per client IP, beyond: 503 at once;
                                    PAINTLOCK_TRUSTED_PROXIES are exempt (default 64)
  PAINTLOCK_DB_POOL                 PostgreSQL connections (default 32)
  PAINTLOCK_DB_ASYNC_CONNECTIONS    more connections, driven asynchronously by the HTTP edge's
                                    reactor for rate-limit takes, credit holds and commits,
                                    quota consumes; 0: workers serve them (default 8)
  PAINTLOCK_DB_LOCK_TIMEOUT_MS      lock_timeout (default 1000)
  PAINTLOCK_DB_STATEMENT_TIMEOUT_MS statement_timeout (default 5000)
  PAINTLOCK_DB_OUTCOME_LOOKUP_MS    a write whose connection broke after it was sent is looked
                                    up by its id this long while no database answers, before
                                    503 outcome_unknown; longer than a failover, 0..60000
                                    (default 10000)
  PAINTLOCK_DB_STATEMENTS           named | unnamed: unnamed statements work through PgBouncer's
                                    transaction pooling (default named)
  PAINTLOCK_LISTEN_DATABASE_URL     where availability streams LISTEN: a direct connection to
                                    the primary, needed behind PgBouncer (default DATABASE_URL)
  PAINTLOCK_MAX_BODY_BYTES          largest request body (default 65536)
  PAINTLOCK_STOREFRONT_DIR          serve a static storefront at /shop/ (optional)
  PAINTLOCK_VISITOR_KEY             secret (>= 16 chars) for visitor ids = HMAC(key, client IP);
                                    share it between gateways (unset: random per process)
  PAINTLOCK_TRUSTED_PROXIES         IPs/CIDRs whose X-Forwarded-For is believed (default none)
  PAINTLOCK_LOG_LEVEL               debug | info | warn | error (default info)
  PAINTLOCK_RATE_LIMITS             rate-limit buckets NAME:CAPACITY:REFILL_PER_SECOND,... for
                                    /v1/ratelimits and the checkout limit (default checkout:120:2)
  PAINTLOCK_CHECKOUT_RATE_LIMIT     on | off: limit POST /v1/checkout per visitor with the
                                    "checkout" bucket (default on)
  PAINTLOCK_QUOTAS                  daily quotas NAME:LIMIT:TIME_ZONE,... counted per visitor
                                    (default downloads:5:UTC); the day starts at midnight there
  PAINTLOCK_LICENSE_SECRET          secret (>= 32 chars) licence keys are derived from; needed to
                                    apply customer.subscription.* webhooks (unset: they get 503)
  PAINTLOCK_LICENSE_CACHE_SECONDS   how long a licence check may be reused, 0..3600 (default 45):
                                    a cancellation takes up to this long to bite
  PAINTLOCK_ALLOWED_ORIGINS         origins (scheme://host[:port], comma-separated) whose pages may
                                    call /v1/checkout, /v1/paintings*, the stream and /paintlock.js
                                    (CORS; default none: same origin and form posts only)
  PAINTLOCK_UNAVAILABLE_URL         a form post that loses its painting is sent here (303) with
                                    ?painting=&code=&free_at= (default: a small HTML page)
  PAINTLOCK_MAX_STREAMS             open /v1/paintings/stream connections, 0..2000 (default 200);
                                    more get 503. They hold no worker thread
  PAINTLOCK_STREAM_HEARTBEAT_SECONDS  comment line on an idle stream, 1..300 (default 15)
  PAINTLOCK_AVAILABILITY_FULL_READ_SECONDS  every stream's full re-read, 1..3600 (default 30):
                                    the longest a change whose publish was lost stays unseen
  PAINTLOCK_AVAILABILITY_IDLE_SECONDS  with no stream open this long, 0..3600 (default 30), the
                                    gateway stops reading availability until a stream opens
                                    (which then waits for one full read)
  PAINTLOCK_ON_DATABASE_DOWN        refuse | sell: a checkout while the database is down gets
                                    503 (refuse, default), or a Stripe session priced from the
                                    catalogue held in memory (sell), applied when the database
                                    is back; a painting sold twice meanwhile is refunded
  PAINTLOCK_METRICS                 off | api-key | listen: GET /metrics (Prometheus text) is not
                                    served (off, default), served behind PAINTLOCK_API_KEY
                                    (api-key), or open on PAINTLOCK_METRICS_LISTEN only (listen)
  PAINTLOCK_METRICS_LISTEN          HOST:PORT of the metrics listener with PAINTLOCK_METRICS=listen
                                    (default 127.0.0.1:9464; port 0 = any, logged)
  PAINTLOCK_SHIPPING_COUNTRIES      ISO 3166-1 alpha-2 codes (DE,FR,…): Stripe Checkout asks for a
                                    shipping address in one of them (default none: no address)
  PAINTLOCK_COLLECT_PHONE           on | off: Stripe Checkout asks for a phone number (default off)
  PAINTLOCK_CHECKOUT_LOCALE         the Checkout page's language: auto, en, de, fr, … (default
                                    Stripe's: auto)
  PAINTLOCK_SHIPPING_RATE           a shipping rate (shr_…) created in Stripe, offered on every
                                    session (default none)
  STRIPE_SECRET_KEY                 sk_… (required)
  STRIPE_API_BASE                   default https://api.stripe.com (http only for loopback)
  STRIPE_CA_FILE                    extra CA bundle to trust (optional)
  STRIPE_API_VERSION                the Stripe-Version paintlock sends (default )" +
         std::string(stripe::kDefaultStripeVersion) + R"(); pin the
                                    webhook endpoint to the same version
  STRIPE_WEBHOOK_SECRET             whsec_…[,whsec_…] (several while rolling a secret)
  STRIPE_WEBHOOK_TOLERANCE_SECONDS  signature age limit (default 300)
  STRIPE_MAX_RETRIES                retries on network errors, 409, 429, 5xx (default 2)
  STRIPE_TIMEOUT_MS                 read timeout per Stripe request (default 20000)
  STRIPE_DEADLINE_MS                one Stripe call, retries included, ends by then (default 10000)
  PAINTLOCK_STRIPE_MAX_WAITING      requests waiting on Stripe at once; beyond: 503
                                    stripe_unavailable with Retry-After (default 16)
)";
}

}  // namespace paintlock::gateway
