// POST /v1/webhooks/stripe: verify the Stripe-Signature over the raw body,
// decode the event once, and apply it: checkout events through the one
// fulfilment function, refunds and disputes of a payment to its sale,
// subscription events to the licences. 2xx only after
// the event is applied (or known); 400 for a bad signature or body; 5xx when
// Stripe should retry (the retry is safe: application is idempotent).
#include <ctime>

#include "base/log.h"
#include "gateway/http_errors.h"
#include "gateway/metrics_routes.h"
#include "gateway/quota_routes.h"
#include "gateway/routes.h"
#include "webhooks/event.h"
#include "webhooks/signature.h"

namespace paintlock::gateway {

namespace {

// Each step writes the answer and returns the outcome the metrics count: the
// fulfilment outcome, "ignored", or the error code answered.
std::string Refuse(const HttpError& error, httplib::Response& res) {
  WriteError(res, error);
  return error.code;
}

std::string ApplySubscription(QuotaServices& quotas, const webhooks::SubscriptionEvent& event,
                              httplib::Response& res) {
  auto applied = quotas.subscriptions.Apply(event);
  if (const auto* failure = std::get_if<webhooks::SubscriptionFailure>(&applied)) {
    if (*failure == webhooks::SubscriptionFailure::kNotConfigured) {
      base::LogWarn("subscription_not_applied",
                    {{"event_id", event.event_id},
                     {"why", "PAINTLOCK_LICENSE_SECRET is not set: licences cannot be derived"}});
    }
    return Refuse(ErrorFor(*failure), res);
  }
  const auto& a = std::get<webhooks::SubscriptionApplied>(applied);
  WriteJson(res, 200, {{"received", true}, {"handled", true}, {"outcome", a.outcome}});
  return a.outcome;
}

std::string Answer(const webhooks::FulfilmentOutcome& applied, httplib::Response& res) {
  if (const auto* failure = std::get_if<webhooks::FulfilmentFailure>(&applied)) {
    return Refuse(ErrorFor(*failure), res);
  }
  const auto& result = std::get<webhooks::FulfilmentResult>(applied);
  WriteJson(res, 200, {{"received", true}, {"handled", true}, {"outcome", result.outcome}});
  return result.outcome;
}

// Answers one delivery; returns what the metrics count. `type` stays
// "unverified" until the signature held (nothing in an unverified body is a label).
WebhookTally StripeWebhook(const Api& api, const httplib::Request& req, httplib::Response& res) {
  const auto check = webhooks::VerifySignature(
      req.get_header_value("Stripe-Signature"), req.body, api.config.stripe_webhook_secrets,
      static_cast<std::int64_t>(std::time(nullptr)), api.config.webhook_tolerance.count());
  if (check != webhooks::SignatureCheck::kValid) {
    base::LogWarn("webhook_rejected", {{"reason", webhooks::ToString(check)}});
    return {"unverified", Refuse(ErrorFor(check), res)};
  }
  std::string problem;
  auto event = webhooks::DecodeEvent(req.body, &problem);
  if (!event) {
    base::LogWarn("webhook_malformed", {{"error", problem}});
    return {"unverified", Refuse(MalformedEvent(problem), res)};
  }
  if (event->subscription && api.services.quotas) {
    return {event->type, ApplySubscription(*api.services.quotas, *event->subscription, res)};
  }
  if (event->refund || event->dispute) {
    auto applied = event->refund
                       ? api.services.fulfilment.ApplyRefund(*event->refund, event->id, event->type)
                       : api.services.fulfilment.ApplyDispute(*event->dispute, event->id,
                                                              event->type, event->created);
    return {event->type, Answer(applied, res)};
  }
  if (!webhooks::IsHandledType(event->type)) {
    base::LogInfo("webhook_ignored", {{"event_id", event->id}, {"event_type", event->type}});
    WriteJson(res, 200, {{"received", true}, {"handled", false}});
    return {event->type, "ignored"};
  }
  return {event->type,
          Answer(api.services.fulfilment.Apply(event->session, event->id, event->type, "webhook"),
                 res)};
}

}  // namespace

void InstallWebhookRoutes(httplib::Server& server, const Api& api) {
  server.Post("/v1/webhooks/stripe",
              [&api](const auto& req, auto& res) { CountWebhook(StripeWebhook(api, req, res)); });
}

}  // namespace paintlock::gateway
