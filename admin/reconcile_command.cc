// paintlockctl reconcile: asks Stripe how every session the database has no
// outcome for ended, and applies the answer through the one fulfilment
// function (webhooks::Fulfilment::Apply, "session.retrieved"), exactly as the
// success page and a take-over do. Heals lost webhooks; safe to run any time,
// as often as you like, concurrently with the gateway.
#include <chrono>
#include <ctime>
#include <optional>
#include <thread>

#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/environment.h"
#include "admin/table.h"
#include "locks/operator_queries.h"
#include "webhooks/offline_sale.h"

namespace paintlock::admin {

namespace {

constexpr long kDefaultRate = 20;           // Stripe allows about 25 requests/s in test mode
constexpr size_t kProgressFrom = 20;        // a run this long reports progress on stderr
constexpr int kGiveUpAfterUnreachable = 3;  // in a row: Stripe is down, stop asking

constexpr const char* kReconcileUsage =
    R"(Usage: paintlockctl reconcile [--rate PER_SECOND] [--offline-since DURATION] [--json]

Finds every reservation whose Stripe outcome the database does not know — a
lapsed hold whose session it last knew as open, a delayed payment settling, a
refund owed, a released reservation whose session may still be paid — asks
Stripe for each session, and applies the answer exactly as a webhook would
(the painting is sold, released, or the late payment refunded). Prints what it
changed. Heals webhooks that were lost; safe to run at any time, repeatedly,
while the gateway runs. Long runs show progress on stderr.

With --offline-since, it also lists the Checkout Sessions created at Stripe in
that time and applies every completed one a gateway made while the database
was down (PAINTLOCK_ON_DATABASE_DOWN=sell): the database never saw those, so
only Stripe can name them. Each is sold if its paintings are still free, else
refunded once and audited — as its webhook would. With
PAINTLOCK_ON_DATABASE_DOWN=sell in the environment (the gateways' settings
file), --offline-since defaults to 24h.

Options:
  --rate PER_SECOND   at most this many sessions per second (default 20; Stripe
                      allows about 25 requests per second in test mode)
  --offline-since DURATION
                      also apply offline sales created this long ago or later
                      (30m, 6h, 3d; at most 30d; default 24h with
                      PAINTLOCK_ON_DATABASE_DOWN=sell, else none)

Exit codes: 0 every session reconciled, 1 some could not be (run it again later).

Examples:
  paintlockctl reconcile
  paintlockctl reconcile --offline-since 6h   # after an outage in sell mode
)";

// Outcomes of Fulfilment::Apply that leave the database as it was.
bool ChangedNothing(const std::string& outcome) {
  return outcome == "no_change" || outcome == "duplicate" || outcome == "already_sold" ||
         outcome == "already_refunded" || outcome == "unknown_session";
}

// Applies what Stripe says of `session` (of `reservation`) through the
// fulfilment function, filling the result row; true when it changed something.
bool Settle(const stripe::CheckoutSession& session, const std::string& reservation,
            webhooks::Fulfilment& fulfilment, locks::OperatorQueries& queries,
            nlohmann::json* result, int* failed) {
  (*result)["stripe_status"] = session.status;
  (*result)["payment_status"] = session.payment_status;
  webhooks::SessionFacts facts = webhooks::FactsOf(session);
  if (facts.reservation_id.empty()) facts.reservation_id = reservation;
  auto applied = fulfilment.Apply(facts, "", "session.retrieved", "paintlockctl");
  if (auto* failure = std::get_if<webhooks::FulfilmentFailure>(&applied)) {
    (*result)["error"] = *failure == webhooks::FulfilmentFailure::kRefundPending
                             ? "the refund is still pending: Stripe did not confirm it"
                             : "could not record Stripe's answer in the database";
    ++*failed;
  } else {
    (*result)["outcome"] = std::get<webhooks::FulfilmentResult>(applied).outcome;
  }
  auto after = queries.ReservationState(reservation);
  if (auto* state = std::get_if<std::optional<std::string>>(&after)) {
    (*result)["state_after"] = state->value_or("deleted");
  }
  const bool did = ((*result)["outcome"].is_string() && !ChangedNothing((*result)["outcome"])) ||
                   (*result)["state_after"] != (*result)["state_before"];
  (*result)["changed"] = did;
  return did;
}

nlohmann::json ResultRow(const std::string& reservation, const std::string& session_id,
                         const nlohmann::json& paintings, const nlohmann::json& state_before) {
  return {{"reservation_id", reservation},
          {"session_id", session_id},
          {"paintings", paintings},
          {"state_before", state_before},
          {"stripe_status", nullptr},
          {"payment_status", nullptr},
          {"outcome", nullptr},
          {"state_after", state_before},
          {"changed", false},
          {"error", nullptr}};
}

// The completed sessions a gateway made while the database was down
// (webhooks/offline_sale.h), created since `since_unix`, page by page at
// `spacing`; nullopt and *error when Stripe could not list them.
std::optional<std::vector<stripe::CheckoutSession>> OfflineSessions(
    stripe::StripeClient& stripe, std::int64_t since_unix, std::chrono::microseconds spacing,
    std::string* error) {
  std::vector<stripe::CheckoutSession> out;
  stripe::ListSessionsParams params;
  params.created_gte = since_unix;
  for (int page = 0;; ++page) {
    if (page > 0) std::this_thread::sleep_for(spacing);
    auto listed = stripe.ListCheckoutSessions(params);
    if (const auto* err = stripe::ErrorOf(listed)) {
      *error = "Stripe: " + (err->message.empty() ? err->type : err->message);
      return std::nullopt;
    }
    const auto& sessions = std::get<stripe::SessionPage>(listed);
    for (const auto& s : sessions.sessions) {
      auto marker = s.metadata.find(webhooks::kOfflineMarkerKey);
      if (marker != s.metadata.end() && s.status == "complete") out.push_back(s);
    }
    if (!sessions.has_more || sessions.sessions.empty()) return out;
    params.starting_after = sessions.sessions.back().id;
  }
}

int Reconcile(CommandContext& ctx) {
  long rate = kDefaultRate;
  if (auto text = ctx.args().Value("rate")) {
    auto n = ParseBoundedInteger(*text, 1, 100);
    if (!n)
      return ctx.BadUsage("--rate must be a whole number of sessions per second from 1 to 100");
    rate = *n;
  }
  std::optional<std::chrono::seconds> offline_since;
  if (auto text = ctx.args().Value("offline-since")) {
    offline_since = ParseDuration(*text);
    if (!offline_since || offline_since->count() <= 0 ||
        *offline_since > std::chrono::hours(24 * 30)) {
      return ctx.BadUsage("--offline-since must be a duration such as 30m, 6h or 3d (at most 30d)");
    }
  }
  // Where the gateways sell through outages, so does the reconcile timer (it
  // reads the same settings file): the last day's sessions, which covers every
  // session still payable (Stripe's longest expiry is 24 hours).
  if (!offline_since && ctx.env().Lookup("PAINTLOCK_ON_DATABASE_DOWN") == std::string("sell")) {
    offline_since = std::chrono::hours(24);
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::OperatorQueries queries(*db);
  auto listed = queries.ReconcileCandidates();
  if (auto* f = std::get_if<locks::DbFailure>(&listed)) return ctx.FailDatabase(*f, "reconcile");
  nlohmann::json candidates = std::get<nlohmann::json>(listed);

  stripe::StripeClient* stripe = nullptr;
  webhooks::Fulfilment* fulfilment = nullptr;
  if (!candidates.empty() || offline_since) {
    std::string error;
    fulfilment = ctx.env().Fulfilment(&error);
    stripe = fulfilment ? ctx.env().Stripe(&error) : nullptr;
    if (!stripe) {
      return ctx.Fail(error + " (reconcile asks Stripe about " + std::to_string(candidates.size()) +
                      " session(s))");
    }
  }

  nlohmann::json results = nlohmann::json::array();
  int changed = 0, failed = 0, unreachable_in_a_row = 0;
  const auto spacing = std::chrono::microseconds(1000000 / rate);
  if (offline_since) {
    // Offline sales first: listing them is one call a page, and applying
    // one is what a retrieve would be (the list carries the whole session).
    std::string error;
    const std::int64_t since =
        static_cast<std::int64_t>(std::time(nullptr)) - offline_since->count();
    auto offline = OfflineSessions(*stripe, since, spacing, &error);
    if (!offline) {
      nlohmann::json result = ResultRow("", "", nlohmann::json::array(), "offline");
      result["error"] = error;
      results.push_back(result);
      ++failed;
    } else {
      for (const auto& session : *offline) {
        const auto facts = webhooks::FactsOf(session);
        // The database's state of it, if it has heard of it at all.
        nlohmann::json before = "unknown";
        auto known = queries.ReservationState(facts.reservation_id);
        if (auto* state = std::get_if<std::optional<std::string>>(&known)) {
          before = state->value_or("none");
        }
        nlohmann::json result = ResultRow(
            facts.reservation_id, session.id,
            facts.offline ? nlohmann::json(facts.offline->paintings) : nlohmann::json::array(),
            before);
        changed +=
            Settle(session, facts.reservation_id, *fulfilment, queries, &result, &failed) ? 1 : 0;
        results.push_back(result);
      }
    }
  }
  auto next_call = std::chrono::steady_clock::now();
  auto last_progress = std::chrono::steady_clock::now();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const nlohmann::json& c = candidates[i];
    const std::string reservation = c["id"], session_id = c["stripe_session_id"];
    nlohmann::json result = ResultRow(reservation, session_id, c["paintings"], c["state"]);
    std::optional<stripe::StripeResult<stripe::CheckoutSession>> retrieved;
    if (unreachable_in_a_row < kGiveUpAfterUnreachable) {
      std::this_thread::sleep_until(next_call);
      next_call = std::chrono::steady_clock::now() + spacing;
      retrieved = stripe->RetrieveCheckoutSession(session_id);
    }
    if (!retrieved) {
      result["error"] = "not asked: Stripe was unreachable";
      ++failed;
    } else if (const auto* err = stripe::ErrorOf(*retrieved)) {
      unreachable_in_a_row = err->Unavailable() ? unreachable_in_a_row + 1 : 0;
      result["error"] = "Stripe: " + (err->message.empty() ? err->type : err->message);
      ++failed;
    } else {
      unreachable_in_a_row = 0;
      const auto& session = std::get<stripe::CheckoutSession>(*retrieved);
      changed += Settle(session, reservation, *fulfilment, queries, &result, &failed) ? 1 : 0;
    }
    results.push_back(result);
    const auto now = std::chrono::steady_clock::now();
    if (candidates.size() >= kProgressFrom && ((i + 1) % 10 == 0 || i + 1 == candidates.size() ||
                                               now - last_progress > std::chrono::seconds(2))) {
      ctx.err() << "reconcile: " << i + 1 << "/" << candidates.size() << " sessions\n"
                << std::flush;
      last_progress = now;
    }
  }

  const size_t checked = results.size();
  if (ctx.json()) {
    ctx.PrintJson(
        {{"checked", checked}, {"changed", changed}, {"failed", failed}, {"results", results}});
  } else if (checked == 0) {
    ctx.out() << "nothing to reconcile: the database knows how every Stripe session ended\n";
  } else {
    Table table({"RESERVATION", "SESSION", "WAS", "STRIPE SAYS", "OUTCOME", "NOW"});
    for (const auto& r : results) {
      std::string stripe_says = Cell(r["stripe_status"]);
      if (!r["payment_status"].is_null()) stripe_says += "/" + Cell(r["payment_status"]);
      table.AddRow({Cell(r["reservation_id"]), Cell(r["session_id"]), Cell(r["state_before"]),
                    stripe_says,
                    r["error"].is_null() ? Cell(r["outcome"]) : "error: " + Cell(r["error"]),
                    Cell(r["state_after"])});
    }
    table.Print(ctx.out());
    ctx.out() << "\nreconciled " << checked << " session(s): " << changed << " changed, "
              << checked - changed - failed << " unchanged, " << failed << " failed\n";
  }
  if (failed > 0) {
    return ctx.Fail(std::to_string(failed) +
                    " session(s) could not be reconciled; run "
                    "`paintlockctl reconcile` again later");
  }
  return kExitOk;
}

}  // namespace

void RegisterReconcileCommand(CommandRegistry& registry) {
  registry.Add({"reconcile",
                "ask Stripe how sessions the database has no outcome for ended, and apply it",
                kReconcileUsage,
                {{"rate", true}, {"offline-since", true}},
                0,
                0,
                "reconcile takes no arguments, only options",
                Reconcile});
}

}  // namespace paintlock::admin
