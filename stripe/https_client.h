// HttpsStripeClient: the production StripeClient, speaking Stripe's HTTP API
// over TLS (cpp-httplib + OpenSSL).
//
// What must hold:
//  - Certificate and host-name verification are always on. Plain http:// is
//    accepted only for a loopback host (the fake Stripe in tests and `make run`).
//  - Every POST carries an Idempotency-Key, and every retry of one call reuses
//    it, so a retry can never create a second session or a second refund.
//  - A call retries (up to max_retries) only what may succeed later: no answer
//    at all, 409, 429 and 5xx — unless Stripe's `Stripe-Should-Retry` header
//    says otherwise. Backoff is min(base·2^(n−1), max) with halved-to-full
//    jitter and never below base, as in the official library.
//  - The secret key never reaches a log line or an error message.
//  - Nothing here throws for what Stripe or the network did; see client.h.
//
// Thread-safety: all methods may be called concurrently. The options are
// immutable after Create(); idle keep-alive connections and the jitter source
// are guarded by a mutex, which is never held while a request is in flight or
// while sleeping.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/env.h"
#include "stripe/client.h"

namespace httplib {
class ClientImpl;
}  // namespace httplib

namespace paintlock::stripe {

// The API version paintlock is written against (npm `stripe` v23).
inline constexpr char kDefaultStripeVersion[] = "2026-10-28.endive";

// A Stripe API version as STRIPE_API_VERSION gives it: YYYY-MM-DD, optionally
// followed by a release name (".endive").
bool LooksLikeStripeVersion(const std::string& version);

struct HttpsClientOptions {
  // scheme://host[:port] with at most a trailing "/". https for anything but
  // loopback (127.0.0.0/8, localhost, [::1]), where http is also accepted.
  std::string api_base = "https://api.stripe.com";
  std::string secret_key;  // sk_… or rk_…; required
  std::string stripe_version = kDefaultStripeVersion;
  // PEM bundle of trusted CAs, replacing the system trust store; empty = the
  // system trust store (OpenSSL's default paths).
  std::string ca_file;
  // Bounds the TCP connect and the TLS handshake.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);
  // Bounds each wait for bytes from Stripe (and each write to it).
  std::chrono::milliseconds read_timeout = std::chrono::seconds(20);
  int max_retries = 2;  // retries after the first attempt; 0 disables retrying
  // Bounds one call, attempts and waits between them together: no attempt
  // starts, and no read waits, past it. Zero: only read_timeout × attempts.
  std::chrono::milliseconds deadline = std::chrono::milliseconds(0);
  std::chrono::milliseconds retry_base_delay = std::chrono::milliseconds(500);
  std::chrono::milliseconds retry_max_delay = std::chrono::seconds(5);
  // Waits between attempts, on the calling thread (so it must be safe to call
  // concurrently when the client is shared); empty = std::this_thread::sleep_for.
  // Tests inject a recorder so retries neither wait nor depend on the clock.
  std::function<void(std::chrono::milliseconds)> sleep;
  // Seeds the jitter (and the per-call part of expire keys); 0 = seed from
  // std::random_device. Give a fixed seed in tests.
  std::uint64_t jitter_seed = 0;
  // Keep-alive connections kept for reuse; 0 = a new connection per attempt.
  std::size_t max_idle_connections = 4;
};

// Reads the STRIPE_* client settings both binaries share into `out`:
// STRIPE_SECRET_KEY (required), STRIPE_API_BASE, STRIPE_CA_FILE,
// STRIPE_API_VERSION, STRIPE_MAX_RETRIES, STRIPE_TIMEOUT_MS, STRIPE_DEADLINE_MS.
void ReadHttpsClientOptions(base::SettingsReader& r, HttpsClientOptions* out);

// The wait before retry number `retry` (1 for the first retry):
// min(base·2^(retry−1), max) scaled by (1 + unit_random)/2, then raised to at
// least `base`. `unit_random` is in [0, 1). Exposed for tests.
std::chrono::milliseconds RetryDelay(int retry, std::chrono::milliseconds base,
                                     std::chrono::milliseconds max, double unit_random);

class HttpsStripeClient final : public StripeClient {
 public:
  // Validates `options` and returns a client, or nullptr with *error saying
  // which option is wrong and why (never echoing the secret key). Checks the
  // URL shape, that http:// points at loopback, that ca_file (if any) holds at
  // least one PEM certificate, and that timeouts and delays are sane. Does no
  // network I/O: a bad key or an unreachable Stripe shows up on the first call.
  static std::unique_ptr<HttpsStripeClient> Create(const HttpsClientOptions& options,
                                                   std::string* error);

  ~HttpsStripeClient() override;
  HttpsStripeClient(const HttpsStripeClient&) = delete;
  HttpsStripeClient& operator=(const HttpsStripeClient&) = delete;

  // Sends CheckoutSessionForm(p) (stripe/session_form.h) with Idempotency-Key
  // p.idempotency_key. An empty key, or one over 255 characters or with
  // non-printable characters, is refused locally (400 invalid_request_error,
  // param "idempotency_key") without contacting Stripe.
  StripeResult<CheckoutSession> CreateCheckoutSession(const CreateSessionParams& p) override;

  // GET /v1/checkout/sessions/{id}; the id is percent-encoded into the path.
  // An empty id is refused locally (400 invalid_request_error, param "id").
  StripeResult<CheckoutSession> RetrieveCheckoutSession(const std::string& id) override;

  // POST /v1/checkout/sessions/{id}/expire with Idempotency-Key
  // "expire-{id}-{nonce}": one key for all retries of this call, a new one per
  // call. Expiring is idempotent by nature, and a per-session key reused across
  // calls would make Stripe replay a stored 5xx to every later expire of that
  // session for 24 h. Empty id: refused locally as for Retrieve.
  StripeResult<CheckoutSession> ExpireCheckoutSession(const std::string& id) override;

  // POST /v1/refunds payment_intent=… with the caller's idempotency key (the
  // same rules as for CreateCheckoutSession). An empty payment_intent is
  // refused locally (param "payment_intent").
  StripeResult<Refund> CreateRefund(const std::string& payment_intent,
                                    const std::string& idempotency_key) override;

  // GET /v1/checkout/sessions?created[gte]=…&limit=…[&starting_after=…].
  // A limit outside 1..100 is refused locally (param "limit").
  StripeResult<SessionPage> ListCheckoutSessions(const ListSessionsParams& p) override;

 private:
  struct Endpoint {
    bool tls = true;
    std::string host;  // without brackets for IPv6
    int port = 443;
  };
  struct Exchange;  // one HTTP attempt and what came back

  HttpsStripeClient(HttpsClientOptions options, Endpoint endpoint);

  // Runs one logical call with retries; on success *status and *body hold
  // the 2xx answer. Returns the error of the last attempt otherwise.
  std::optional<StripeError> Call(const char* method, const std::string& path,
                                  const std::string& form_body, const std::string& idempotency_key,
                                  int* status, std::string* body);
  // Call, then decodes the 2xx body as a T (stripe/responses.h).
  template <typename T>
  StripeResult<T> Send(const char* method, const std::string& path, const std::string& form_body,
                       const std::string& idempotency_key);
  Exchange SendOnce(std::chrono::milliseconds read_timeout, const char* method,
                    const std::string& path, const std::string& form_body,
                    const std::string& idempotency_key);
  std::unique_ptr<httplib::ClientImpl> TakeConnection();
  void ReturnConnection(std::unique_ptr<httplib::ClientImpl> connection);
  std::unique_ptr<httplib::ClientImpl> NewConnection() const;
  double NextUnitRandom();
  std::uint64_t NextNonce();

  const HttpsClientOptions options_;  // sleep is always set
  const Endpoint endpoint_;
  const std::string user_agent_;

  std::mutex mu_;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;  // guarded by mu_
  std::mt19937_64 rng_;                                     // guarded by mu_
};

}  // namespace paintlock::stripe
