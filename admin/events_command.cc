// paintlockctl events: the stripe_events table — every Stripe event the
// gateway applied, with what applying it did.
#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/environment.h"
#include "admin/table.h"
#include "locks/operator_queries.h"

namespace paintlock::admin {

namespace {

constexpr long kDefaultLimit = 100;

constexpr const char* kEventsUsage =
    R"(Usage: paintlockctl events [--session ID] [--since DURATION|RFC3339] [--limit N] [--json]

Lists the Stripe events the gateway received and applied (stripe_events): when
each arrived, its type, session, reservation, and the outcome of applying it
(sold, released, duplicate, unknown_session, …). Shows the newest N (default
100), oldest first. Sessions retrieved by the success page, a take-over or
`paintlockctl reconcile` are not events: see `paintlockctl show`.

Options:
  --session ID      only events of this Checkout Session (cs_…)
  --since WHEN      only events received since WHEN: a duration back from now
                    (30m, 2h, 3d) or an instant (2026-05-01T12:00:00Z)
  --limit N         at most N events, the newest (1 to 100000)

Examples:
  paintlockctl events --since 2h
  paintlockctl events --session cs_test_a1b2c3 --json
)";

int Events(CommandContext& ctx) {
  const auto session = ctx.args().Value("session");
  std::optional<std::string> since_instant;
  std::optional<long long> since_seconds;
  if (auto text = ctx.args().Value("since")) {
    auto since = ParseSince(*text);
    if (!since) {
      return ctx.BadUsage(
          "--since must be a duration such as 2h or an RFC 3339 instant such as "
          "2026-05-01T12:00:00Z, got \"" +
          *text + "\"");
    }
    if (since->ago) since_seconds = since->ago->count();
    if (!since->instant.empty()) since_instant = since->instant;
  }
  long limit = kDefaultLimit;
  if (auto text = ctx.args().Value("limit")) {
    auto n = ParseBoundedInteger(*text, 1, 100000);
    if (!n)
      return ctx.BadUsage("--limit must be a whole number from 1 to 100000, got \"" + *text + "\"");
    limit = *n;
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto listed = locks::OperatorQueries(*db).Events(session, since_instant, since_seconds, limit);
  if (auto* f = std::get_if<locks::DbFailure>(&listed)) return ctx.FailDatabase(*f, "events");
  const nlohmann::json& events = std::get<nlohmann::json>(listed);
  if (ctx.json()) {
    ctx.PrintJson({{"events", events}, {"count", events.size()}});
    return kExitOk;
  }
  if (events.empty()) {
    ctx.out() << "no events" << (session || since_instant || since_seconds ? " match" : "") << "\n";
    return kExitOk;
  }
  Table table({"RECEIVED", "TYPE", "EVENT", "SESSION", "RESERVATION", "OUTCOME"});
  for (const auto& e : events) {
    table.AddRow({Cell(e["received_at"]), Cell(e["type"]), Cell(e["id"]), Cell(e["session_id"]),
                  Cell(e["reservation_id"]), Cell(e["outcome"])});
  }
  table.Print(ctx.out());
  ctx.out() << "\n"
            << events.size() << (events.size() == 1 ? " event" : " events")
            << (static_cast<long>(events.size()) == limit ? " (the newest; --limit shows more)"
                                                          : "")
            << "\n";
  return kExitOk;
}

}  // namespace

void RegisterEventsCommand(CommandRegistry& registry) {
  registry.Add({"events",
                "list the Stripe events received and what applying them did",
                kEventsUsage,
                {{"session", true}, {"since", true}, {"limit", true}},
                0,
                0,
                "events takes no arguments, only options",
                Events});
}

}  // namespace paintlock::admin
