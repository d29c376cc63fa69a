// paintlockctl licenses: the licences Stripe subscriptions gave, and — for
// the seller who holds PAINTLOCK_LICENSE_SECRET — their keys, which are
// derived, never stored (locks/licenses.h).
#include "admin/commands.h"
#include "admin/table.h"
#include "locks/licenses.h"

namespace paintlock::admin {

namespace {

constexpr const char* kLicensesUsage =
    R"(Usage: paintlockctl licenses [--customer ID] [--keys] [--json]

Lists every licence, newest first: its Stripe subscription and customer, the
subscription's status, whether the licence lifts quotas now (ACTIVE), the end
of the paid period, and the time of the Stripe event it was last updated from.

A licence key is derived from the subscription id with PAINTLOCK_LICENSE_SECRET
and never stored; the database holds only its SHA-256. With --keys, and the
gateways' PAINTLOCK_LICENSE_SECRET in the environment, the keys are shown so
they can be sent to their customers. A key that does not match the stored hash
(the secret was changed since the licence was created) is shown as
"secret differs": that licence's key can no longer be shown.

A cancelled subscription stops its key at every gateway within
PAINTLOCK_LICENSE_CACHE_SECONDS (default 45 s).

Options:
  --customer ID   only this Stripe customer's licences (cus_…)
  --keys          show each licence's key (needs PAINTLOCK_LICENSE_SECRET)

Examples:
  paintlockctl licenses
  PAINTLOCK_LICENSE_SECRET=… paintlockctl licenses --customer cus_Q3 --keys
  paintlockctl licenses --json
)";

int Licenses(CommandContext& ctx) {
  const auto customer = ctx.args().Value("customer");
  std::optional<std::string> secret;
  if (ctx.args().Has("keys")) {
    secret = ctx.env().Lookup("PAINTLOCK_LICENSE_SECRET");
    if (!secret) {
      return ctx.Fail(
          "--keys needs PAINTLOCK_LICENSE_SECRET, the secret the gateways derive keys with");
    }
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  auto rows = locks::LicenseStore(*db).List();
  if (auto* f = std::get_if<locks::DbFailure>(&rows)) return ctx.FailDatabase(*f, "licenses");

  nlohmann::json licenses = nlohmann::json::array();
  for (auto l : std::get<nlohmann::json>(rows)) {
    if (customer && l["customer_id"] != *customer) continue;
    const std::string digest = l["key_sha256"];
    l.erase("key_sha256");
    if (secret) {
      const std::string key = locks::DeriveLicenseKey(*secret, l["subscription_id"]);
      const bool matches = locks::LicenseKeyDigest(key) == digest;
      l["key"] = matches ? nlohmann::json(key) : nlohmann::json();
      l["key_matches_secret"] = matches;
    }
    licenses.push_back(l);
  }
  int active = 0;
  for (const auto& l : licenses) active += l["active"].get<bool>() ? 1 : 0;
  if (ctx.json()) {
    ctx.PrintJson({{"licenses", licenses}, {"count", licenses.size()}, {"active", active}});
    return kExitOk;
  }
  if (licenses.empty()) {
    ctx.out() << "no licences" << (customer ? " for " + *customer : "") << "\n";
    return kExitOk;
  }
  std::vector<std::string> headers = {"SUBSCRIPTION", "CUSTOMER",   "STATUS",
                                      "ACTIVE",       "PERIOD END", "UPDATED FROM EVENT OF"};
  if (secret) headers.push_back("KEY");
  Table table(headers);
  for (const auto& l : licenses) {
    std::vector<std::string> cells = {Cell(l["subscription_id"]),
                                      Cell(l["customer_id"]),
                                      Cell(l["status"]),
                                      l["active"].get<bool>() ? "yes" : "no",
                                      Cell(l["current_period_end"]),
                                      Cell(l["updated_from_event_created"])};
    if (secret) cells.push_back(l["key"].is_null() ? "(secret differs)" : Cell(l["key"]));
    table.AddRow(cells);
  }
  table.Print(ctx.out());
  ctx.out() << "\n"
            << licenses.size() << (licenses.size() == 1 ? " licence, " : " licences, ") << active
            << " active\n";
  return kExitOk;
}

}  // namespace

void RegisterLicensesCommand(CommandRegistry& registry) {
  registry.Add({"licenses",
                "list subscription licences (and their keys, with --keys)",
                kLicensesUsage,
                {{"customer", true}, {"keys", false}},
                0,
                0,
                "licenses takes no arguments",
                Licenses});
}

}  // namespace paintlock::admin
