// paintlockctl quota show|reset: one subject's count of one daily quota
// (locks/QUOTAS.md). The quotas are read from PAINTLOCK_QUOTAS, as the
// gateway reads them, so the limit and the day boundary are the gateway's.
#include <regex>

#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/table.h"
#include "base/visitor.h"
#include "locks/quotas.h"

namespace paintlock::admin {

namespace {

constexpr const char* kSubjectHelp = R"(SUBJECT is who is counted:
  visitor:ID      a visitor, by the id the gateway stores (32 hex digits)
  ip:ADDRESS      the visitor at ADDRESS, computed with PAINTLOCK_VISITOR_KEY
                  (the gateways' key); the address itself is never stored
  subject:NAME    a subject named by a server-to-server caller
  NAME            the same as subject:NAME

NAME is a quota of PAINTLOCK_QUOTAS (default downloads:5:UTC), read from the
environment as the gateway reads it.
)";

const std::string kQuotaShowUsage = std::string(
                                        R"(Usage: paintlockctl quota show NAME SUBJECT [--json]

Shows how many requests of quota NAME the subject has used today (the day of
the quota's time zone, on the database clock), when the count resets, and when
the subject was last counted. Counts nothing.

)") + kSubjectHelp + R"(
Examples:
  paintlockctl quota show downloads ip:203.0.113.7
  paintlockctl quota show exports user-42 --json
)";

const std::string kQuotaResetUsage =
    std::string(R"(Usage: paintlockctl quota reset NAME SUBJECT [--reason TEXT] [--json]

Forgets the subject's count of quota NAME: its next request is the first of
the day. Recorded in the audit log (action quota_reset) with the reason.
Resetting a subject that has no count changes nothing and succeeds.

Options:
  --reason TEXT   why (recorded in the audit log)

)") +
    kSubjectHelp + R"(
Examples:
  paintlockctl quota reset downloads ip:203.0.113.7 --reason "customer support #1234"
)";

// The quota named on the command line, from PAINTLOCK_QUOTAS; nullopt after
// printing why.
std::optional<locks::QuotaPolicy> QuotaOf(CommandContext& ctx, const std::string& name,
                                          int* exit_code) {
  std::vector<locks::QuotaPolicy> policies = locks::DefaultQuotaPolicies();
  if (auto text = ctx.env().Lookup("PAINTLOCK_QUOTAS")) {
    std::vector<std::string> problems;
    auto parsed = locks::ParseQuotaPolicies(*text, &problems);
    if (!parsed) {
      *exit_code = ctx.Fail("PAINTLOCK_QUOTAS: " + problems.front());
      return std::nullopt;
    }
    policies = *parsed;
  }
  for (const auto& p : policies) {
    if (p.name == name) return p;
  }
  *exit_code = ctx.BadUsage("no quota \"" + name + "\"; PAINTLOCK_QUOTAS has " +
                            locks::FormatQuotaPolicies(policies));
  return std::nullopt;
}

// SUBJECT in its stored form; nullopt after printing why.
std::optional<std::string> SubjectOf(CommandContext& ctx, const std::string& text, int* exit_code) {
  static const std::regex visitor_re("^visitor:[0-9a-f]{32}$");
  if (text.rfind("visitor:", 0) == 0) {
    if (std::regex_match(text, visitor_re)) return text;
    *exit_code = ctx.BadUsage("a visitor id is 32 lowercase hex digits: visitor:ID");
    return std::nullopt;
  }
  if (text.rfind("ip:", 0) == 0) {
    const std::string address = text.substr(3);
    if (!base::Network::Parse(address) || address.find('/') != std::string::npos) {
      *exit_code = ctx.BadUsage("\"" + address + "\" is not an IP address");
      return std::nullopt;
    }
    auto key = ctx.env().Lookup("PAINTLOCK_VISITOR_KEY");
    if (!key) {
      *exit_code = ctx.Fail(
          "ip:ADDRESS needs PAINTLOCK_VISITOR_KEY, the key the gateways hash "
          "addresses with");
      return std::nullopt;
    }
    return locks::VisitorSubject(base::VisitorIdentity(*key, {}).Hash(address));
  }
  const std::string name = text.rfind("subject:", 0) == 0 ? text.substr(8) : text;
  if (const std::string problem = locks::SubjectNameProblem(name); !problem.empty()) {
    *exit_code = ctx.BadUsage(problem);
    return std::nullopt;
  }
  return locks::NamedSubject(name);
}

std::string Describe(const locks::QuotaPolicy& q) {
  return q.name + " (" + std::to_string(q.limit) + " a day, midnight " + q.time_zone + ")";
}

int QuotaShow(CommandContext& ctx) {
  int code = kExitOk;
  auto quota = QuotaOf(ctx, ctx.arg(0), &code);
  if (!quota) return code;
  auto subject = SubjectOf(ctx, ctx.arg(1), &code);
  if (!subject) return code;
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::QuotaStore store(*db, {*quota});
  auto usage = store.Usage(*quota, *subject);
  if (auto* f = std::get_if<locks::DbFailure>(&usage)) return ctx.FailDatabase(*f, "quota show");
  const auto& u = std::get<locks::QuotaUsage>(usage);
  if (ctx.json()) {
    ctx.PrintJson(
        {{"quota", quota->name},
         {"time_zone", quota->time_zone},
         {"subject", *subject},
         {"used", u.used},
         {"limit", u.limit},
         {"remaining", std::max(0, u.limit - u.used)},
         {"today", u.today},
         {"resets_at", u.resets_at},
         {"last_counted_at", u.last_at.empty() ? nlohmann::json() : nlohmann::json(u.last_at)}});
    return kExitOk;
  }
  PrintFields(ctx.out(),
              {{"quota", Describe(*quota)},
               {"subject", *subject},
               {"used today", std::to_string(u.used) + " of " + std::to_string(u.limit) + " (" +
                                  std::to_string(std::max(0, u.limit - u.used)) + " remaining, " +
                                  u.today + ")"},
               {"resets at", u.resets_at + " (" + FormatOffset(u.retry_after_seconds) + ")"},
               {"last counted", u.last_at.empty() ? "never" : u.last_at}},
              "");
  return kExitOk;
}

int QuotaReset(CommandContext& ctx) {
  int code = kExitOk;
  auto quota = QuotaOf(ctx, ctx.arg(0), &code);
  if (!quota) return code;
  auto subject = SubjectOf(ctx, ctx.arg(1), &code);
  if (!subject) return code;
  const auto reason = ctx.args().Value("reason");
  if (reason && reason->empty()) return ctx.BadUsage("--reason must not be empty");
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::QuotaStore store(*db, {*quota});
  auto reset = store.Reset(*quota, *subject, "paintlockctl", reason);
  if (auto* f = std::get_if<locks::DbFailure>(&reset)) return ctx.FailDatabase(*f, "quota reset");
  const int was = std::get<int>(reset);
  if (ctx.json()) {
    ctx.PrintJson(
        {{"quota", quota->name}, {"subject", *subject}, {"used_before", was}, {"used", 0}});
  } else if (was == 0) {
    ctx.out() << *subject << " has no " << quota->name << " counted today; nothing to reset\n";
  } else {
    ctx.out() << "reset " << quota->name << " for " << *subject << ": " << was
              << " used today → 0 of " << quota->limit << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterQuotaCommands(CommandRegistry& registry) {
  registry.Add({"quota show",
                "show a subject's count of a daily quota",
                kQuotaShowUsage,
                {},
                2,
                2,
                "quota show takes a quota NAME and a SUBJECT",
                QuotaShow});
  registry.Add({"quota reset",
                "forget a subject's count of a daily quota (audited)",
                kQuotaResetUsage,
                {{"reason", true}},
                2,
                2,
                "quota reset takes a quota NAME and a SUBJECT",
                QuotaReset});
}

}  // namespace paintlock::admin
