#include "checkout/release.h"

#include <doctest/doctest.h>

using namespace paintlock::checkout;

namespace {

ReleaseSubject Subject(const std::string& state, const std::string& session = "cs_1") {
  ReleaseSubject s;
  s.reservation_id = "0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e";
  s.state = state;
  s.session_id = session;
  s.paintings = {"p1", "p2"};
  s.fences = {3, 1};
  return s;
}

}  // namespace

TEST_CASE("admin: a release plan expires the Stripe session first unless forced") {
  CHECK(std::holds_alternative<ExpireSessionFirst>(PlanRelease(Subject("held"), false)));
  CHECK(std::holds_alternative<ReleaseNow>(PlanRelease(Subject("held", ""), false)));
  CHECK(!std::get<ReleaseNow>(PlanRelease(Subject("held", ""), false)).forced);
  CHECK(std::get<ReleaseNow>(PlanRelease(Subject("held"), true)).forced);
  CHECK(std::holds_alternative<AskStripeFirst>(PlanRelease(Subject("awaiting_payment"), false)));
  CHECK(std::get<ReleaseNow>(PlanRelease(Subject("awaiting_payment"), true)).forced);
  CHECK(PlanNeedsStripe(PlanRelease(Subject("held"), false)));
  CHECK(!PlanNeedsStripe(PlanRelease(Subject("held"), true)));
}

TEST_CASE("admin: a release plan never undoes a sale or an owed refund, even forced") {
  for (bool force : {false, true}) {
    CHECK(std::holds_alternative<RefuseSold>(PlanRelease(Subject("sold"), force)));
    CHECK(std::holds_alternative<RefuseRefundOwed>(PlanRelease(Subject("refund_pending"), force)));
    CHECK(std::holds_alternative<NothingToRelease>(PlanRelease(Subject("released"), force)));
    CHECK(std::holds_alternative<NothingToRelease>(PlanRelease(Subject("refunded"), force)));
  }
}

TEST_CASE("admin: a dry run says what Stripe's answer would lead to") {
  const ReleaseSubject s = Subject("held");
  const ReleasePlan plan = PlanRelease(s, false);
  CHECK(DescribePlan(plan, s, nullptr) ==
        "would expire Stripe session cs_1 first, then decide (Stripe not asked)");
  paintlock::stripe::CheckoutSession seen;
  seen.status = "open";
  CHECK(DescribePlan(plan, s, &seen) ==
        "Stripe says the session is open: would expire Stripe session cs_1 first, then release p1, "
        "p2");
  seen.status = "complete";
  seen.payment_status = "paid";
  CHECK(DescribePlan(plan, s, &seen).find("would record the sale of p1, p2 and refuse") !=
        std::string::npos);
  CHECK(DescribePlan(PlanRelease(s, true), s, nullptr).find("without asking Stripe (--force)") !=
        std::string::npos);
}
