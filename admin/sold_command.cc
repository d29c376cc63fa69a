// paintlockctl sold / unsold: the catalogue's permanent "sold" flag set or
// cleared by hand (sql/migrations/0003: paintlock_admin_mark_sold and
// paintlock_admin_mark_unsold decide under the painting's lock row).
#include "admin/commands.h"
#include "locks/availability_publisher.h"

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

int Sold(CommandContext& ctx) {
  int code = kExitOk;
  const auto reason = Reason(ctx, &code);
  if (!reason) return code;
  const std::string& painting = ctx.arg(0);
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto marked = db->Run("admin_mark_sold", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return RowJson(n.exec_prepared1("admin_mark_sold", painting, *reason, "paintlockctl"));
  });
  if (auto* f = std::get_if<locks::DbFailure>(&marked))
    return ctx.FailDatabase(*f, "sold " + painting);
  db->availability().PaintingsChanged({painting});
  nlohmann::json row = std::get<nlohmann::json>(marked);
  const std::string outcome = row["outcome"];
  nlohmann::json report = {{"painting", painting}, {"outcome", outcome}};
  if (outcome == "sold") return Report(ctx, report, kExitOk, painting + " marked sold");
  if (outcome == "already_sold") {
    return Report(ctx, report, kExitOk, painting + " was already sold; nothing changed");
  }
  if (outcome == "held") {
    report["holder"] = row["holder"];
    report["holder_state"] = row["holder_state"];
    report["until"] = row["until"];
    const std::string holder = Cell(row["holder"]);
    const std::string when = row["until"].is_null() ? "its Stripe session may still be paid"
                                                    : "until " + Cell(row["until"]);
    return Report(ctx, report, kExitFailed,
                  "refused: " + painting + " is held by reservation " + holder + " (" +
                      Cell(row["holder_state"]) + ", " + when +
                      "); release it first: "
                      "paintlockctl release " +
                      holder + " --reason …");
  }
  return Report(ctx, report, kExitFailed, "no painting \"" + painting + "\" in the catalogue");
}

int Unsold(CommandContext& ctx) {
  int code = kExitOk;
  const auto reason = Reason(ctx, &code);
  if (!reason) return code;
  const std::string& painting = ctx.arg(0);
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto marked = db->Run("admin_mark_unsold", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return RowJson(n.exec_prepared1("admin_mark_unsold", painting, *reason, "paintlockctl"));
  });
  if (auto* f = std::get_if<locks::DbFailure>(&marked))
    return ctx.FailDatabase(*f, "unsold " + painting);
  db->availability().PaintingsChanged({painting});
  nlohmann::json row = std::get<nlohmann::json>(marked);
  const std::string outcome = row["outcome"];
  nlohmann::json report = {{"painting", painting}, {"outcome", outcome}, {"sale", row["sale"]}};
  if (outcome == "unsold") {
    return Report(ctx, report, kExitOk,
                  painting + " is for sale again" +
                      (row["sale"].is_null() ? ""
                                             : "; sale " + Cell(row["sale"]) +
                                                   " recorded as refunded outside paintlock"));
  }
  if (outcome == "not_sold")
    return Report(ctx, report, kExitOk, painting + " was not sold; nothing changed");
  return Report(ctx, report, kExitFailed, "no painting \"" + painting + "\" in the catalogue");
}

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
