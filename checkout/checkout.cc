#include "checkout/checkout.h"

#include <ctime>
#include <optional>
#include <set>

#include "base/log.h"
#include "checkout/reservation_metrics.h"
#include "webhooks/offline_sale.h"

namespace paintlock::checkout {

namespace {

// A cart can be taken over at most this many times in one request (each
// take-over frees a painting someone else may grab before our next try).
constexpr int kReserveAttempts = 3;

// One Checkout Session has one currency: a cart priced in several is refused.
std::optional<MixedCurrency> MixedCurrencyOf(const std::vector<locks::CatalogueEntry>& entries) {
  std::set<std::string> currencies;
  for (const auto& e : entries) currencies.insert(e.currency);
  if (currencies.size() <= 1) return std::nullopt;
  return MixedCurrency{{currencies.begin(), currencies.end()}};
}

StripeFailed FailureOf(const stripe::StripeError& e) {
  return StripeFailed{e.Unavailable(), e.type, e.message};
}

}  // namespace

CheckoutOutcome Checkout::Start(const std::vector<std::string>& cart,
                                const std::optional<std::string>& line_token,
                                const std::function<bool()>& still_wanted) {
  auto entries_or = catalogue_.ForCart(cart);
  if (auto* f = std::get_if<locks::DbFailure>(&entries_or)) return StartOffline(cart, *f);
  const auto& entries = std::get<std::vector<locks::CatalogueEntry>>(entries_or);
  if (entries.size() != cart.size()) {
    std::set<std::string> known;
    for (const auto& e : entries) known.insert(e.id);
    for (const auto& id : cart) {
      if (!known.count(id)) return locks::Unknown{id};
    }
  }
  if (auto mixed = MixedCurrencyOf(entries)) return *mixed;

  bool unreachable = false;
  ReserveResult reserved = Reserve(cart, std::nullopt, line_token, &unreachable);
  if (unreachable) return StartOffline(cart, std::get<locks::DbFailure>(reserved));
  if (!std::holds_alternative<locks::Granted>(reserved)) {
    return Narrow<CheckoutOutcome>(reserved);
  }
  const locks::Granted granted = std::get<locks::Granted>(reserved);
  base::LogInfo("reservation_granted", {{"reservation_id", granted.reservation_id},
                                        {"paintings", cart},
                                        {"held_until", granted.held_until}});
  // No session exists yet, so nothing can be paid: the paintings go back now
  // rather than wait out the hold for a buyer who is not there.
  if (LetGoIfLeft(granted, still_wanted, "checkout_client_gone")) return BuyerLeft{};

  const stripe::CreateSessionParams params = SessionParams(granted.reservation_id, entries);
  auto created = stripe_.CreateCheckoutSession(params);
  if (const auto* err = stripe::ErrorOf(created)) {
    base::LogWarn("stripe_session_failed", {{"reservation_id", granted.reservation_id},
                                            {"stripe_status", err->http_status},
                                            {"stripe_type", err->type},
                                            {"stripe_message", err->message}});
    // No session exists (or Stripe cannot say): the release service frees the
    // paintings now; a session Stripe made anyway is a late payment later.
    auto released = release_.Undo(granted.reservation_id,
                                  err->Unavailable() ? "stripe_unavailable" : "stripe_error");
    if (const auto* f = std::get_if<locks::DbFailure>(&released)) {
      // The hold stays until it lapses by itself, so the Stripe error's "nothing was
      // reserved" would be a lie: the answer says a hold may remain.
      base::LogWarn("release_after_stripe_failure_failed",
                    {{"reservation_id", granted.reservation_id}});
      return locks::DbFailure{locks::DbFailureKind::kUnavailable, f->detail, true};
    }
    return FailureOf(*err);
  }
  const stripe::CheckoutSession& session = std::get<stripe::CheckoutSession>(created);

  auto attached = reservations_.AttachSession(
      granted.reservation_id, session.id,
      session.expires_at_unix ? session.expires_at_unix : params.expires_at_unix);
  if (auto* f = std::get_if<locks::DbFailure>(&attached)) {
    return AfterFailedAttach(granted, session, *f);
  }
  if (!std::get<bool>(attached)) {
    base::LogWarn("reservation_lost_during_stripe_call",
                  {{"reservation_id", granted.reservation_id}, {"session_id", session.id}});
    auto expired = stripe_.ExpireCheckoutSession(session.id);
    if (stripe::ErrorOf(expired)) {
      base::LogWarn("expire_after_lost_reservation_failed", {{"session_id", session.id}});
    }
    return WhatIsInTheWay(cart);
  }
  base::LogInfo("checkout_started",
                {{"reservation_id", granted.reservation_id}, {"session_id", session.id}});
  return CheckoutStarted{granted.reservation_id, session.url, granted.held_until};
}

stripe::CreateSessionParams Checkout::SessionParams(
    const std::string& reservation_id, const std::vector<locks::CatalogueEntry>& entries) const {
  stripe::CreateSessionParams params;
  params.idempotency_key = reservation_id;
  for (const auto& e : entries) {
    params.line_items.push_back({e.title, e.price_minor, e.currency, e.image_url, e.description});
  }
  params.success_url = settings_.success_url;
  params.cancel_url = settings_.cancel_url;
  params.expires_at_unix =
      static_cast<std::int64_t>(std::time(nullptr)) + settings_.session_ttl.count();
  params.client_reference_id = reservation_id;
  params.metadata["reservation_id"] = reservation_id;
  params.collection = settings_.collection;
  return params;
}

CheckoutOutcome Checkout::StartOffline(const std::vector<std::string>& cart,
                                       const locks::DbFailure& failure) {
  if (settings_.snapshot == nullptr || failure.kind != locks::DbFailureKind::kUnavailable ||
      failure.may_have_committed) {
    return failure;
  }
  SnapshotPricing priced = settings_.snapshot->ForCart(cart, CatalogueSnapshot::Clock::now());
  if (std::holds_alternative<SnapshotEmpty>(priced)) {
    base::LogWarn("offline_checkout_refused",
                  {{"why", "the gateway has not read the catalogue since it started"}});
    return failure;
  }
  if (!std::holds_alternative<std::vector<locks::CatalogueEntry>>(priced)) {
    return Narrow<CheckoutOutcome>(priced);
  }
  const auto& entries = std::get<std::vector<locks::CatalogueEntry>>(priced);
  if (auto mixed = MixedCurrencyOf(entries)) return *mixed;
  const std::optional<std::string> id = locks::NewReservationId();
  if (!id) return locks::DbFailure{locks::DbFailureKind::kInternal, "no random id"};

  stripe::CreateSessionParams params = SessionParams(*id, entries);
  webhooks::PutOfflineCart(entries, &params.metadata);
  auto created = stripe_.CreateCheckoutSession(params);
  if (const auto* err = stripe::ErrorOf(created)) {
    base::LogWarn("offline_checkout_failed", {{"reservation_id", *id},
                                              {"stripe_status", err->http_status},
                                              {"stripe_type", err->type},
                                              {"stripe_message", err->message}});
    return FailureOf(*err);
  }
  const stripe::CheckoutSession& session = std::get<stripe::CheckoutSession>(created);
  const std::int64_t expires =
      session.expires_at_unix ? session.expires_at_unix : params.expires_at_unix;
  settings_.snapshot->HoldOffline(cart, CatalogueSnapshot::Clock::from_time_t(expires));
  std::int64_t amount = 0;
  for (const auto& e : entries) amount += e.price_minor;
  const std::int64_t count = ++offline_checkouts_;
  base::LogWarn("offline_checkout_created", {{"reservation_id", *id},
                                             {"session_id", session.id},
                                             {"paintings", cart},
                                             {"amount_minor", amount},
                                             {"currency", entries.front().currency},
                                             {"database_failure", failure.detail},
                                             {"offline_checkouts", count}});
  return CheckoutStarted{*id, session.url, "", true};
}

CheckoutOutcome Checkout::AfterFailedAttach(const locks::Granted& granted,
                                            const stripe::CheckoutSession& session,
                                            const locks::DbFailure& failure) {
  // The hold is committed; whether the session is attached, only the
  // database can say (once a failover has found it a primary).
  auto found = reservations_.LookUp(granted.reservation_id);
  if (const auto* view = std::get_if<std::optional<locks::ReservationView>>(&found)) {
    if (*view && (*view)->stripe_session_id == session.id && (*view)->state == "held" &&
        (*view)->holds) {
      base::LogInfo("checkout_started", {{"reservation_id", granted.reservation_id},
                                         {"session_id", session.id},
                                         {"attach", "confirmed after a database failure"}});
      return CheckoutStarted{granted.reservation_id, session.url, granted.held_until};
    }
  }
  // Not started. Undo the hold so the answer "nothing was reserved" is true;
  // if that cannot be done either, the answer says a hold may remain.
  auto released = release_.Release(granted.reservation_id, "database_unavailable");
  if (released && std::holds_alternative<Released>(*released)) {
    if (stripe::ErrorOf(stripe_.ExpireCheckoutSession(session.id))) {
      base::LogWarn("expire_after_failed_attach_failed", {{"session_id", session.id}});
    }
    return locks::DbFailure{locks::DbFailureKind::kUnavailable, failure.detail};
  }
  // The session stays open: its webhooks name the reservation in metadata.
  base::LogWarn("checkout_interrupted",
                {{"reservation_id", granted.reservation_id}, {"session_id", session.id}});
  return locks::DbFailure{locks::DbFailureKind::kUnavailable, failure.detail, true};
}

bool Checkout::LetGoIfLeft(const locks::Granted& granted, const std::function<bool()>& still_wanted,
                           const char* event) {
  if (!still_wanted || still_wanted()) return false;
  const auto released = release_.Undo(granted.reservation_id, "client_gone");
  base::LogInfo(event,
                {{"reservation_id", granted.reservation_id},
                 {"released", std::holds_alternative<bool>(released) && std::get<bool>(released)}});
  return true;
}

Checkout::ReserveResult Checkout::Reserve(const std::vector<std::string>& cart,
                                          const std::optional<std::string>& buyer_ref,
                                          const std::optional<std::string>& line_token,
                                          bool* unreachable) {
  for (int attempt = 1;; ++attempt) {
    locks::ReserveOutcome outcome = reservations_.Reserve(cart, buyer_ref, line_token);
    if (const auto* f = std::get_if<locks::DbFailure>(&outcome); f && unreachable) {
      *unreachable = f->kind == locks::DbFailureKind::kUnavailable && !f->may_have_committed;
    }
    if (auto* takeover = std::get_if<locks::TakeOverNeeded>(&outcome)) {
      if (attempt == kReserveAttempts) {
        return CountReservation(
            locks::DbFailure{locks::DbFailureKind::kContended, "take-over raced"});
      }
      for (const auto& lapsed : takeover->sessions) {
        if (auto stop = TakeOver(lapsed)) {
          return CountReservation(Narrow<ReserveResult>(*stop));
        }
      }
      continue;
    }
    return CountReservation(Narrow<ReserveResult>(outcome));
  }
}

std::optional<CheckoutOutcome> Checkout::TakeOver(const locks::LapsedSession& lapsed) {
  base::LogInfo("take_over_attempt", {{"painting", lapsed.painting},
                                      {"reservation_id", lapsed.reservation_id},
                                      {"session_id", lapsed.session_id}});
  auto expired = stripe_.ExpireCheckoutSession(lapsed.session_id);
  stripe::CheckoutSession session;
  if (const auto* err = stripe::ErrorOf(expired)) {
    if (err->Unavailable()) {
      return TakeOverRefused(lapsed, *err);
    }
    // Stripe refused to expire it: it is no longer open. Ask what it is.
    auto retrieved = stripe_.RetrieveCheckoutSession(lapsed.session_id);
    if (const auto* rerr = stripe::ErrorOf(retrieved)) return TakeOverRefused(lapsed, *rerr);
    session = std::get<stripe::CheckoutSession>(retrieved);
  } else {
    session = std::get<stripe::CheckoutSession>(expired);
  }
  webhooks::SessionFacts facts = webhooks::FactsOf(session);
  if (facts.reservation_id.empty()) facts.reservation_id = lapsed.reservation_id;
  auto applied = fulfilment_.Apply(facts, "", "session.retrieved", "take_over");
  if (auto* failure = std::get_if<webhooks::FulfilmentFailure>(&applied)) {
    return locks::DbFailure{*failure == webhooks::FulfilmentFailure::kInternal
                                ? locks::DbFailureKind::kInternal
                                : locks::DbFailureKind::kUnavailable,
                            "take-over could not record Stripe's answer"};
  }
  const auto& result = std::get<webhooks::FulfilmentResult>(applied);
  base::LogInfo("take_over_decided", {{"painting", lapsed.painting},
                                      {"reservation_id", lapsed.reservation_id},
                                      {"session_id", lapsed.session_id},
                                      {"stripe_status", session.status},
                                      {"payment_status", session.payment_status},
                                      {"outcome", result.outcome}});
  if (session.status == "expired" || session.status == "open") return std::nullopt;
  // Complete: sold to the first buyer, or still settling a delayed payment.
  return WhatIsInTheWay({lapsed.painting});
}

CheckoutOutcome Checkout::TakeOverRefused(const locks::LapsedSession& lapsed,
                                          const stripe::StripeError& error) {
  base::LogWarn("take_over_refused", {{"painting", lapsed.painting},
                                      {"reservation_id", lapsed.reservation_id},
                                      {"session_id", lapsed.session_id},
                                      {"stripe_status", error.http_status},
                                      {"stripe_type", error.type}});
  locks::AuditEntry entry;
  entry.actor = "take_over";
  entry.action = "take_over_refused";
  entry.reservation_id = lapsed.reservation_id;
  entry.painting_id = lapsed.painting;
  entry.session_id = lapsed.session_id;
  entry.reason =
      "Stripe could not confirm the lapsed session is closed; nobody gets the painting yet";
  entry.details = {{"stripe_status", error.http_status},
                   {"stripe_type", error.type},
                   {"stripe_message", error.message}};
  // The refusal is still the right answer without its audit entry; a lost
  // entry is an operator's problem to see, so it is logged as an error.
  const auto recorded = audit_.Record(entry);
  if (const auto* f = std::get_if<locks::DbFailure>(&recorded)) {
    base::LogError("audit_write_failed", {{"action", entry.action},
                                          {"reservation_id", lapsed.reservation_id},
                                          {"error", f->detail}});
  }
  return StripeFailed{true, error.type, error.message};
}

CheckoutOutcome Checkout::WhatIsInTheWay(const std::vector<std::string>& cart) {
  for (const auto& id : cart) {
    auto view = catalogue_.Get(id);
    if (auto* f = std::get_if<locks::DbFailure>(&view)) return *f;
    const auto& v = std::get<std::optional<locks::PaintingView>>(view);
    if (!v) return locks::Unknown{id};
    if (v->state == "sold") return locks::Sold{id};
    if (v->state == "withdrawn") return locks::Withdrawn{id};
    if (v->state == "reserved") return locks::Busy{id, v->free_at, v->retry_after_seconds};
  }
  // Nothing visible stands in the way any more: ask the buyer to try again.
  return locks::DbFailure{locks::DbFailureKind::kContended, "cart changed while reserving"};
}

}  // namespace paintlock::checkout
