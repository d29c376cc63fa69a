#include "gateway/stripe_budget.h"

#include "base/log.h"

namespace paintlock::gateway {

template <class T, class Call>
stripe::StripeResult<T> StripeBudget::Within(const char* what, Call call) {
  int now_waiting = waiting_.load();
  do {
    if (now_waiting >= max_waiting_) {
      // At most one line a second: a hung Stripe must not become a log flood.
      const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count();
      std::int64_t last = last_refusal_log_ms_.load();
      if (now_ms - last >= 1000 && last_refusal_log_ms_.compare_exchange_strong(last, now_ms)) {
        base::LogWarn("stripe_budget_full", {{"call", what}, {"max_waiting", max_waiting_}});
      }
      stripe::StripeError e;
      e.http_status = 0;
      e.type = "connection_error";
      e.message = "too many requests are waiting on Stripe already (PAINTLOCK_STRIPE_MAX_WAITING)";
      return e;
    }
  } while (!waiting_.compare_exchange_weak(now_waiting, now_waiting + 1));
  struct Release {
    std::atomic<int>& n;
    ~Release() { --n; }
  } release{waiting_};
  return call();
}

stripe::StripeResult<stripe::CheckoutSession> StripeBudget::CreateCheckoutSession(
    const stripe::CreateSessionParams& p) {
  return Within<stripe::CheckoutSession>("create_session",
                                         [&] { return inner_.CreateCheckoutSession(p); });
}

stripe::StripeResult<stripe::CheckoutSession> StripeBudget::RetrieveCheckoutSession(
    const std::string& id) {
  return Within<stripe::CheckoutSession>("retrieve_session",
                                         [&] { return inner_.RetrieveCheckoutSession(id); });
}

stripe::StripeResult<stripe::CheckoutSession> StripeBudget::ExpireCheckoutSession(
    const std::string& id) {
  return Within<stripe::CheckoutSession>("expire_session",
                                         [&] { return inner_.ExpireCheckoutSession(id); });
}

stripe::StripeResult<stripe::Refund> StripeBudget::CreateRefund(
    const std::string& payment_intent, const std::string& idempotency_key) {
  return Within<stripe::Refund>(
      "create_refund", [&] { return inner_.CreateRefund(payment_intent, idempotency_key); });
}

stripe::StripeResult<stripe::SessionPage> StripeBudget::ListCheckoutSessions(
    const stripe::ListSessionsParams& p) {
  return Within<stripe::SessionPage>("list_sessions",
                                     [&] { return inner_.ListCheckoutSessions(p); });
}

}  // namespace paintlock::gateway
