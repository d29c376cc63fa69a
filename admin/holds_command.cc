// paintlockctl holds: every live and recently lapsed hold, the stuck ones
// first (sql/migrations/0003: paintlock_hold_condition says what each one is
// waiting for; sql/queries/admin_holds.sql adds sales with an open dispute and
// orders them).
#include <set>

#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/table.h"
#include "locks/operator_queries.h"

namespace paintlock::admin {

namespace {

// How long a harmless lapsed hold (its session, if any, known to be over)
// stays in the list: long enough to answer "what happened this morning".
constexpr std::chrono::hours kRecentlyLapsed{24};

struct Condition {
  const char* name;
  const char* next_step;  // what an operator does about it; empty when nothing
};
// In the order of paintlock_hold_rank (sql/migrations/0013): the first six are stuck.
constexpr Condition kConditions[] = {
    {"refund_pending",
     "a late payment must be refunded and Stripe has not confirmed it: `paintlockctl reconcile`"},
    {"sold_unflagged",
     "sold, but a painting lacks its catalogue flag: `paintlockctl sold PAINTING --reason …`"},
    {"disputed",
     "the buyer disputed the payment: answer the dispute in the Stripe dashboard before its "
     "deadline; the painting stays sold whatever the outcome"},
    {"take_over_refused",
     "a buyer's take-over found Stripe unreachable: `paintlockctl reconcile`, or `paintlockctl "
     "release RESERVATION --reason …`"},
    {"lapsed_session_open",
     "lapsed, but its Stripe session may still be open or paid: `paintlockctl reconcile`, or "
     "`paintlockctl release RESERVATION --reason …`"},
    {"awaiting_payment",
     "a delayed payment is settling: wait, or `paintlockctl reconcile` if its webhook was lost"},
    {"live", ""},
    {"lapsed", ""},
};

const Condition* FindCondition(const std::string& name) {
  for (const auto& c : kConditions) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

constexpr const char* kHoldsUsage =
    R"(Usage: paintlockctl holds [--painting ID] [--state CONDITION] [--older-than DURATION] [--json]

Lists every live hold and every hold that lapsed in the last 24 hours, the
stuck ones first (most urgent first, then oldest). CONDITION is what the hold
is waiting for:

  refund_pending       a late payment must be refunded; Stripe has not confirmed it
  sold_unflagged       sold, but a painting lacks its catalogue flag
  disputed             sold, and the buyer's dispute of the payment is open at Stripe
  take_over_refused    lapsed; a buyer's take-over found Stripe unreachable
  lapsed_session_open  lapsed; the database has not heard that its Stripe session ended
  awaiting_payment     a delayed payment method is settling
  live                 held, the hold still running
  lapsed               lapsed; nothing more can happen (the sweep removes it later)

The first six are stuck: the list ends with what to do about each. Stuck holds
are listed however old they are.

Options:
  --painting ID           only holds on this painting
  --state CONDITION       only holds in this condition
  --older-than DURATION   only holds created at least this long ago (30m, 2h, 3d, 1w)

Examples:
  paintlockctl holds
  paintlockctl holds --state lapsed_session_open --older-than 2h
  paintlockctl holds --painting p7 --json
)";

int Holds(CommandContext& ctx) {
  const auto painting = ctx.args().Value("painting");
  const auto state = ctx.args().Value("state");
  std::optional<long long> older_than;
  if (state && !FindCondition(*state)) {
    std::string names;
    for (const auto& c : kConditions) names += std::string(names.empty() ? "" : ", ") + c.name;
    return ctx.BadUsage("--state must be one of " + names + ", got \"" + *state + "\"");
  }
  if (auto text = ctx.args().Value("older-than")) {
    auto d = ParseDuration(*text);
    if (!d)
      return ctx.BadUsage("--older-than must be a duration such as 30m, 2h or 3d, got \"" + *text +
                          "\"");
    older_than = d->count();
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;

  const long long recent = std::chrono::seconds(kRecentlyLapsed).count();
  auto listing = locks::OperatorQueries(*db).Holds(painting, state, older_than, recent);
  if (auto* f = std::get_if<locks::DbFailure>(&listing)) return ctx.FailDatabase(*f, "holds");
  locks::HoldsListing& l = std::get<locks::HoldsListing>(listing);
  if (!l.painting_known) return ctx.Fail("no painting \"" + *painting + "\" in the catalogue");
  for (auto& hold : l.holds) {
    hold["reservation_id"] = hold["id"];
    hold.erase("id");
    hold["next_step"] = FindCondition(hold["condition"].get<std::string>())->next_step;
  }

  int stuck = 0;
  for (const auto& h : l.holds) stuck += h["stuck"].get<bool>() ? 1 : 0;
  if (ctx.json()) {
    ctx.PrintJson({{"holds", l.holds}, {"count", l.holds.size()}, {"stuck", stuck}});
    return kExitOk;
  }
  if (l.holds.empty()) {
    ctx.out() << "no holds" << (painting || state || older_than ? " match" : "") << "\n";
    return kExitOk;
  }
  Table table({"CONDITION", "RESERVATION", "PAINTINGS", "HELD UNTIL", "AGE", "AMOUNT", "SESSION"});
  std::set<std::string> present;
  for (const auto& h : l.holds) {
    std::string paintings;
    for (const auto& p : h["paintings"])
      paintings += (paintings.empty() ? "" : ",") + p.get<std::string>();
    const std::string condition = h["condition"];
    present.insert(condition);
    const std::string shown =
        condition == "disputed"
            ? condition + " (" + Cell(h["dispute_reason"]) + ", " + Cell(h["dispute_status"]) + ")"
            : condition;
    table.AddRow({shown, Cell(h["reservation_id"]), paintings,
                  h["state"] == "sold" ? "sold" : FormatOffset(h["held_until_in"].get<long long>()),
                  FormatDuration(std::chrono::seconds(h["age_seconds"].get<long long>())),
                  std::to_string(h["amount_minor"].get<long long>()) + " " + Cell(h["currency"]),
                  Cell(h["session_id"])});
  }
  table.Print(ctx.out());
  ctx.out() << "\n"
            << l.holds.size() << (l.holds.size() == 1 ? " hold, " : " holds, ") << stuck
            << " stuck\n";
  for (const auto& c : kConditions) {
    if (present.count(c.name) && *c.next_step)
      ctx.out() << "  " << c.name << ": " << c.next_step << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterHoldsCommand(CommandRegistry& registry) {
  registry.Add({"holds",
                "list live and recently lapsed holds, the stuck ones first",
                kHoldsUsage,
                {{"painting", true}, {"state", true}, {"older-than", true}},
                0,
                0,
                "holds takes no arguments, only options",
                Holds});
}

}  // namespace paintlock::admin
