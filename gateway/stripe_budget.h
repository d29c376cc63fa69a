// A bound on the requests waiting on Stripe at once.
//
// A Stripe that hangs holds each request that calls it for up to the
// client's deadline (STRIPE_DEADLINE_MS). Without a bound, enough such
// requests take every HTTP worker and starve requests that never touch
// Stripe. StripeBudget lets at most `max_waiting` calls be in flight; a call
// beyond that fails at once with a connection_error, which the callers
// already answer as 503 stripe_unavailable with Retry-After (checkout and
// take-over release what they reserved first; a webhook is retried by Stripe).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>

#include "stripe/client.h"

namespace paintlock::gateway {

class StripeBudget : public stripe::StripeClient {
 public:
  StripeBudget(stripe::StripeClient& inner, int max_waiting)
      : inner_(inner), max_waiting_(max_waiting) {}

  stripe::StripeResult<stripe::CheckoutSession> CreateCheckoutSession(
      const stripe::CreateSessionParams& p) override;
  stripe::StripeResult<stripe::CheckoutSession> RetrieveCheckoutSession(
      const std::string& id) override;
  stripe::StripeResult<stripe::CheckoutSession> ExpireCheckoutSession(
      const std::string& id) override;
  stripe::StripeResult<stripe::Refund> CreateRefund(const std::string& payment_intent,
                                                    const std::string& idempotency_key) override;
  stripe::StripeResult<stripe::SessionPage> ListCheckoutSessions(
      const stripe::ListSessionsParams& p) override;

  int waiting() const { return waiting_.load(); }

 private:
  template <class T, class Call>
  stripe::StripeResult<T> Within(const char* what, Call call);

  stripe::StripeClient& inner_;
  const int max_waiting_;
  std::atomic<int> waiting_{0};
  std::atomic<std::int64_t> last_refusal_log_ms_{0};
};

}  // namespace paintlock::gateway
