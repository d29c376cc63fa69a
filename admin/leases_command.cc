// paintlockctl leases: every TTL lease of locks/leases.h, who holds it, with
// which fencing token, and until when (on the database clock).
#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/table.h"
#include "locks/leases.h"

namespace paintlock::admin {

namespace {

constexpr const char* kLeasesUsage = R"(Usage: paintlockctl leases [--json]

Lists every lease, live ones first: its holder, the fencing token of its
latest grant, and when it expires. A lease past its expiry is free (it lapsed
by itself: its holder crashed or stopped renewing) whatever holder it last
named; a released lease names no holder. Tokens only grow: the next grant of a
lease gets the next token.

Example:
  paintlockctl leases
  paintlockctl leases --json
)";

int Leases(CommandContext& ctx) {
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::LeaseStore leases(*db);
  auto listed = leases.List();
  if (auto* f = std::get_if<locks::DbFailure>(&listed)) return ctx.FailDatabase(*f, "leases");
  const auto& list = std::get<std::vector<locks::LeaseView>>(listed);

  if (ctx.json()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& l : list) {
      out.push_back({{"name", l.name},
                     {"state", l.live     ? "held"
                               : l.holder ? "lapsed"
                                          : "released"},
                     {"holder", l.holder ? nlohmann::json(*l.holder) : nlohmann::json(nullptr)},
                     {"token", l.token},
                     {"expires_at", l.expires_at.empty() ? nlohmann::json(nullptr)
                                                         : nlohmann::json(l.expires_at)},
                     {"granted_at", l.granted_at}});
    }
    ctx.PrintJson({{"leases", out}});
    return kExitOk;
  }
  if (list.empty()) {
    ctx.out() << "no leases\n";
    return kExitOk;
  }
  Table table({"LEASE", "STATE", "HOLDER", "TOKEN", "EXPIRES", "GRANTED"});
  for (const auto& l : list) {
    std::string expires;
    if (l.expires_in_seconds)
      expires = l.expires_at + " (" + FormatOffset(*l.expires_in_seconds) + ")";
    table.AddRow({l.name,
                  l.live     ? "held"
                  : l.holder ? "lapsed"
                             : "released",
                  l.holder.value_or(""), std::to_string(l.token), expires, l.granted_at});
  }
  table.Print(ctx.out());
  return kExitOk;
}

}  // namespace

void RegisterLeasesCommand(CommandRegistry& registry) {
  registry.Add({"leases",
                "list TTL leases: holder, fencing token, expiry",
                kLeasesUsage,
                {},
                0,
                0,
                "leases takes no arguments",
                Leases});
}

}  // namespace paintlock::admin
