// paintlockctl catalog import: the catalogue file (admin/catalog_file.h) into
// paintings, through locks::Catalogue::Import (one transaction, idempotent).
// paintlockctl catalog withdraw / restore: a painting taken off sale without
// selling it, and back (locks::Catalogue::SetWithdrawn; sql/migrations/0012).
#include <fstream>
#include <sstream>

#include "admin/catalog_file.h"
#include "admin/commands.h"
#include "locks/catalogue.h"

namespace paintlock::admin {

namespace {

constexpr const char* kImportUsage = R"(Usage: paintlockctl catalog import FILE [--force] [--json]

Adds or updates paintings from FILE in one transaction (all or nothing).
FILE is JSON ([{"id","title","price_minor","currency"}, ...] or {"paintings": [...]})
or CSV (by its .csv name) with a header row naming id,title,price_minor,currency.
Prices are in minor units (cents). Reports how many paintings were added,
updated and unchanged; importing the same file again changes nothing.

A price or currency change on a painting that is reserved or sold is refused
(nothing is written) unless --force is given: a buyer may be paying the old
price right now.

Examples:
  paintlockctl catalog import fixtures/catalog.json
  paintlockctl catalog import autumn.csv --json
)";

constexpr const char* kWithdrawUsage =
    R"(Usage: paintlockctl catalog withdraw PAINTING --reason TEXT [--json]

Takes PAINTING off sale without selling it (kept back for an exhibition,
damaged, promised to someone): it cannot be reserved (buyers get 409
painting_withdrawn), the catalogue and the availability stream show it as
"withdrawn", and its waiting line, if any, is closed. Audited with the reason.

Refused while a reservation holds the painting or its Stripe session may still
be paid: a buyer may be paying for it right now. Let the hold finish, or
release it first (paintlockctl release RESERVATION --reason …). A sold
painting is not withdrawn. Withdrawing a withdrawn painting changes nothing.

Example:
  paintlockctl catalog withdraw p7 --reason "lent to the spring exhibition"
)";

constexpr const char* kRestoreUsage =
    R"(Usage: paintlockctl catalog restore PAINTING --reason TEXT [--json]

Puts a withdrawn PAINTING back on sale, at its catalogue price. Audited with
the reason. Restoring a painting that is not withdrawn changes nothing.

Example:
  paintlockctl catalog restore p7 --reason "back from the exhibition"
)";

constexpr std::size_t kMaxReasonBytes = 500;  // the schema's CHECK

// --reason, present, not blank and bounded; nullopt after printing the usage error.
std::optional<std::string> ReasonOf(CommandContext& ctx, int* exit_code) {
  auto reason = ctx.args().Value("reason");
  if (!reason || reason->find_first_not_of(" \t") == std::string::npos) {
    *exit_code =
        ctx.BadUsage("--reason is required and must say why, e.g. --reason \"exhibition\"");
    return std::nullopt;
  }
  if (reason->size() > kMaxReasonBytes) {
    *exit_code =
        ctx.BadUsage("--reason is too long: at most " + std::to_string(kMaxReasonBytes) + " bytes");
    return std::nullopt;
  }
  return reason;
}

// Withdraw (`withdraw` true) or restore, then report what that did.
int SetWithdrawn(CommandContext& ctx, bool withdraw) {
  int code = kExitOk;
  const auto reason = ReasonOf(ctx, &code);
  if (!reason) return code;
  const std::string& painting = ctx.arg(0);
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto changed = locks::Catalogue(*db).SetWithdrawn(painting, withdraw, *reason, "paintlockctl");
  if (auto* f = std::get_if<locks::DbFailure>(&changed)) {
    return ctx.FailDatabase(*f, (withdraw ? "withdraw " : "restore ") + painting);
  }
  const auto& change = std::get<locks::WithdrawalChange>(changed);
  nlohmann::json report = {{"painting", painting}, {"outcome", change.outcome}};
  std::string message;
  bool ok = true;
  if (change.outcome == "withdrawn") {
    message = painting + " is withdrawn from sale";
  } else if (change.outcome == "already_withdrawn") {
    message = painting + " was already withdrawn; nothing changed";
  } else if (change.outcome == "restored") {
    message = painting + " is for sale again";
  } else if (change.outcome == "not_withdrawn") {
    message = painting + " was not withdrawn; nothing changed";
  } else if (change.outcome == "sold") {
    ok = false;
    message = "refused: " + painting + " is sold; a sold painting is not on sale to withdraw";
  } else if (change.outcome == "held") {
    ok = false;
    const std::string holder = change.holder.value_or("");
    report["holder"] = holder;
    report["holder_state"] = change.holder_state.value_or("");
    report["until"] = change.until ? nlohmann::json(*change.until) : nlohmann::json();
    message = "refused: " + painting + " is held by reservation " + holder + " (" +
              change.holder_state.value_or("") + ", " +
              (change.until ? "until " + *change.until : "its Stripe session may still be paid") +
              "); let the hold finish or release it first: paintlockctl release " + holder +
              " --reason …";
  } else {
    ok = false;
    message = "no painting \"" + painting + "\" in the catalogue";
  }
  if (ctx.json()) ctx.PrintJson(report);
  if (!ok) return ctx.Fail(message);
  if (!ctx.json()) ctx.out() << message << "\n";
  return kExitOk;
}

int Withdraw(CommandContext& ctx) { return SetWithdrawn(ctx, true); }
int Restore(CommandContext& ctx) { return SetWithdrawn(ctx, false); }

int Import(CommandContext& ctx) {
  const std::string& path = ctx.arg(0);
  std::ifstream in(path);
  if (!in) return ctx.Fail("cannot read " + path + ": check the path");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  if (!ParseCatalogFile(path, text.str(), &entries, &problems)) {
    for (const auto& p : problems) ctx.err() << "paintlockctl: " << p << "\n";
    return ctx.Fail(std::to_string(problems.size()) + " problem(s) in " + path +
                    "; nothing imported: fix the file and import it again");
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::Catalogue catalogue(*db);
  auto report_or = catalogue.Import(entries, ctx.args().Has("force"));
  if (auto* f = std::get_if<locks::DbFailure>(&report_or)) return ctx.FailDatabase(*f, "import");
  const auto& report = std::get<locks::ImportReport>(report_or);
  if (!report.refused.empty()) {
    for (const auto& r : report.refused) {
      ctx.err() << "paintlockctl: refused price change: " << r << "\n";
    }
    return ctx.Fail("nothing imported: price changes on reserved or sold paintings need --force");
  }
  if (ctx.json()) {
    ctx.PrintJson({{"file", path},
                   {"added", report.added},
                   {"updated", report.updated},
                   {"unchanged", report.unchanged}});
  } else {
    ctx.out() << path << ": " << report.added << " added, " << report.updated << " updated, "
              << report.unchanged << " unchanged\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterCatalogCommands(CommandRegistry& registry) {
  registry.Add({"catalog import",
                "add or update paintings from a JSON or CSV file",
                kImportUsage,
                {{"force", false}},
                1,
                1,
                "catalog import takes exactly one FILE",
                Import});
  registry.Add({"catalog withdraw",
                "take a painting off sale without selling it",
                kWithdrawUsage,
                {{"reason", true}},
                1,
                1,
                "catalog withdraw takes one PAINTING",
                Withdraw});
  registry.Add({"catalog restore",
                "put a withdrawn painting back on sale",
                kRestoreUsage,
                {{"reason", true}},
                1,
                1,
                "catalog restore takes one PAINTING",
                Restore});
}

}  // namespace paintlock::admin
