// paintlockctl line / line clear: a painting's waiting line (locks/lines.h),
// and the operator's way to empty it.
#include "admin/commands.h"
#include "admin/table.h"
#include "locks/lines.h"

namespace paintlock::admin {

namespace {

constexpr const char* kLineUsage = R"(Usage: paintlockctl line PAINTING [--json]

Shows PAINTING's waiting line in order of joining: every entry still waiting
with its position and claim window (your_turn: its window runs now, and only
its line token may reserve the painting), then the last entries that stopped
waiting (claimed, passed, left, closed). Windows are computed from the
database clock, as the gateway computes them. Visitors are shown by the first
characters of their hash; line tokens are never stored, so never shown.

Example:
  paintlockctl line p7
)";

constexpr const char* kClearUsage =
    R"(Usage: paintlockctl line clear PAINTING --reason TEXT [--json]

Empties PAINTING's waiting line: every waiting entry is closed (its holder
sees "closed") and the painting is free to anyone once no hold is live.
Audited (action line_clear) with the reason and the number closed.

Example:
  paintlockctl line clear p7 --reason "the painting is withdrawn from sale"
)";

int Line(CommandContext& ctx) {
  const std::string& painting = ctx.arg(0);
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::LineStore lines(*db, {});
  auto length = lines.Length(painting);
  if (auto* f = std::get_if<locks::DbFailure>(&length)) return ctx.FailDatabase(*f, "line");
  if (!std::get<std::optional<std::int64_t>>(length)) {
    return ctx.Fail("no painting \"" + painting + "\" in the catalogue");
  }
  auto listed = lines.List(painting);
  if (auto* f = std::get_if<locks::DbFailure>(&listed)) return ctx.FailDatabase(*f, "line");
  const auto& list = std::get<std::vector<locks::LineListEntry>>(listed);
  const std::int64_t waiting = *std::get<std::optional<std::int64_t>>(length);

  if (ctx.json()) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : list) {
      nlohmann::json j = {{"entry", e.id},          {"state", e.state},
                          {"visitor", e.visitor},   {"joined_at", e.joined_at},
                          {"position", nullptr},    {"window_from", nullptr},
                          {"window_until", nullptr}};
      if (e.position) j["position"] = *e.position;
      if (!e.window_from.empty()) j["window_from"] = e.window_from;
      if (!e.window_until.empty()) j["window_until"] = e.window_until;
      if (!e.ended_reason.empty()) j["ended_reason"] = e.ended_reason;
      if (!e.reservation_id.empty()) j["reservation_id"] = e.reservation_id;
      entries.push_back(j);
    }
    ctx.PrintJson({{"painting", painting}, {"line_length", waiting}, {"entries", entries}});
    return kExitOk;
  }
  ctx.out() << painting << ": " << waiting << " waiting\n";
  if (list.empty()) return kExitOk;
  Table table(
      {"POS", "STATE", "ENTRY", "VISITOR", "JOINED", "WINDOW FROM", "WINDOW UNTIL", "NOTE"});
  for (const auto& e : list) {
    table.AddRow({e.position ? std::to_string(*e.position) : "-", e.state, std::to_string(e.id),
                  e.visitor, e.joined_at, e.window_from, e.window_until,
                  e.reservation_id.empty() ? e.ended_reason : "reservation " + e.reservation_id});
  }
  table.Print(ctx.out());
  return kExitOk;
}

int Clear(CommandContext& ctx) {
  auto reason = ctx.args().Value("reason");
  if (!reason) {
    return ctx.BadUsage("--reason is required: say why, e.g. --reason \"withdrawn from sale\"");
  }
  if (reason->find_first_not_of(" \t") == std::string::npos) {
    return ctx.BadUsage("--reason must not be blank");
  }
  const std::string& painting = ctx.arg(0);
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::LineStore lines(*db, {});
  auto cleared = lines.Clear(painting, *reason, "paintlockctl");
  if (auto* f = std::get_if<locks::DbFailure>(&cleared)) {
    return ctx.FailDatabase(*f, "line clear " + painting);
  }
  const auto& c = std::get<std::optional<locks::LineCleared>>(cleared);
  if (!c) return ctx.Fail("no painting \"" + painting + "\" in the catalogue");
  if (ctx.json()) {
    ctx.PrintJson({{"painting", painting}, {"closed", c->closed}});
  } else {
    ctx.out() << painting << ": line cleared, " << c->closed << " waiting entr"
              << (c->closed == 1 ? "y" : "ies") << " closed\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterLineCommands(CommandRegistry& registry) {
  registry.Add({"line",
                "show a painting's waiting line",
                kLineUsage,
                {},
                1,
                1,
                "line takes one PAINTING",
                Line});
  registry.Add({"line clear",
                "empty a painting's waiting line (audited)",
                kClearUsage,
                {{"reason", true}},
                1,
                1,
                "line clear takes one PAINTING",
                Clear});
}

}  // namespace paintlock::admin
