// paintlockctl contacts forget: a buyer's details (name, email, phone,
// shipping address) blanked for good: an erasure request, or a retention
// policy from cron (locks/sale_contacts.h; sql/migrations/0017).
#include "admin/commands.h"
#include "admin/duration.h"
#include "locks/sale_contacts.h"
#include "stripe/client.h"

namespace paintlock::admin {

namespace {

constexpr const char* kForgetUsage =
    R"(Usage: paintlockctl contacts forget (--email ADDRESS | --session cs_… | --older-than DURATION)
                                  --reason TEXT [--dry-run] [--json]

Blanks the buyer details paintlock kept from completed Checkout Sessions
(name, email, phone, shipping address) and marks them forgotten, so a late
webhook, the success page or `paintlockctl reconcile` cannot record them
again. The sales stay: what was sold, when, for how much, and the Stripe ids.
Choose exactly one:
  --email ADDRESS         every sale of that buyer (any letter case): an erasure request
  --session cs_…          one sale; forgotten even if its details have not arrived yet
                          (a session paintlock never created is refused: exit 1)
  --older-than DURATION   every sale whose details were recorded longer ago (30d, 26w):
                          a retention policy, e.g. from cron once you have shipped
Audited with the reason and the number of sales, never with the email or an
address. Stripe keeps its own copy of the session and customer: erase those
in the Stripe Dashboard too.

Options:
  --reason TEXT   why (required; audited)
  --dry-run       count what would be forgotten; change nothing

Examples:
  paintlockctl contacts forget --email ada@example.com --reason "erasure request of 2026-12-01"
  paintlockctl contacts forget --older-than 26w --reason "retention: 6 months after the sale"
)";

int Forget(CommandContext& ctx) {
  locks::ContactSelector which;
  int chosen = 0;
  if (auto email = ctx.args().Value("email")) {
    // The address is never echoed back: it is personal data, and this line may be logged.
    if (email->empty() || email->size() > 500 || email->find('@') == std::string::npos) {
      return ctx.BadUsage("--email must be an email address");
    }
    which.email = *email;
    ++chosen;
  }
  if (auto session = ctx.args().Value("session")) {
    if (!stripe::IsCheckoutSessionId(*session)) {
      return ctx.BadUsage("--session must be a Checkout Session id (cs_…)");
    }
    which.session_id = *session;
    ++chosen;
  }
  if (auto text = ctx.args().Value("older-than")) {
    auto d = ParseDuration(*text);
    if (!d) {
      return ctx.BadUsage("--older-than must be a duration such as 30d or 26w, got \"" + *text +
                          "\"");
    }
    which.older_than_seconds = d->count();
    ++chosen;
  }
  if (chosen != 1) return ctx.BadUsage("choose exactly one of --email, --session, --older-than");
  auto reason = ctx.args().Value("reason");
  if (!reason || reason->find_first_not_of(" \t") == std::string::npos) {
    return ctx.BadUsage("--reason is required: say why, e.g. --reason \"erasure request\"");
  }
  const bool dry_run = ctx.args().Has("dry-run");
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto done = locks::SaleContactStore(*db).Forget(which, "paintlockctl", *reason, dry_run);
  if (auto* f = std::get_if<locks::DbFailure>(&done))
    return ctx.FailDatabase(*f, "contacts forget");
  const locks::ForgetCount& count = std::get<locks::ForgetCount>(done);
  if (ctx.json()) {
    ctx.PrintJson({{"dry_run", dry_run},
                   {"selector", which.name()},
                   {"known", count.known},
                   {"forgotten", count.forgotten},
                   {"tombstones", count.tombstones}});
    return count.known ? kExitOk : kExitFailed;
  }
  if (!count.known) {
    ctx.err() << "paintlockctl: no reservation, audit line or Stripe event has session "
              << *which.session_id << "; nothing was changed (check the id)\n";
    return kExitFailed;
  }
  std::string line = std::string(dry_run ? "dry run: would forget" : "forgot") +
                     " the buyer details of " + std::to_string(count.forgotten) + " sale(s)";
  if (count.tombstones > 0) {
    line += dry_run ? "; would mark " : "; marked ";
    line += *which.session_id + " forgotten before its details arrived";
  } else if (count.forgotten == 0) {
    line += which.session_id ? " (already forgotten)" : " (none matched)";
  }
  ctx.out() << line << (dry_run ? "; nothing was changed" : "") << "\n";
  return kExitOk;
}

}  // namespace

void RegisterContactsCommands(CommandRegistry& registry) {
  registry.Add({"contacts forget",
                "blank buyers' contact details for good (erasure request, retention)",
                kForgetUsage,
                {{"email", true},
                 {"session", true},
                 {"older-than", true},
                 {"reason", true},
                 {"dry-run", false}},
                0,
                0,
                "contacts forget takes no arguments, only options",
                Forget});
}

}  // namespace paintlock::admin
