// paintlockctl sold / unsold: the catalogue's permanent "sold" flag set or
// cleared by hand (sql/migrations/0003: paintlock_admin_mark_sold and
// paintlock_admin_mark_unsold decide under the painting's lock row).
#include "admin/commands.h"
#include "locks/operator_queries.h"

namespace paintlock::admin {

namespace {

constexpr const char* kSoldUsage = R"(Usage: paintlockctl sold PAINTING --reason TEXT [--json]

Marks PAINTING sold in the catalogue for good: sold elsewhere (at a fair, by
phone), or a paintlock sale whose catalogue flag is missing (`paintlockctl
holds` lists those as sold_unflagged). Refused while a reservation holds the
painting or its Stripe session may still be paid: release that first. Marking
a painting that is already sold changes nothing. Audited with the reason.

Example:
  paintlockctl sold p7 --reason "sold at the autumn fair"
)";

constexpr const char* kUnsoldUsage = R"(Usage: paintlockctl unsold PAINTING --reason TEXT [--json]

Puts PAINTING back on sale after the seller refunded its buyer outside
paintlock (in the Stripe dashboard, or in cash): clears the catalogue's sold
flag and the lock's 24-hour sold window. The paintlock sale that bought it, if
any, is recorded as refunded outside paintlock; other paintings of that sale
stay sold. A painting that is not sold is left as it is. Audited with the
reason.

Example:
  paintlockctl unsold p7 --reason "returned damaged; refunded in the Stripe dashboard"
)";

std::optional<std::string> Reason(CommandContext& ctx, int* exit_code) {
  auto reason = ctx.args().Value("reason");
  if (!reason) {
    *exit_code = ctx.BadUsage("--reason is required: say why, e.g. --reason \"sold at the fair\"");
  } else if (reason->find_first_not_of(" \t") == std::string::npos) {
    *exit_code = ctx.BadUsage("--reason must not be blank");
    reason.reset();
  }
  return reason;
}

int Report(CommandContext& ctx, const nlohmann::json& report, int code,
           const std::string& message) {
  if (ctx.json()) ctx.PrintJson(report);
  if (code != kExitOk) return ctx.Fail(message);
  if (!ctx.json()) ctx.out() << message << "\n";
  return code;
}

nlohmann::json OrNull(const std::optional<std::string>& text) {
  return text ? nlohmann::json(*text) : nlohmann::json();
}

int ReportSold(CommandContext& ctx, const std::string& painting,
               const locks::SoldFlagChange& change) {
  nlohmann::json report = {{"painting", painting}, {"outcome", change.outcome}};
  if (change.outcome == "sold") return Report(ctx, report, kExitOk, painting + " marked sold");
  if (change.outcome == "already_sold") {
    return Report(ctx, report, kExitOk, painting + " was already sold; nothing changed");
  }
  if (change.outcome == "held") {
    report["holder"] = OrNull(change.holder);
    report["holder_state"] = OrNull(change.holder_state);
    report["until"] = OrNull(change.until);
    const std::string holder = change.holder.value_or("");
    const std::string when =
        change.until ? "until " + *change.until : "its Stripe session may still be paid";
    return Report(ctx, report, kExitFailed,
                  "refused: " + painting + " is held by reservation " + holder + " (" +
                      change.holder_state.value_or("") + ", " + when +
                      "); release it first: "
                      "paintlockctl release " +
                      holder + " --reason …");
  }
  return Report(ctx, report, kExitFailed, "no painting \"" + painting + "\" in the catalogue");
}

int ReportUnsold(CommandContext& ctx, const std::string& painting,
                 const locks::SoldFlagChange& change) {
  nlohmann::json report = {
      {"painting", painting}, {"outcome", change.outcome}, {"sale", OrNull(change.sale)}};
  if (change.outcome == "unsold") {
    return Report(
        ctx, report, kExitOk,
        painting + " is for sale again" +
            (change.sale ? "; sale " + *change.sale + " recorded as refunded outside paintlock"
                         : ""));
  }
  if (change.outcome == "not_sold")
    return Report(ctx, report, kExitOk, painting + " was not sold; nothing changed");
  return Report(ctx, report, kExitFailed, "no painting \"" + painting + "\" in the catalogue");
}

// paintlockctl sold (`sold` true) and unsold: changes the flag, then reports what that did.
int Mark(CommandContext& ctx, bool sold) {
  int code = kExitOk;
  const auto reason = Reason(ctx, &code);
  if (!reason) return code;
  const std::string& painting = ctx.arg(0);
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto marked = locks::OperatorQueries(*db).SetSoldFlag(painting, sold, *reason, "paintlockctl");
  if (auto* f = std::get_if<locks::DbFailure>(&marked))
    return ctx.FailDatabase(*f, (sold ? "sold " : "unsold ") + painting);
  const auto& change = std::get<locks::SoldFlagChange>(marked);
  return sold ? ReportSold(ctx, painting, change) : ReportUnsold(ctx, painting, change);
}

int Sold(CommandContext& ctx) { return Mark(ctx, true); }
int Unsold(CommandContext& ctx) { return Mark(ctx, false); }

}  // namespace

void RegisterSoldCommands(CommandRegistry& registry) {
  registry.Add({"sold",
                "mark a painting sold in the catalogue (sold elsewhere, or a missing flag)",
                kSoldUsage,
                {{"reason", true}},
                1,
                1,
                "sold takes one PAINTING",
                Sold});
  registry.Add({"unsold",
                "put a sold painting back on sale after a refund made elsewhere",
                kUnsoldUsage,
                {{"reason", true}},
                1,
                1,
                "unsold takes one PAINTING",
                Unsold});
}

}  // namespace paintlock::admin
