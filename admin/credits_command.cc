// paintlockctl credits show|topup|holds|sweep: the credit accounts of
// locks/credits.h, read and topped up by an operator. Every figure comes from
// the same statements the gateway runs, so "available" here is computed from
// the live holds exactly as the API computes it.
#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/table.h"
#include "locks/audit.h"
#include "locks/credits.h"

namespace paintlock::admin {

namespace {

constexpr const char* kCreditsShowUsage = R"(Usage: paintlockctl credits show ACCOUNT [--json]

Shows an account's balance, what its live holds take, and what is available
(balance minus live holds, computed now from the database clock), followed by
its live holds, soonest to lapse first.

Example:
  paintlockctl credits show acct_42
)";

constexpr const char* kCreditsTopUpUsage =
    R"(Usage: paintlockctl credits topup ACCOUNT AMOUNT --key KEY [--reason TEXT] [--json]

Adds AMOUNT whole credits to ACCOUNT, creating the account if it does not
exist. KEY is the idempotency key, as the API's Idempotency-Key header: the
same KEY and AMOUNT again credits nothing more (run it twice safely after a
timeout); the same KEY with another AMOUNT is refused. The top-up is recorded
in the audit log with the reason.

Options:
  --key KEY        the idempotency key (1 to 255 characters), e.g. a ticket number
  --reason TEXT    why, for the audit log

Example:
  paintlockctl credits topup acct_42 500 --key support-1234 --reason "goodwill after outage"
)";

constexpr const char* kCreditsHoldsUsage =
    R"(Usage: paintlockctl credits holds ACCOUNT [--all] [--json]

Lists an account's live holds, soonest to lapse first; with --all, then its
closed holds (committed, released, expired), newest first. A hold shown as
expired stopped counting at its expiry, whether or not the sweep has run.

Options:
  --all   closed holds too (at most 1000 rows)

Example:
  paintlockctl credits holds acct_42 --all
)";

constexpr const char* kCreditsSweepUsage = R"(Usage: paintlockctl credits sweep [--json]

Marks lapsed holds (past their TTL, never committed or released) as expired,
in short batches. Accounting hygiene only: a lapsed hold stopped counting
against the balance the instant its TTL passed, and a late commit of it
behaves the same before and after the sweep. Run it from cron as often as
you like; it never waits for a lock and never blocks a checkout.

Example:
  paintlockctl credits sweep
)";

nlohmann::json HoldJson(const locks::CreditHoldView& h) {
  nlohmann::json j = {
      {"hold_id", h.id},
      {"account_id", h.account_id},
      {"amount", h.amount},
      {"state", h.state},
      {"created_at", h.created_at},
      {"expires_at", h.expires_at},
      {"closed_at", h.closed_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.closed_at)}};
  if (h.late) j["late"] = *h.late;
  if (h.balance_after) j["balance_after"] = *h.balance_after;
  return j;
}

void PrintHolds(CommandContext& ctx, const std::vector<locks::CreditHoldView>& holds) {
  Table table({"HOLD", "AMOUNT", "STATE", "EXPIRES", "CLOSED"});
  for (const auto& h : holds) {
    std::string state = h.state;
    if (h.late && *h.late) state += " (late)";
    table.AddRow({h.id, std::to_string(h.amount), state,
                  h.expires_at + " (" + FormatOffset(h.expires_in_seconds) + ")", h.closed_at});
  }
  table.Print(ctx.out(), "  ");
}

// The usage error for an ACCOUNT that is not an account id; nullopt for one.
std::optional<int> BadAccount(CommandContext& ctx, const std::string& account) {
  if (locks::IsValidAccountId(account)) return std::nullopt;
  return ctx.BadUsage("\"" + account + "\" is not an account id (1 to 64 of A-Z a-z 0-9 _ . : -)");
}

// Runs `then` on the account the first argument names, after reporting (as
// `doing`) a bad id, a database failure or an account that does not exist.
using AccountCommand = int (*)(CommandContext& ctx, locks::CreditStore& credits,
                               const std::string& account, const locks::CreditAccountView& view);
int WithAccount(CommandContext& ctx, const std::string& doing, AccountCommand then) {
  const std::string account = ctx.arg(0);
  if (auto bad = BadAccount(ctx, account)) return *bad;
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::CreditStore credits(*db);
  auto got = credits.Account(account);
  if (auto* f = std::get_if<locks::DbFailure>(&got)) return ctx.FailDatabase(*f, doing);
  const auto& view = std::get<std::optional<locks::CreditAccountView>>(got);
  if (!view) return ctx.Fail("there is no account \"" + account + "\"");
  return then(ctx, credits, account, *view);
}

int ShowAccount(CommandContext& ctx, locks::CreditStore& credits, const std::string& account,
                const locks::CreditAccountView& view) {
  auto holds = credits.Holds(account, false);
  if (auto* f = std::get_if<locks::DbFailure>(&holds)) return ctx.FailDatabase(*f, "credits show");
  const auto& live = std::get<std::vector<locks::CreditHoldView>>(holds);

  if (ctx.json()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& h : live) list.push_back(HoldJson(h));
    ctx.PrintJson({{"account_id", view.id},
                   {"balance", view.balance},
                   {"held", view.held},
                   {"available", view.available},
                   {"created_at", view.created_at},
                   {"updated_at", view.updated_at},
                   {"live_holds", list}});
    return kExitOk;
  }
  ctx.out() << "account " << view.id << "\n";
  PrintFields(ctx.out(), {{"balance", std::to_string(view.balance)},
                          {"held", std::to_string(view.held) + " by " +
                                       std::to_string(live.size()) + " live hold(s)"},
                          {"available", std::to_string(view.available)},
                          {"created", view.created_at},
                          {"updated", view.updated_at}});
  if (!live.empty()) {
    ctx.out() << "\n";
    PrintHolds(ctx, live);
  }
  return kExitOk;
}

int CreditsShow(CommandContext& ctx) { return WithAccount(ctx, "credits show", ShowAccount); }

int CreditsTopUp(CommandContext& ctx) {
  const std::string account = ctx.arg(0);
  if (auto bad = BadAccount(ctx, account)) return *bad;
  const auto amount = ParseBoundedInteger(ctx.arg(1), 1, locks::kMaxCreditAmount);
  if (!amount) {
    return ctx.BadUsage("AMOUNT must be a whole number of credits from 1 to " +
                        std::to_string(locks::kMaxCreditAmount) + ", got \"" + ctx.arg(1) + "\"");
  }
  const auto key = ctx.args().Value("key");
  if (!key || key->empty() || key->size() > 255) {
    return ctx.BadUsage(
        "--key KEY is required (1 to 255 characters): repeating a top-up with the "
        "same key credits once");
  }
  const auto reason = ctx.args().Value("reason");
  if (reason && reason->empty()) return ctx.BadUsage("--reason must not be empty");
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::CreditStore credits(*db);
  const locks::TopUpOutcome outcome = credits.TopUp(account, *key, *amount);
  if (auto* f = std::get_if<locks::DbFailure>(&outcome))
    return ctx.FailDatabase(*f, "credits topup");
  if (auto* reused = std::get_if<locks::IdempotencyKeyReused>(&outcome)) {
    return ctx.Fail("key \"" + *key + "\" already credited " +
                    std::to_string(reused->original_amount) + " to " + account +
                    "; nothing was credited (use a new --key for a new top-up)");
  }
  if (std::holds_alternative<locks::BalanceLimitReached>(outcome)) {
    return ctx.Fail("the balance of " + account + " would pass " +
                    std::to_string(locks::kMaxCreditBalance) + "; nothing was credited");
  }
  const auto& done = std::get<locks::TopUpApplied>(outcome);
  if (!done.replayed) {
    // Recorded after the fact: a crash in between leaves a top-up without its
    // audit line, never an audit line without its top-up.
    locks::AuditEntry entry;
    entry.actor = "paintlockctl";
    entry.action = "credits_topup";
    entry.reason = reason.value_or("top-up from paintlockctl");
    entry.details = {{"account_id", account},
                     {"amount", done.amount},
                     {"idempotency_key", *key},
                     {"balance_after", done.balance_after}};
    auto audited = locks::AuditLog(*db).Record(entry);
    if (auto* f = std::get_if<locks::DbFailure>(&audited)) {
      ctx.Warn("credited, but the audit line was not written: " + f->detail);
    }
  }
  if (ctx.json()) {
    ctx.PrintJson({{"account_id", done.account_id},
                   {"amount", done.amount},
                   {"balance_after", done.balance_after},
                   {"credited_at", done.credited_at},
                   {"replayed", done.replayed}});
    return kExitOk;
  }
  if (done.replayed) {
    ctx.out() << "already credited with key " << *key << " at " << done.credited_at
              << ": nothing more was credited\n";
  } else {
    ctx.out() << "credited " << done.amount << " to " << account << "\n";
  }
  PrintFields(ctx.out(), {{"balance after", std::to_string(done.balance_after)}});
  return kExitOk;
}

int ListHolds(CommandContext& ctx, locks::CreditStore& credits, const std::string& account,
              const locks::CreditAccountView&) {
  auto holds = credits.Holds(account, ctx.args().Has("all"));
  if (auto* f = std::get_if<locks::DbFailure>(&holds)) return ctx.FailDatabase(*f, "credits holds");
  const auto& list = std::get<std::vector<locks::CreditHoldView>>(holds);
  if (ctx.json()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& h : list) out.push_back(HoldJson(h));
    ctx.PrintJson({{"account_id", account}, {"holds", out}});
    return kExitOk;
  }
  if (list.empty()) {
    ctx.out() << "no " << (ctx.args().Has("all") ? "" : "live ") << "holds on " << account << "\n";
    return kExitOk;
  }
  PrintHolds(ctx, list);
  return kExitOk;
}

int CreditsHolds(CommandContext& ctx) { return WithAccount(ctx, "credits holds", ListHolds); }

int CreditsSweep(CommandContext& ctx) {
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::CreditStore credits(*db);
  auto swept = credits.Sweep();
  if (auto* f = std::get_if<locks::DbFailure>(&swept)) return ctx.FailDatabase(*f, "credits sweep");
  const std::int64_t closed = std::get<std::int64_t>(swept);
  if (ctx.json()) {
    ctx.PrintJson({{"expired_holds_closed", closed}});
  } else {
    ctx.out() << "closed " << closed << " lapsed hold(s) as expired\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterCreditsCommands(CommandRegistry& registry) {
  registry.Add({"credits show",
                "show a credit account: balance, held, available now",
                kCreditsShowUsage,
                {},
                1,
                1,
                "credits show takes one ACCOUNT",
                CreditsShow});
  registry.Add({"credits topup",
                "add credits to an account, once per --key (audited)",
                kCreditsTopUpUsage,
                {{"key", true}, {"reason", true}},
                2,
                2,
                "credits topup takes ACCOUNT and AMOUNT",
                CreditsTopUp});
  registry.Add({"credits holds",
                "list an account's credit holds, live ones first",
                kCreditsHoldsUsage,
                {{"all", false}},
                1,
                1,
                "credits holds takes one ACCOUNT",
                CreditsHolds});
  registry.Add({"credits sweep",
                "mark lapsed credit holds expired (hygiene; never needed)",
                kCreditsSweepUsage,
                {},
                0,
                0,
                "credits sweep takes no arguments",
                CreditsSweep});
}

}  // namespace paintlock::admin
