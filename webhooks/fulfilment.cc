#include "webhooks/fulfilment.h"

#include "base/log.h"
#include "webhooks/offline_sale.h"
#include "webhooks/webhook_metrics.h"

namespace paintlock::webhooks {

using base::LogInfo;
using base::LogWarn;

namespace {

// What a failed statement means for the caller: retry later, or a bug.
FulfilmentFailure FailureOf(const locks::DbFailure& f) {
  return f.kind == locks::DbFailureKind::kInternal ? FulfilmentFailure::kInternal
                                                   : FulfilmentFailure::kDatabaseUnavailable;
}

}  // namespace

SessionFacts FactsOf(const stripe::CheckoutSession& s) {
  SessionFacts f;
  f.session_id = s.id;
  f.status = s.status;
  f.payment_status = s.payment_status;
  f.payment_intent = s.payment_intent;
  auto it = s.metadata.find("reservation_id");
  f.reservation_id = it != s.metadata.end() ? it->second : s.client_reference_id;
  f.offline = OfflineCartFrom(s.id, s.metadata);
  if (s.status == "complete") f.contact = ContactOf(s.buyer);
  return f;
}

locks::SaleContact ContactOf(const stripe::BuyerDetails& b) {
  const stripe::PostalAddress& a = b.shipping_address;
  return {b.name,  b.email, b.phone,       b.shipping_name, a.line1,
          a.line2, a.city,  a.postal_code, a.state,         a.country};
}

std::optional<locks::OfflineCart> OfflineCartFrom(
    const std::string& session_id, const std::map<std::string, std::string>& metadata) {
  std::string error;
  auto cart = OfflineCartOf(metadata, &error);
  if (!error.empty()) {
    // Only a bug of ours writes such metadata: nobody is refunded or sold to
    // until an operator reads this.
    base::LogError("offline_cart_unreadable", {{"session_id", session_id}, {"why", error}});
  }
  return cart;
}

FulfilmentOutcome Fulfilment::Apply(const SessionFacts& facts, const std::string& event_id,
                                    const std::string& event_type, const std::string& actor) {
  if (!facts.contact.empty()) {
    auto kept = contacts_.Keep(facts.session_id, facts.contact);
    if (auto* f = std::get_if<locks::DbFailure>(&kept)) {
      return FailureOf(*f);
    }
    // Only that it was kept: the details themselves are personal data.
    LogInfo("sale_contact_kept",
            {{"session_id", facts.session_id},
             {"shipping_address", !facts.contact.line1.empty() || !facts.contact.country.empty()},
             {"phone", !facts.contact.phone.empty()}});
  }
  auto applied = facts.offline ? sessions_.ApplyOffline(facts, event_id, event_type, actor)
                               : sessions_.Apply(facts, event_id, event_type, actor);
  if (auto* f = std::get_if<locks::DbFailure>(&applied)) return FailureOf(*f);
  const locks::SessionApplied& a = std::get<locks::SessionApplied>(applied);
  LogInfo("session_applied", {{"session_id", facts.session_id},
                              {"event_id", event_id},
                              {"event_type", event_type},
                              {"actor", actor},
                              {"outcome", a.outcome},
                              {"reservation_id", a.reservation_id},
                              {"offline", facts.offline.has_value()}});
  if (a.outcome == "sold_late") CountLatePayment(false);
  if (a.outcome != "refund_needed") return FulfilmentResult{a.outcome, a.reservation_id};

  // The buyer paid for paintings another buyer has. Refund through Stripe; the
  // key makes every retry of this decision the same single refund.
  if (a.payment_intent.empty()) {
    LogWarn("refund_without_payment_intent", {{"session_id", facts.session_id}});
    return FulfilmentFailure::kRefundPending;
  }
  auto refund = stripe_.CreateRefund(a.payment_intent, "refund-" + facts.session_id);
  if (const auto* err = stripe::ErrorOf(refund)) {
    LogWarn("refund_failed", {{"session_id", facts.session_id},
                              {"reservation_id", a.reservation_id},
                              {"stripe_status", err->http_status},
                              {"stripe_type", err->type},
                              {"stripe_message", err->message}});
    return FulfilmentFailure::kRefundPending;
  }
  const std::string refund_id = std::get<stripe::Refund>(refund).id;
  auto recorded = sessions_.RecordRefund(a.reservation_id, refund_id, actor);
  if (std::holds_alternative<locks::DbFailure>(recorded)) return FulfilmentFailure::kRefundPending;
  LogInfo("late_payment_refunded", {{"session_id", facts.session_id},
                                    {"reservation_id", a.reservation_id},
                                    {"refund_id", refund_id},
                                    {"recorded_now", std::get<bool>(recorded)}});
  if (std::get<bool>(recorded)) CountLatePayment(true);
  return FulfilmentResult{std::get<bool>(recorded) ? "refunded" : "already_refunded",
                          a.reservation_id};
}

namespace {

FulfilmentOutcome ChargeOutcome(const locks::DbResult<locks::ChargeApplied>& applied,
                                const std::string& event_id, const std::string& event_type,
                                const std::string& payment_intent) {
  if (const auto* f = std::get_if<locks::DbFailure>(&applied)) return FailureOf(*f);
  const auto& a = std::get<locks::ChargeApplied>(applied);
  const nlohmann::json fields = {{"event_id", event_id},
                                 {"event_type", event_type},
                                 {"payment_intent", payment_intent},
                                 {"outcome", a.outcome},
                                 {"reservation_id", a.reservation_id}};
  if (a.outcome == "unknown_payment_intent") {
    // Kept: a session completed later for this payment takes it into account.
    LogWarn("charge_event_unmatched", fields);
  } else {
    LogInfo("charge_event_applied", fields);
  }
  return FulfilmentResult{a.outcome, a.reservation_id};
}

// A refund or dispute of a payment Checkout did not make (no payment intent):
// acknowledged, so Stripe does not retry it for days.
FulfilmentOutcome Ignored(const std::string& event_id, const std::string& event_type,
                          const std::string& object_id) {
  LogInfo("charge_event_ignored", {{"event_id", event_id},
                                   {"event_type", event_type},
                                   {"object_id", object_id},
                                   {"why", "no payment intent: not a Checkout payment"}});
  return FulfilmentResult{"no_payment_intent", ""};
}

}  // namespace

FulfilmentOutcome Fulfilment::ApplyRefund(const locks::ChargeRefundFacts& charge,
                                          const std::string& event_id,
                                          const std::string& event_type) {
  if (charge.payment_intent.empty()) return Ignored(event_id, event_type, charge.charge_id);
  return ChargeOutcome(charges_.ApplyRefund(charge, event_id, event_type, "webhook"), event_id,
                       event_type, charge.payment_intent);
}

FulfilmentOutcome Fulfilment::ApplyDispute(const locks::DisputeFacts& dispute,
                                           const std::string& event_id,
                                           const std::string& event_type,
                                           std::int64_t event_created_unix) {
  if (dispute.payment_intent.empty()) return Ignored(event_id, event_type, dispute.dispute_id);
  return ChargeOutcome(
      charges_.ApplyDispute(dispute, event_id, event_type, event_created_unix, "webhook"), event_id,
      event_type, dispute.payment_intent);
}

}  // namespace paintlock::webhooks
