// paintlockctl release: see checkout/release.h for the order of things and why.
#include "admin/commands.h"
#include "checkout/release.h"
#include "locks/reservations.h"

namespace paintlock::admin {

namespace {

// The release service's vocabulary (checkout/release.h).
using namespace paintlock::checkout;  // NOLINT(google-build-using-namespace)

constexpr const char* kReleaseUsage =
    R"(Usage: paintlockctl release RESERVATION --reason TEXT [--dry-run] [--force] [--json]

Frees a reservation's paintings. First it expires the reservation's Stripe
Checkout Session, so the buyer can no longer pay. If Stripe says the buyer
already paid, the sale is recorded (as a webhook would) and the release is
refused: the painting is sold. If a delayed payment is settling, or a refund is
owed, it is refused too. Only then is the reservation released, and only if
nothing changed since it was read (a webhook that sells at the same moment
wins). The reason is recorded in the audit log.

Options:
  --reason TEXT   why (required; recorded in the audit log)
  --dry-run       say what would happen and change nothing (may ask Stripe)
  --force         do not ask Stripe: for when Stripe is unreachable. The session
                  may still be paid; a late payment is then accepted if the
                  paintings are still free, and refunded otherwise. Also releases
                  a reservation whose delayed payment is settling.

Exit codes: 0 released (or nothing left to release), 1 refused or failed,
2 bad usage.

Examples:
  paintlockctl release 0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e --reason "buyer asked by phone"
  paintlockctl release 0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e --reason "Stripe outage" --force
  paintlockctl release 0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e --reason test --dry-run --json
)";

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

nlohmann::json Report(const ReleaseSubject& s, const std::string& outcome,
                      const std::string& message) {
  return {{"reservation_id", s.reservation_id},
          {"outcome", outcome},
          {"message", message},
          {"paintings", s.paintings},
          {"session_id", s.session_id.empty() ? nlohmann::json() : nlohmann::json(s.session_id)}};
}

int DryRun(CommandContext& ctx, const ReleaseSubject& s, const ReleasePlan& plan) {
  std::optional<stripe::CheckoutSession> seen;
  std::string not_asked;
  if (PlanNeedsStripe(plan)) {
    std::string error;
    if (stripe::StripeClient* stripe = ctx.env().Stripe(&error)) {
      // A retrieve changes nothing, at Stripe or here.
      auto retrieved = stripe->RetrieveCheckoutSession(s.session_id);
      if (const auto* err = stripe::ErrorOf(retrieved)) {
        not_asked = "Stripe: " + (err->message.empty() ? err->type : err->message);
      } else {
        seen = std::get<stripe::CheckoutSession>(retrieved);
      }
    } else {
      not_asked = error;
    }
  }
  const std::string plan_text = DescribePlan(plan, s, seen ? &*seen : nullptr);
  if (ctx.json()) {
    nlohmann::json report = Report(s, "dry_run", plan_text);
    report["state"] = s.state;
    report["dry_run"] = true;
    report["stripe_status"] = seen ? nlohmann::json(seen->status) : nlohmann::json();
    if (!not_asked.empty()) report["stripe_not_asked"] = not_asked;
    ctx.PrintJson(report);
  } else {
    ctx.out() << "dry run: " << s.reservation_id << " (" << s.state << ", " << Join(s.paintings)
              << "): " << plan_text << "\n";
    if (!not_asked.empty()) ctx.out() << "  (Stripe not asked: " << not_asked << ")\n";
    ctx.out() << "nothing was changed\n";
  }
  return kExitOk;
}

int Release(CommandContext& ctx) {
  const std::string& id = ctx.arg(0);
  if (!locks::LooksLikeUuid(id)) {
    return ctx.BadUsage(
        "RESERVATION must be a reservation id (a UUID); `paintlockctl holds` lists them");
  }
  const auto reason = ctx.args().Value("reason");
  if (!reason) return ctx.BadUsage("--reason is required: say why, e.g. --reason \"buyer asked\"");
  if (reason->find_first_not_of(" \t") == std::string::npos)
    return ctx.BadUsage("--reason must not be blank");
  const bool force = ctx.args().Has("force");

  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  // Without Stripe until the plan needs it: --dry-run and --force need no key.
  checkout::ReleaseService without_stripe(*db, nullptr, nullptr, "paintlockctl");
  auto subject_or = without_stripe.Load(id);
  if (auto* f = std::get_if<locks::DbFailure>(&subject_or)) return ctx.FailDatabase(*f, "release");
  const auto& found = std::get<std::optional<ReleaseSubject>>(subject_or);
  if (!found) return ctx.Fail("no reservation " + id + "; `paintlockctl holds` lists the holds");
  const ReleaseSubject& s = *found;
  const ReleasePlan plan = PlanRelease(s, force);
  if (ctx.args().Has("dry-run")) return DryRun(ctx, s, plan);

  stripe::StripeClient* stripe = nullptr;
  webhooks::Fulfilment* fulfilment = nullptr;
  if (PlanNeedsStripe(plan)) {
    std::string error;
    fulfilment = ctx.env().Fulfilment(&error);
    stripe = fulfilment ? ctx.env().Stripe(&error) : nullptr;
    if (!stripe) {
      return ctx.Fail(error + " (release asks Stripe to expire session " + s.session_id +
                      " first; --force releases without Stripe)");
    }
  }
  const auto* now = std::get_if<ReleaseNow>(&plan);
  if (now && now->forced) {
    // Loudly: the operator is taking a risk Stripe would otherwise rule out.
    ctx.Warn("--force: releasing " + id + " WITHOUT asking Stripe" +
             (s.session_id.empty() ? std::string()
                                   : "; session " + s.session_id +
                                         " may still be paid (a late payment is then accepted if "
                                         "the paintings are still free, otherwise refunded)"));
  }

  checkout::ReleaseService service(*db, stripe, fulfilment, "paintlockctl");
  const ReleaseOutcome outcome = service.CarryOut(s, plan, *reason);
  const std::string paintings = Join(s.paintings);
  auto finish = [&](int code, const std::string& kind, const std::string& message) {
    if (ctx.json()) {
      nlohmann::json report = Report(s, kind, message);
      report["forced"] = now && now->forced;
      report["dry_run"] = false;
      if (const auto* r = std::get_if<Released>(&outcome)) {
        report["stripe_status"] =
            r->stripe_status.empty() ? nlohmann::json() : nlohmann::json(r->stripe_status);
      }
      if (const auto* p = std::get_if<PaidRefused>(&outcome)) report["state"] = p->state;
      if (const auto* a = std::get_if<AlreadyOver>(&outcome)) report["state"] = a->state;
      if (const auto* c = std::get_if<ChangedMeanwhile>(&outcome)) report["state"] = c->state;
      if (std::holds_alternative<Released>(outcome)) report["state"] = "released";
      ctx.PrintJson(report);
    } else if (code == kExitOk) {
      ctx.out() << message << "\n";
    }
    if (code != kExitOk) ctx.Fail(message);
    return code;
  };

  if (const auto* r = std::get_if<Released>(&outcome)) {
    std::string how = r->forced ? " (forced: Stripe was not asked)"
                      : r->stripe_status.empty()
                          ? ""
                          : " (Stripe session " + s.session_id + " is " + r->stripe_status + ")";
    return finish(kExitOk, "released", "released " + id + ": " + paintings + " free again" + how);
  }
  if (const auto* a = std::get_if<AlreadyOver>(&outcome)) {
    return finish(kExitOk, "already_" + a->state,
                  id + " is " + a->state + (a->detail.empty() ? "" : " (" + a->detail + ")") +
                      "; nothing left to release");
  }
  if (const auto* p = std::get_if<PaidRefused>(&outcome)) {
    std::string why;
    if (p->state == "sold") {
      why = "its buyer paid: " + paintings + " sold" +
            (p->fulfilment_outcome.empty() ? "" : " (" + p->fulfilment_outcome + ")") +
            "; after a refund made elsewhere, `paintlockctl unsold PAINTING --reason …`";
    } else if (p->state == "awaiting_payment") {
      why =
          "its buyer is paying by a delayed method that is still settling; --force releases "
          "anyway (a payment that settles later is accepted or refunded)";
    } else if (p->state == "refund_pending") {
      why = "its buyer is owed a refund Stripe has not confirmed; run `paintlockctl reconcile`";
    } else {
      why = "its buyer completed checkout at Stripe (now " + p->state + ")";
    }
    return finish(kExitFailed, "refused",
                  "refused to release " + id + ": " + why + "; nothing released");
  }
  if (const auto* u = std::get_if<StripeUnreachable>(&outcome)) {
    return finish(kExitFailed, "stripe_unreachable",
                  "Stripe could not be reached (" + u->detail +
                      "); nothing released: try again, "
                      "or --force to release without Stripe");
  }
  if (const auto* r = std::get_if<StripeRefused>(&outcome)) {
    return finish(kExitFailed, "stripe_refused", r->detail + "; nothing released");
  }
  if (const auto* c = std::get_if<ChangedMeanwhile>(&outcome)) {
    return finish(kExitFailed, "changed",
                  id + " changed while it was being released (now " + c->state +
                      "); nothing released: look again with `paintlockctl show " + id + "`");
  }
  const auto& failure = std::get<locks::DbFailure>(outcome);
  if (ctx.json()) ctx.PrintJson(Report(s, "database_failed", failure.detail));
  return ctx.FailDatabase(failure, "release " + id);
}

}  // namespace

void RegisterReleaseCommand(CommandRegistry& registry) {
  registry.Add({"release",
                "free a reservation's paintings (expiring its Stripe session first)",
                kReleaseUsage,
                {{"reason", true}, {"dry-run", false}, {"force", false}},
                1,
                1,
                "release takes one RESERVATION",
                Release});
}

}  // namespace paintlock::admin
