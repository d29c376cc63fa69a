// Webhook event JSON → typed event (webhooks/event.h, webhooks/subscriptions.h),
// run on the raw body as the gateway does after the signature check.
// Properties: no exception escapes; an event is returned exactly when no
// error is given; a returned event has an id and a type; a handled checkout
// event carries a session id; a subscription event carries its ids and status.
#include <string>

#include "fuzz/fuzz_support.h"
#include "webhooks/event.h"
#include "webhooks/subscriptions.h"

using namespace paintlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(fuzz::AsText(data, size));

  std::string error;
  const auto event = webhooks::DecodeEvent(body, &error);
  if (event) {
    FUZZ_CHECK(error.empty());
    FUZZ_CHECK(!event->id.empty() && !event->type.empty());
    FUZZ_CHECK(fuzz::Describable(event->id) && fuzz::Describable(event->type));
    if (webhooks::IsHandledType(event->type)) {
      FUZZ_CHECK(event->is_checkout_session && !event->session.session_id.empty());
    }
  } else {
    FUZZ_CHECK(!error.empty() && fuzz::Describable(error));
  }

  std::string problem;
  const auto subscription = webhooks::DecodeSubscriptionEvent(body, &problem);
  if (subscription) {
    FUZZ_CHECK(!subscription->event_id.empty());
    FUZZ_CHECK(webhooks::IsSubscriptionEventType(subscription->event_type));
    FUZZ_CHECK(!subscription->subscription_id.empty() && !subscription->customer_id.empty() &&
               !subscription->status.empty());
  } else {
    FUZZ_CHECK(!problem.empty() && fuzz::Describable(problem));
  }
  return 0;
}
