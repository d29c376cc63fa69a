#include "checkout/release.h"

#include "locks/operator_queries.h"
#include "locks/reservations.h"

namespace paintlock::checkout {

namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// Step 3: the fenced release, and what its answer means.
ReleaseOutcome ReleaseInDatabase(const ReleaseSubject& s, const std::string& reason, bool forced,
                                 const std::string& stripe_status, locks::Database& db,
                                 const std::string& actor) {
  const std::optional<std::string> status =
      stripe_status.empty() ? std::nullopt : std::optional<std::string>(stripe_status);
  auto answer = locks::OperatorQueries(db).ReleaseFenced(s, reason, actor, forced, status);
  if (auto* f = std::get_if<locks::DbFailure>(&answer)) return *f;
  const auto& a = std::get<locks::FencedReleaseAnswer>(answer);
  if (a.outcome == "released") return Released{forced, stripe_status};
  if (a.outcome == "not_found") return ChangedMeanwhile{"deleted"};
  if (a.state_now == "released" || a.state_now == "refunded") {
    return AlreadyOver{a.state_now, "it ended while we released it"};
  }
  if (a.state_now == "sold" || a.state_now == "awaiting_payment" ||
      a.state_now == "refund_pending") {
    return PaidRefused{a.state_now, ""};
  }
  return ChangedMeanwhile{a.state_now};
}

// What Stripe said of a session that would not expire (or of a delayed
// payment): apply it like a webhook would, then decide.
ReleaseOutcome Settle(const ReleaseSubject& s, const stripe::CheckoutSession& session,
                      const std::string& reason, locks::Database& db,
                      webhooks::Fulfilment& fulfilment, const std::string& actor) {
  if (session.status == "expired") return ReleaseInDatabase(s, reason, false, "expired", db, actor);
  if (session.status != "complete") {
    return StripeRefused{"Stripe would not expire session " + s.session_id +
                         ", which it reports as " + session.status};
  }
  webhooks::SessionFacts facts = webhooks::FactsOf(session);
  if (facts.reservation_id.empty()) facts.reservation_id = s.reservation_id;
  auto applied = fulfilment.Apply(facts, "", "session.retrieved", actor);
  if (auto* failure = std::get_if<webhooks::FulfilmentFailure>(&applied)) {
    switch (*failure) {
      case webhooks::FulfilmentFailure::kRefundPending:
        return PaidRefused{"refund_pending", "refund_needed"};
      case webhooks::FulfilmentFailure::kDatabaseUnavailable:
        return locks::DbFailure{locks::DbFailureKind::kUnavailable,
                                "could not record what Stripe said of the session"};
      case webhooks::FulfilmentFailure::kInternal:
        break;
    }
    return locks::DbFailure{locks::DbFailureKind::kInternal,
                            "could not record what Stripe said of the session"};
  }
  const std::string outcome = std::get<webhooks::FulfilmentResult>(applied).outcome;
  if (outcome == "refunded" || outcome == "already_refunded") {
    return AlreadyOver{"refunded",
                       "the buyer paid after another buyer took a painting, and was refunded"};
  }
  if (outcome == "released") return AlreadyOver{"released", "the delayed payment failed"};
  // The buyer completed checkout: paid (sold) or paying by a delayed method.
  auto state = locks::OperatorQueries(db).ReservationState(s.reservation_id);
  if (auto* f = std::get_if<locks::DbFailure>(&state)) return *f;
  return PaidRefused{std::get<std::optional<std::string>>(state).value_or("deleted"), outcome};
}

}  // namespace

ReleasePlan PlanRelease(const ReleaseSubject& s, bool force) {
  if (s.state == "released" || s.state == "refunded") return NothingToRelease{};
  if (s.state == "sold") return RefuseSold{};
  if (s.state == "refund_pending") return RefuseRefundOwed{};
  if (force) return ReleaseNow{true};
  if (s.state == "awaiting_payment") return AskStripeFirst{};
  if (s.session_id.empty()) return ReleaseNow{false};
  return ExpireSessionFirst{};
}

bool PlanNeedsStripe(const ReleasePlan& plan) {
  return std::holds_alternative<ExpireSessionFirst>(plan) ||
         std::holds_alternative<AskStripeFirst>(plan);
}

std::string DescribePlan(const ReleasePlan& plan, const ReleaseSubject& s,
                         const stripe::CheckoutSession* seen) {
  const std::string paintings = Join(s.paintings);
  if (std::holds_alternative<NothingToRelease>(plan)) {
    return "nothing to release: it is " + s.state + " already";
  }
  if (std::holds_alternative<RefuseSold>(plan)) {
    return "would refuse: " + paintings +
           " sold to it (after a refund made elsewhere, use "
           "`paintlockctl unsold PAINTING`)";
  }
  if (std::holds_alternative<RefuseRefundOwed>(plan)) {
    return "would refuse: its buyer is owed a refund (run `paintlockctl reconcile`)";
  }
  if (const auto* now = std::get_if<ReleaseNow>(&plan)) {
    if (now->forced && !s.session_id.empty()) {
      return "would release " + paintings + " without asking Stripe (--force); session " +
             s.session_id + " may still be paid, and a late payment is then accepted or refunded";
    }
    return "would release " + paintings +
           (now->forced ? " (--force)" : " (it has no Stripe session)");
  }
  const std::string first = std::holds_alternative<ExpireSessionFirst>(plan)
                                ? "would expire Stripe session " + s.session_id + " first"
                                : "would retrieve Stripe session " + s.session_id + " first";
  if (seen == nullptr) return first + ", then decide (Stripe not asked)";
  if (seen->status == "open")
    return "Stripe says the session is open: " + first + ", then release " + paintings;
  if (seen->status == "expired")
    return "Stripe says the session is expired: would release " + paintings;
  if (seen->payment_status == "unpaid") {
    return "Stripe says the session is complete and a delayed payment is settling: would record "
           "that and refuse";
  }
  return "Stripe says the session is complete and paid: would record the sale of " + paintings +
         " and refuse";
}

locks::DbResult<std::optional<ReleaseSubject>> ReleaseService::Load(
    const std::string& reservation_id) {
  if (!locks::LooksLikeUuid(reservation_id)) return std::optional<ReleaseSubject>{};
  return locks::OperatorQueries(db_).Fenced(reservation_id);
}

locks::DbResult<bool> ReleaseService::Undo(const std::string& reservation_id,
                                           const std::string& reason_code) {
  locks::ReservationStore store(db_, std::chrono::seconds(0));
  auto released = store.Release(reservation_id, reason_code, actor_);
  if (auto* f = std::get_if<locks::DbFailure>(&released)) return *f;
  return std::get<locks::ReleaseOutcome>(released).result == locks::ReleaseResult::kReleased;
}

std::optional<ReleaseOutcome> ReleaseService::Release(const std::string& reservation_id,
                                                      const std::string& reason, bool force) {
  auto loaded = Load(reservation_id);
  if (auto* f = std::get_if<locks::DbFailure>(&loaded)) return ReleaseOutcome{*f};
  const auto& subject = std::get<std::optional<ReleaseSubject>>(loaded);
  if (!subject) return std::nullopt;
  return CarryOut(*subject, PlanRelease(*subject, force), reason);
}

ReleaseOutcome ReleaseService::CarryOut(const ReleaseSubject& s, const ReleasePlan& plan,
                                        const std::string& reason) {
  locks::Database& db = db_;
  const std::string& actor = actor_;
  if (PlanNeedsStripe(plan) && (stripe_ == nullptr || fulfilment_ == nullptr)) {
    return StripeUnreachable{"this caller cannot ask Stripe"};
  }
  if (std::holds_alternative<NothingToRelease>(plan))
    return AlreadyOver{s.state, s.released_reason};
  if (std::holds_alternative<RefuseSold>(plan)) return PaidRefused{"sold", ""};
  if (std::holds_alternative<RefuseRefundOwed>(plan)) return PaidRefused{"refund_pending", ""};
  if (const auto* now = std::get_if<ReleaseNow>(&plan)) {
    return ReleaseInDatabase(s, reason, now->forced, "", db, actor);
  }
  if (std::holds_alternative<ExpireSessionFirst>(plan)) {
    auto expired = stripe_->ExpireCheckoutSession(s.session_id);
    if (!stripe::ErrorOf(expired)) {
      return ReleaseInDatabase(s, reason, false, std::get<stripe::CheckoutSession>(expired).status,
                               db, actor);
    }
    const stripe::StripeError& err = *stripe::ErrorOf(expired);
    if (err.Unavailable()) return StripeUnreachable{err.message.empty() ? err.type : err.message};
    // Stripe refused to expire it: it is no longer open. Decide by what it
    // is, never by the refusal's text (STRIPE.md).
  }
  auto retrieved = stripe_->RetrieveCheckoutSession(s.session_id);
  if (const auto* err = stripe::ErrorOf(retrieved)) {
    if (err->Unavailable())
      return StripeUnreachable{err->message.empty() ? err->type : err->message};
    return StripeRefused{"Stripe answered " + std::to_string(err->http_status) + " " + err->type +
                         ": " + err->message};
  }
  return Settle(s, std::get<stripe::CheckoutSession>(retrieved), reason, db, *fulfilment_, actor);
}

}  // namespace paintlock::checkout
