#include "stripe/https_client.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "base/log.h"
#include "stripe/session_form.h"

namespace paintlock::stripe {

namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using base::EncodeForm;
using base::PercentEncode;

constexpr char kFormContentType[] = "application/x-www-form-urlencoded";
constexpr std::size_t kMaxIdempotencyKeyLength = 255;  // Stripe's limit
constexpr int kMaxRetriesLimit = 20;

// ---- Options -------------------------------------------------------------

bool IsVisibleAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7F; });
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsIpv4(const std::string& host, in_addr* addr) {
  return inet_pton(AF_INET, host.c_str(), addr) == 1;
}

bool IsIpv6(const std::string& host, in6_addr* addr) {
  return inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (IsIpv4(host, &v4)) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (IsIpv6(host, &v6)) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;
}

bool IsHostName(const std::string& host) {
  return !host.empty() && host.size() <= 253 && host.front() != '.' && host.front() != '-' &&
         std::all_of(host.begin(), host.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
         });
}

// api_base: scheme://host[:port][/]. Writes *error on failure.
bool ParseApiBase(const std::string& url, bool* tls, std::string* host, int* port,
                  std::string* error) {
  const std::string what = "api_base \"" + url + "\"";
  std::size_t sep = url.find("://");
  if (sep == std::string::npos) {
    *error = what + " must start with https:// (or http:// for a loopback host)";
    return false;
  }
  const std::string scheme = Lower(url.substr(0, sep));
  if (scheme != "https" && scheme != "http") {
    *error = what + ": scheme must be https (or http for a loopback host), not \"" + scheme + "\"";
    return false;
  }
  *tls = scheme == "https";
  std::string rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find_first_of("/?#@ \t\r\n\\") != std::string::npos) {
    *error = what + " must be scheme://host[:port] with no path, query, fragment or user info";
    return false;
  }
  std::string host_text = rest;
  std::optional<std::string> port_text;  // set when a ':' follows the host
  if (!rest.empty() && rest.front() == '[') {
    std::size_t close = rest.find(']');
    if (close == std::string::npos) {
      *error = what + ": unterminated IPv6 literal";
      return false;
    }
    host_text = rest.substr(1, close - 1);
    std::string after = rest.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      *error = what + ": unexpected text after the IPv6 literal";
      return false;
    }
    if (!after.empty()) port_text = after.substr(1);
    in6_addr v6{};
    if (!IsIpv6(host_text, &v6)) {
      *error = what + ": bad IPv6 literal";
      return false;
    }
  } else {
    std::size_t colon = rest.find(':');
    if (colon != std::string::npos) {
      if (rest.find(':', colon + 1) != std::string::npos) {
        *error = what + ": an IPv6 host must be written in brackets, e.g. http://[::1]:12111";
        return false;
      }
      host_text = rest.substr(0, colon);
      port_text = rest.substr(colon + 1);
    }
    if (!IsHostName(host_text)) {
      *error = what + ": missing or malformed host";
      return false;
    }
  }
  *host = Lower(host_text);
  *port = *tls ? 443 : 80;
  if (port_text) {
    bool digits = !port_text->empty() && port_text->size() <= 5 &&
                  std::all_of(port_text->begin(), port_text->end(),
                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    int value = digits ? std::stoi(*port_text) : 0;
    if (value < 1 || value > 65535) {
      *error = what + ": port must be a number from 1 to 65535";
      return false;
    }
    *port = value;
  }
  if (!*tls && !IsLoopbackHost(*host)) {
    *error = what + ": plain http is allowed only to a loopback host (127.0.0.0/8, localhost, " +
             "[::1]); use https for \"" + *host + "\"";
    return false;
  }
  return true;
}

// True when `path` is a readable PEM file with at least one certificate.
bool LoadsAsCaBundle(const std::string& path, std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *why = std::strerror(errno);
    return false;
  }
  std::fclose(f);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *why = "OpenSSL could not create a context";
    return false;
  }
  bool ok = SSL_CTX_load_verify_locations(ctx, path.c_str(), nullptr) == 1;
  SSL_CTX_free(ctx);
  ERR_clear_error();
  if (!ok) *why = "no PEM certificate could be read from it";
  return ok;
}

// ---- Responses -----------------------------------------------------------

std::string StringField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::int64_t IntField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_number_integer()) return 0;
  return it->get<std::int64_t>();
}

// A reference that Stripe sends as an id, as an expanded object, or as null.
std::string IdField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return StringField(*it, "id");
  return "";
}

// The JSON object in `body` if it looks like a Stripe object of kind `object`:
// an object with a non-empty string id and, when present, the right `object`.
std::optional<json> ParseObject(const std::string& body, const char* object) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || StringField(j, "id").empty()) return std::nullopt;
  auto kind = j.find("object");
  if (kind != j.end() && kind->is_string() && kind->get<std::string>() != object) {
    return std::nullopt;
  }
  return j;
}

bool ParseSession(const std::string& body, CheckoutSession* s) {
  std::optional<json> j = ParseObject(body, "checkout.session");
  if (!j) return false;
  s->id = StringField(*j, "id");
  s->status = StringField(*j, "status");
  s->payment_status = StringField(*j, "payment_status");
  s->url = StringField(*j, "url");
  s->payment_intent = IdField(*j, "payment_intent");
  s->client_reference_id = StringField(*j, "client_reference_id");
  s->currency = StringField(*j, "currency");
  s->amount_total = IntField(*j, "amount_total");
  s->expires_at_unix = IntField(*j, "expires_at");
  s->created_unix = IntField(*j, "created");
  auto meta = j->find("metadata");
  if (meta != j->end() && meta->is_object()) {
    for (auto it = meta->begin(); it != meta->end(); ++it) {
      if (it.value().is_string()) {
        s->metadata[it.key()] = it.value().get<std::string>();
      } else if (!it.value().is_null()) {
        s->metadata[it.key()] = it.value().dump();
      }
    }
  }
  return true;
}

bool ParseRefund(const std::string& body, Refund* r) {
  std::optional<json> j = ParseObject(body, "refund");
  if (!j) return false;
  r->id = StringField(*j, "id");
  r->status = StringField(*j, "status");
  r->payment_intent = IdField(*j, "payment_intent");
  r->amount = IntField(*j, "amount");
  return true;
}

StripeError ErrorFromBody(int status, const std::string& body) {
  StripeError e;
  e.http_status = status;
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto detail = j.is_object() ? j.find("error") : j.end();
  if (j.is_object() && detail != j.end() && detail->is_object()) {
    e.type = StringField(*detail, "type");
    e.code = StringField(*detail, "code");
    e.message = StringField(*detail, "message");
    e.param = StringField(*detail, "param");
  }
  if (e.type.empty()) e.type = "api_error";
  if (e.message.empty()) {
    e.message = "Stripe answered HTTP " + std::to_string(status) + " without a Stripe error body";
  }
  return e;
}

StripeError Unparseable(int status, const char* object) {
  StripeError e;
  e.http_status = status;
  e.type = "api_error";
  e.message = "Stripe answered HTTP " + std::to_string(status) + " but the body is not a " +
              object + " object";
  return e;
}

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
      in_addr v4{};
      in6_addr v6{};
      if (IsIpv4(endpoint_.host, &v4) || IsIpv6(endpoint_.host, &v6)) {
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
  return ex;
}

std::optional<StripeError> HttpsStripeClient::Call(const char* method, const std::string& path,
                                                   const std::string& form_body,
                                                   const std::string& idempotency_key, int* status,
                                                   std::string* body) {
  const auto start = std::chrono::steady_clock::now();
  auto left = [&] {
    return options_.deadline - std::chrono::duration_cast<milliseconds>(
                                   std::chrono::steady_clock::now() - start);
  };
  for (int attempt = 1;; ++attempt) {
    const milliseconds read_timeout = options_.deadline > milliseconds::zero()
                                          ? std::min(options_.read_timeout, left())
                                          : options_.read_timeout;
    Exchange ex = SendOnce(std::max(read_timeout, milliseconds(1)), method, path, form_body,
                           idempotency_key);
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
    options_.sleep(delay);
  }
}

StripeResult<CheckoutSession> HttpsStripeClient::CreateCheckoutSession(
    const CreateSessionParams& p) {
  try {
    if (auto refusal = CheckIdempotencyKey(p.idempotency_key)) return *refusal;
    int status = 0;
    std::string body;
    if (auto error = Call("POST", "/v1/checkout/sessions", EncodeForm(CheckoutSessionForm(p)),
                          p.idempotency_key, &status, &body)) {
      return *error;
    }
    CheckoutSession session;
    if (!ParseSession(body, &session)) return Unparseable(status, "checkout.session");
    return session;
  } catch (const std::exception& e) {
    return InternalError(e.what());
  }
}

StripeResult<CheckoutSession> HttpsStripeClient::RetrieveCheckoutSession(const std::string& id) {
  try {
    if (id.empty()) return LocalRefusal("id", "empty Checkout Session id");
    int status = 0;
    std::string body;
    if (auto error =
            Call("GET", "/v1/checkout/sessions/" + PercentEncode(id), "", "", &status, &body)) {
      return *error;
    }
    CheckoutSession session;
    if (!ParseSession(body, &session)) return Unparseable(status, "checkout.session");
    return session;
  } catch (const std::exception& e) {
    return InternalError(e.what());
  }
}

StripeResult<CheckoutSession> HttpsStripeClient::ExpireCheckoutSession(const std::string& id) {
  try {
    if (id.empty()) return LocalRefusal("id", "empty Checkout Session id");
    char nonce[17];
    std::snprintf(nonce, sizeof nonce, "%016llx", static_cast<unsigned long long>(NextNonce()));
    std::string key = "expire-" + id + "-" + nonce;
    if (CheckIdempotencyKey(key)) {
      return LocalRefusal("id", "Checkout Session id too long or not visible ASCII");
    }
    int status = 0;
    std::string body;
    if (auto error = Call("POST", "/v1/checkout/sessions/" + PercentEncode(id) + "/expire", "", key,
                          &status, &body)) {
      return *error;
    }
    CheckoutSession session;
    if (!ParseSession(body, &session)) return Unparseable(status, "checkout.session");
    return session;
  } catch (const std::exception& e) {
    return InternalError(e.what());
  }
}

StripeResult<Refund> HttpsStripeClient::CreateRefund(const std::string& payment_intent,
                                                     const std::string& idempotency_key) {
  try {
    if (auto refusal = CheckIdempotencyKey(idempotency_key)) return *refusal;
    if (payment_intent.empty()) return LocalRefusal("payment_intent", "empty payment_intent");
    int status = 0;
    std::string body;
    if (auto error = Call("POST", "/v1/refunds", EncodeForm({{"payment_intent", payment_intent}}),
                          idempotency_key, &status, &body)) {
      return *error;
    }
    Refund refund;
    if (!ParseRefund(body, &refund)) return Unparseable(status, "refund");
    return refund;
  } catch (const std::exception& e) {
    return InternalError(e.what());
  }
}

}  // namespace paintlock::stripe
