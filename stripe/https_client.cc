#include "stripe/https_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <utility>

#include "base/log.h"
#include "stripe/api_base.h"
#include "stripe/responses.h"
#include "stripe/session_form.h"
#include "stripe/stripe_metrics.h"

namespace paintlock::stripe {

namespace {

using json = nlohmann::json;
using base::EncodeForm;
using base::PercentEncode;
using std::chrono::milliseconds;

constexpr char kFormContentType[] = "application/x-www-form-urlencoded";
constexpr std::size_t kMaxIdempotencyKeyLength = 255;  // Stripe's limit
constexpr int kMaxRetriesLimit = 20;

// Refusals of our own, for arguments Stripe could only reject. 400, like
// Stripe's answer would be, so callers do not retry them.
StripeError LocalRefusal(const char* param, const std::string& why) {
  StripeError e;
  e.http_status = 400;
  e.type = "invalid_request_error";
  e.param = param;
  e.message = "paintlock: " + why + " (not sent to Stripe)";
  return e;
}

StripeError InternalError(const char* what) {
  StripeError e;
  e.http_status = 0;  // unknown outcome: may be retried with the same key
  e.type = "api_error";
  e.message = std::string("paintlock stripe client internal error: ") + what;
  return e;
}

std::optional<StripeError> CheckIdempotencyKey(const std::string& key) {
  if (key.empty()) return LocalRefusal("idempotency_key", "an idempotency key is required");
  if (key.size() > kMaxIdempotencyKeyLength) {
    return LocalRefusal("idempotency_key", "the idempotency key is longer than 255 characters");
  }
  if (!IsVisibleAscii(key)) {
    return LocalRefusal("idempotency_key", "the idempotency key must be visible ASCII");
  }
  return std::nullopt;
}

const char* ErrorName(httplib::Error e) {
  switch (e) {
    case httplib::Error::Success:
      return "Success";
    case httplib::Error::Unknown:
      return "Unknown";
    case httplib::Error::Connection:
      return "Connection";
    case httplib::Error::BindIPAddress:
      return "BindIPAddress";
    case httplib::Error::Read:
      return "Read";
    case httplib::Error::Write:
      return "Write";
    case httplib::Error::ExceedRedirectCount:
      return "ExceedRedirectCount";
    case httplib::Error::Canceled:
      return "Canceled";
    case httplib::Error::SSLConnection:
      return "SSLConnection";
    case httplib::Error::SSLLoadingCerts:
      return "SSLLoadingCerts";
    case httplib::Error::SSLServerVerification:
      return "SSLServerVerification";
    case httplib::Error::UnsupportedMultipartBoundaryChars:
      return "UnsupportedMultipartBoundaryChars";
    case httplib::Error::Compression:
      return "Compression";
    case httplib::Error::ConnectionTimeout:
      return "ConnectionTimeout";
  }
  return "Unknown";
}

// Failures that another attempt may cure. Certificate problems and local
// misconfiguration will fail the same way every time.
bool TransportErrorIsTransient(httplib::Error e) {
  switch (e) {
    case httplib::Error::Unknown:
    case httplib::Error::Connection:
    case httplib::Error::Read:
    case httplib::Error::Write:
    case httplib::Error::SSLConnection:
    case httplib::Error::Compression:
    case httplib::Error::ConnectionTimeout:
      return true;
    default:
      return false;
  }
}

// Runs one public call (local refusals, then Send); anything it throws
// (allocation) becomes an InternalError, so no call ever throws.
template <typename T, typename Call>
StripeResult<T> Guarded(Call&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    return InternalError(e.what());
  }
}

}  // namespace

// ---- HttpsStripeClient ---------------------------------------------------

struct HttpsStripeClient::Exchange {
  int status = 0;  // 0: no HTTP answer; see `error`
  httplib::Error error = httplib::Error::Unknown;
  long verify_result = X509_V_OK;  // OpenSSL's verdict on SSLServerVerification
  std::string body;
  std::string should_retry;  // Stripe-Should-Retry, "" when absent
  std::string request_id;    // Request-Id, "" when absent
};

milliseconds RetryDelay(int retry, milliseconds base, milliseconds max, double unit_random) {
  const double base_ms = static_cast<double>(base.count());
  const double cap = std::min(base_ms * std::ldexp(1.0, std::clamp(retry, 1, 62) - 1),
                              static_cast<double>(max.count()));
  const double unit = std::clamp(unit_random, 0.0, 1.0);
  const double delay = std::max(cap * 0.5 * (1.0 + unit), base_ms);
  return milliseconds(static_cast<milliseconds::rep>(delay));
}

std::unique_ptr<HttpsStripeClient> HttpsStripeClient::Create(const HttpsClientOptions& options,
                                                             std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  Endpoint endpoint;
  if (!ParseApiBase(options.api_base, &endpoint.tls, &endpoint.host, &endpoint.port, error)) {
    return nullptr;
  }
  if (options.secret_key.empty()) {
    *error = "secret_key is empty";
    return nullptr;
  }
  if (!IsVisibleAscii(options.secret_key)) {
    *error = "secret_key contains spaces, control or non-ASCII characters";
    return nullptr;
  }
  if (options.stripe_version.empty() || !IsVisibleAscii(options.stripe_version)) {
    *error = "stripe_version must be a non-empty API version such as " +
             std::string(kDefaultStripeVersion);
    return nullptr;
  }
  std::string why;
  if (!options.ca_file.empty() && !LoadsAsCaBundle(options.ca_file, &why)) {
    *error = "ca_file \"" + options.ca_file + "\": " + why;
    return nullptr;
  }
  if (options.connect_timeout <= milliseconds::zero() ||
      options.read_timeout <= milliseconds::zero()) {
    *error = "connect_timeout and read_timeout must be positive";
    return nullptr;
  }
  if (options.max_retries < 0 || options.max_retries > kMaxRetriesLimit) {
    *error = "max_retries must be between 0 and " + std::to_string(kMaxRetriesLimit);
    return nullptr;
  }
  if (options.retry_base_delay < milliseconds::zero() ||
      options.retry_max_delay < options.retry_base_delay) {
    *error = "retry delays must satisfy 0 <= retry_base_delay <= retry_max_delay";
    return nullptr;
  }
  HttpsClientOptions copy = options;
  if (!copy.sleep) copy.sleep = [](milliseconds d) { std::this_thread::sleep_for(d); };
  return std::unique_ptr<HttpsStripeClient>(
      new HttpsStripeClient(std::move(copy), std::move(endpoint)));
}

HttpsStripeClient::HttpsStripeClient(HttpsClientOptions options, Endpoint endpoint)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      user_agent_(std::string("paintlock-stripe-client/1 cpp-httplib/") + CPPHTTPLIB_VERSION),
      rng_(options_.jitter_seed != 0
               ? options_.jitter_seed
               : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {}

HttpsStripeClient::~HttpsStripeClient() = default;

std::unique_ptr<httplib::ClientImpl> HttpsStripeClient::NewConnection() const {
  std::unique_ptr<httplib::ClientImpl> conn;
  if (endpoint_.tls) {
    auto tls = std::make_unique<httplib::SSLClient>(endpoint_.host, endpoint_.port);
    if (!options_.ca_file.empty()) tls->set_ca_cert_path(options_.ca_file);
    tls->enable_server_certificate_verification(true);
    // httplib checks the peer name itself but falls back to the subject CN
    // even when the certificate has SANs; OpenSSL's own check (RFC 6125) runs
    // too, and its verdict lands in the verify result httplib enforces.
    if (SSL_CTX* ctx = tls->ssl_context()) {
      SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      if (IsIpLiteral(endpoint_.host)) {
        X509_VERIFY_PARAM_set1_ip_asc(param, endpoint_.host.c_str());
      } else {
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        X509_VERIFY_PARAM_set1_host(param, endpoint_.host.c_str(), 0);
      }
    }
    conn = std::move(tls);
  } else {
    conn = std::make_unique<httplib::ClientImpl>(endpoint_.host, endpoint_.port);
  }
  conn->set_connection_timeout(options_.connect_timeout);
  conn->set_read_timeout(options_.read_timeout);
  conn->set_write_timeout(options_.read_timeout);
  conn->set_keep_alive(options_.max_idle_connections > 0);
  conn->set_follow_location(false);
  // Headers and body go out in separate writes; with Nagle on, the body waits
  // for the peer's delayed ACK (~40 ms per request).
  conn->set_tcp_nodelay(true);
  conn->set_url_encode(false);  // paths are encoded here, once
  return conn;
}

std::unique_ptr<httplib::ClientImpl> HttpsStripeClient::TakeConnection() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<httplib::ClientImpl> conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
  }
  return NewConnection();
}

void HttpsStripeClient::ReturnConnection(std::unique_ptr<httplib::ClientImpl> connection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(connection));
}

double HttpsStripeClient::NextUnitRandom() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

std::uint64_t HttpsStripeClient::NextNonce() {
  std::lock_guard<std::mutex> lock(mu_);
  return rng_();
}

HttpsStripeClient::Exchange HttpsStripeClient::SendOnce(milliseconds read_timeout,
                                                        const char* method, const std::string& path,
                                                        const std::string& form_body,
                                                        const std::string& idempotency_key) {
  httplib::Headers headers = {
      {"Authorization", "Bearer " + options_.secret_key},
      {"Stripe-Version", options_.stripe_version},
      {"User-Agent", user_agent_},
      {"Accept", "application/json"},
  };
  if (!idempotency_key.empty()) headers.emplace("Idempotency-Key", idempotency_key);

  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<httplib::ClientImpl> conn = TakeConnection();
  conn->set_read_timeout(read_timeout);
  conn->set_write_timeout(read_timeout);
  httplib::Result result = std::strcmp(method, "GET") == 0
                               ? conn->Get(path, headers)
                               : conn->Post(path, headers, form_body, kFormContentType);
  Exchange ex;
  ex.error = result.error();
  if (result) {
    ex.status = result->status;
    ex.body = std::move(result->body);
    ex.should_retry = result->get_header_value("Stripe-Should-Retry");
    ex.request_id = result->get_header_value("Request-Id");
    ReturnConnection(std::move(conn));
  } else if (auto* tls = dynamic_cast<httplib::SSLClient*>(conn.get())) {
    ex.verify_result = tls->get_openssl_verify_result();
  }
  // A connection that failed is dropped: its socket state is unknown.
  CountExchange(method, path, ex.status,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return ex;
}

std::optional<StripeError> HttpsStripeClient::Call(const char* method, const std::string& path,
                                                   const std::string& form_body,
                                                   const std::string& idempotency_key, int* status,
                                                   std::string* body) {
  const auto start = std::chrono::steady_clock::now();
  auto left = [&] {
    return options_.deadline -
           std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  };
  for (int attempt = 1;; ++attempt) {
    const milliseconds read_timeout = options_.deadline > milliseconds::zero()
                                          ? std::min(options_.read_timeout, left())
                                          : options_.read_timeout;
    Exchange ex =
        SendOnce(std::max(read_timeout, milliseconds(1)), method, path, form_body, idempotency_key);
    if (ex.status >= 200 && ex.status < 300) {
      *status = ex.status;
      *body = std::move(ex.body);
      return std::nullopt;
    }

    StripeError error;
    bool retryable;
    if (ex.status == 0) {
      error.type = "connection_error";
      error.message = std::string("no answer from Stripe at ") + endpoint_.host + ":" +
                      std::to_string(endpoint_.port) + " for " + method + " " + path +
                      ": httplib error " + ErrorName(ex.error);
      if (ex.error == httplib::Error::SSLServerVerification && ex.verify_result != X509_V_OK) {
        error.message += std::string(" (") + X509_verify_cert_error_string(ex.verify_result) + ")";
      }
      retryable = TransportErrorIsTransient(ex.error);
    } else {
      error = ErrorFromBody(ex.status, ex.body);
      if (ex.should_retry == "true") {
        retryable = true;
      } else if (ex.should_retry == "false") {
        retryable = false;
      } else {
        retryable = ex.status == 409 || ex.status == 429 || ex.status >= 500;
      }
    }
    if (!retryable || attempt > options_.max_retries) return error;

    const milliseconds delay =
        RetryDelay(attempt, options_.retry_base_delay, options_.retry_max_delay, NextUnitRandom());
    if (options_.deadline > milliseconds::zero() && delay >= left()) {
      base::LogWarn("stripe_deadline_reached", {{"method", method},
                                                {"path", path},
                                                {"attempts", attempt},
                                                {"deadline_ms", options_.deadline.count()}});
      return error;
    }
    json fields = {
        {"method", method},
        {"path", path},
        {"attempt", attempt},
        {"max_retries", options_.max_retries},
        {"status", ex.status},
        {"error", ex.status == 0 ? std::string(ErrorName(ex.error)) : error.type},
        {"delay_ms", delay.count()},
    };
    if (!idempotency_key.empty()) fields["idempotency_key"] = idempotency_key;
    if (!ex.request_id.empty()) fields["stripe_request_id"] = ex.request_id;
    base::LogWarn("stripe_retry", fields);
    Metrics().retries.With({EndpointLabel(method, path)}).Inc();
    options_.sleep(delay);
  }
}

template <typename T>
StripeResult<T> HttpsStripeClient::Send(const char* method, const std::string& path,
                                        const std::string& form_body,
                                        const std::string& idempotency_key) {
  int status = 0;
  std::string body;
  if (auto error = Call(method, path, form_body, idempotency_key, &status, &body)) return *error;
  T object;
  if (auto error = DecodeResponse(status, body, &object)) return *error;
  return object;
}

StripeResult<CheckoutSession> HttpsStripeClient::CreateCheckoutSession(
    const CreateSessionParams& p) {
  return Guarded<CheckoutSession>([&]() -> StripeResult<CheckoutSession> {
    if (auto refusal = CheckIdempotencyKey(p.idempotency_key)) return *refusal;
    return Send<CheckoutSession>("POST", "/v1/checkout/sessions",
                                 EncodeForm(CheckoutSessionForm(p)), p.idempotency_key);
  });
}

StripeResult<CheckoutSession> HttpsStripeClient::RetrieveCheckoutSession(const std::string& id) {
  return Guarded<CheckoutSession>([&]() -> StripeResult<CheckoutSession> {
    if (id.empty()) return LocalRefusal("id", "empty Checkout Session id");
    return Send<CheckoutSession>("GET", "/v1/checkout/sessions/" + PercentEncode(id), "", "");
  });
}

StripeResult<CheckoutSession> HttpsStripeClient::ExpireCheckoutSession(const std::string& id) {
  return Guarded<CheckoutSession>([&]() -> StripeResult<CheckoutSession> {
    if (id.empty()) return LocalRefusal("id", "empty Checkout Session id");
    char nonce[17];
    std::snprintf(nonce, sizeof nonce, "%016llx", static_cast<unsigned long long>(NextNonce()));
    const std::string key = "expire-" + id + "-" + nonce;
    if (CheckIdempotencyKey(key)) {
      return LocalRefusal("id", "Checkout Session id too long or not visible ASCII");
    }
    return Send<CheckoutSession>("POST", "/v1/checkout/sessions/" + PercentEncode(id) + "/expire",
                                 "", key);
  });
}

StripeResult<Refund> HttpsStripeClient::CreateRefund(const std::string& payment_intent,
                                                     const std::string& idempotency_key) {
  return Guarded<Refund>([&]() -> StripeResult<Refund> {
    if (auto refusal = CheckIdempotencyKey(idempotency_key)) return *refusal;
    if (payment_intent.empty()) return LocalRefusal("payment_intent", "empty payment_intent");
    return Send<Refund>("POST", "/v1/refunds", EncodeForm({{"payment_intent", payment_intent}}),
                        idempotency_key);
  });
}

bool LooksLikeStripeVersion(const std::string& version) {
  static const std::regex re(R"(^[0-9]{4}-[0-9]{2}-[0-9]{2}(\.[a-z]{1,32})?$)");
  return std::regex_match(version, re);
}

void ReadHttpsClientOptions(base::SettingsReader& r, HttpsClientOptions* out) {
  if (auto v = r.Get("STRIPE_SECRET_KEY")) {
    if (v->rfind("sk_", 0) != 0 && v->rfind("rk_", 0) != 0) {
      r.Problem("STRIPE_SECRET_KEY", "must be a Stripe secret key (sk_live_…, sk_test_… or rk_…)");
    } else {
      out->secret_key = *v;
    }
  } else {
    r.Problem("STRIPE_SECRET_KEY", "is required (sk_test_… for test mode)");
  }
  if (auto v = r.Get("STRIPE_API_BASE")) {
    while (!v->empty() && v->back() == '/') v->pop_back();
    out->api_base = *v;
  }
  if (auto v = r.Get("STRIPE_CA_FILE")) out->ca_file = *v;
  if (auto v = r.Get("STRIPE_API_VERSION")) {
    if (LooksLikeStripeVersion(*v)) {
      out->stripe_version = *v;
    } else {
      r.Problem("STRIPE_API_VERSION", "must be a Stripe API version such as " +
                                          std::string(kDefaultStripeVersion) + ", got \"" + *v +
                                          "\"");
    }
  }
  r.Integer("STRIPE_MAX_RETRIES", 0, 10, "a whole number", &out->max_retries);
  r.Millis("STRIPE_TIMEOUT_MS", 100, 120000, &out->read_timeout);
  r.Millis("STRIPE_DEADLINE_MS", 100, 300000, &out->deadline);
}

StripeResult<SessionPage> HttpsStripeClient::ListCheckoutSessions(const ListSessionsParams& p) {
  return Guarded<SessionPage>([&]() -> StripeResult<SessionPage> {
    if (p.limit < 1 || p.limit > 100) return LocalRefusal("limit", "limit must be 1 to 100");
    base::FormFields query = {{"created[gte]", std::to_string(p.created_gte)},
                              {"limit", std::to_string(p.limit)}};
    if (!p.starting_after.empty()) query.push_back({"starting_after", p.starting_after});
    return Send<SessionPage>("GET", "/v1/checkout/sessions?" + EncodeForm(query), "", "");
  });
}

}  // namespace paintlock::stripe
