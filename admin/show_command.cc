// paintlockctl show: the whole story of a painting, a reservation or a Stripe
// session — catalogue entry, lock row, reservations, the Stripe events
// received and the audit entries — merged in time order.
#include <algorithm>

#include "admin/commands.h"
#include "admin/duration.h"
#include "admin/table.h"
#include "locks/operator_queries.h"
#include "locks/reservations.h"

namespace paintlock::admin {

namespace {

constexpr const char* kShowUsage = R"(Usage: paintlockctl show PAINTING|RESERVATION|SESSION [--json]

Tells the whole story of one painting (by id), one reservation (by its UUID)
or one Stripe Checkout Session (cs_…): the catalogue entry and lock row, every
reservation involved with its items and whether it still holds them (and, for
a sale, what was refunded at Stripe, any dispute of its payment, and the
buyer's name, email, phone and shipping address from the completed session), the
Stripe events received (stripe_events) and the audit entries, merged in time
order. Times are UTC.

Examples:
  paintlockctl show p7
  paintlockctl show 0b6c2f3e-6a55-4d8e-9a43-6f0f2b8c1d2e
  paintlockctl show cs_test_a1b2c3 --json
)";

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::vector<std::string> PaintingsOf(const nlohmann::json& reservation) {
  std::vector<std::string> out;
  if (reservation["items"].is_array()) {
    for (const auto& item : reservation["items"])
      out.push_back(item["painting"].get<std::string>());
  }
  return out;
}

// Each reservation's life (created, sold, released), each event and each
// audit entry as one line, in time order; ties keep that order.
nlohmann::json Timeline(const locks::StoryRows& s) {
  nlohmann::json lines = nlohmann::json::array();
  auto add = [&](const nlohmann::json& at, const std::string& source, const std::string& what,
                 const std::string& detail, const nlohmann::json& reservation,
                 const nlohmann::json& session) {
    if (at.is_null()) return;
    lines.push_back({{"at", at},
                     {"source", source},
                     {"what", what},
                     {"detail", detail},
                     {"reservation_id", reservation},
                     {"session_id", session}});
  };
  for (const auto& r : s.reservations) {
    add(r["created_at"], "reservation", "created",
        "holds " + Join(PaintingsOf(r), ", ") + " for " +
            std::to_string(r["amount_minor"].get<long long>()) + " " + Cell(r["currency"]) +
            " until " + Cell(r["held_until"]),
        r["id"], r["stripe_session_id"]);
    add(r["sold_at"], "reservation", "sold", "payment " + Cell(r["payment_intent"]), r["id"],
        r["stripe_session_id"]);
    const std::string state = r["state"].get<std::string>();
    const bool release_audited = std::any_of(s.audit.begin(), s.audit.end(), [&](const auto& a) {
      return a["reservation_id"] == r["id"] && a["action"] == "release";
    });
    // A take-over releases a lapsed reservation without an audit entry.
    if ((state == "released" && !release_audited) || state == "refunded") {
      add(r["updated_at"], "reservation", state, Cell(r["released_reason"]), r["id"],
          r["stripe_session_id"]);
    }
  }
  for (const auto& e : s.events) {
    add(e["received_at"], "stripe", Cell(e["type"]), Cell(e["id"]) + " → " + Cell(e["outcome"]),
        e["reservation_id"], e["session_id"]);
  }
  for (const auto& a : s.audit) {
    std::string detail = "by " + Cell(a["actor"]);
    if (!a["reason"].is_null()) detail += ": " + Cell(a["reason"]);
    if (a["details"].is_object() && !a["details"].empty()) detail += " " + a["details"].dump();
    add(a["at"], "audit", Cell(a["action"]), detail, a["reservation_id"], a["session_id"]);
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const nlohmann::json& a, const nlohmann::json& b) {
                     return a["at"].get<std::string>() < b["at"].get<std::string>();
                   });
  return lines;
}

std::string LockOf(const nlohmann::json& reservation, const nlohmann::json& item) {
  if (item["lock_holder"].is_null()) return "lock free";
  if (item["lock_holder"] == reservation["id"] && item["lock_fence"] == item["fence"]) {
    return "lock names it";
  }
  return "lock now with " + Cell(item["lock_holder"]);
}

// The disputes of a sale's payment at Stripe, one phrase each: "dp_… lost
// (fraudulent, 5000 eur), opened …, closed …"; empty when there are none.
std::string DisputesOf(const nlohmann::json& r) {
  std::vector<std::string> out;
  if (!r["disputes"].is_array()) return "";
  for (const auto& d : r["disputes"]) {
    std::string line = Cell(d["id"]) + " " + Cell(d["status"]) + " (" + Cell(d["reason"]) + ", " +
                       std::to_string(d["amount_minor"].get<long long>()) + " " +
                       Cell(d["currency"]) + "), opened " + Cell(d["opened_at"]);
    if (d["closed"].get<bool>()) line += ", closed " + Cell(d["closed_at"]);
    out.push_back(line);
  }
  return Join(out, "; ");
}

// The buyer's details a completed session gave (sale_contacts): "name
// <email>, phone" and the shipping address on one line; empty when none;
// when they were forgotten (paintlockctl contacts forget), since when.
std::pair<std::string, std::string> BuyerLines(const nlohmann::json& r) {
  const nlohmann::json& c = r["buyer_contact"];
  if (!c.is_object()) return {};
  if (!c["forgotten_at"].is_null()) {
    const std::string forgotten = "(forgotten " + Cell(c["forgotten_at"]) + ")";
    return {forgotten, forgotten};
  }
  std::string buyer = Cell(c["name"]);
  if (!c["email"].is_null()) buyer += (buyer.empty() ? "" : " ") + ("<" + Cell(c["email"]) + ">");
  if (!c["phone"].is_null()) buyer += (buyer.empty() ? "" : ", ") + Cell(c["phone"]);
  std::vector<std::string> parts;
  for (const char* key :
       {"shipping_name", "line1", "line2", "postal_code", "city", "state", "country"}) {
    if (!c[key].is_null()) parts.push_back(Cell(c[key]));
  }
  return {buyer, Join(parts, ", ")};
}

void PrintReservation(std::ostream& out, const nlohmann::json& r) {
  std::string state = r["state"].get<std::string>();
  if (!r["released_reason"].is_null()) state += " (" + Cell(r["released_reason"]) + ")";
  if (!r["condition"].is_null()) state += ", " + Cell(r["condition"]);
  out << "reservation " << Cell(r["id"]) << "  " << state << "\n";
  std::vector<std::string> items;
  for (const auto& item : r["items"]) {
    items.push_back(Cell(item["painting"]) + " (fence " +
                    std::to_string(item["fence"].get<long long>()) + ", " + LockOf(r, item) + ")");
  }
  std::string session = Cell(r["stripe_session_id"]);
  if (!session.empty()) {
    session +=
        " (Stripe: " + (r["stripe_status"].is_null() ? "not heard" : Cell(r["stripe_status"])) +
        ", expires " + Cell(r["stripe_expires_at"]) + ")";
  }
  PrintFields(
      out,
      {{"paintings", Join(items, ", ")},
       {"amount", std::to_string(r["amount_minor"].get<long long>()) + " " + Cell(r["currency"])},
       {"buyer", Cell(r["buyer_ref"])},
       {"created", Cell(r["created_at"])},
       {"held until",
        Cell(r["held_until"]) + (r["hold_live"].get<bool>() ? " (live)" : " (lapsed)")},
       {"holds", r["holds"].get<bool>() ? "yes: every painting" : "nothing"},
       {"sold at", Cell(r["sold_at"])},
       {"session", session},
       {"payment", Cell(r["payment_intent"])},
       {"refunded at Stripe",
        r["refunded_minor"].is_null()
            ? ""
            : std::to_string(r["refunded_minor"].get<long long>()) + " " + Cell(r["currency"])},
       {"disputes", DisputesOf(r)},
       {"customer", BuyerLines(r).first},
       {"ship to", BuyerLines(r).second}});
}

int Show(CommandContext& ctx) {
  const std::string& key = ctx.arg(0);
  const std::string kind = locks::LooksLikeUuid(key)  ? "reservation"
                           : key.rfind("cs_", 0) == 0 ? "session"
                                                      : "painting";
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  std::optional<std::string> painting, reservation, session;
  if (kind == "painting") painting = key;
  if (kind == "reservation") reservation = key;
  if (kind == "session") session = key;
  auto story_or = locks::OperatorQueries(*db).Story(painting, reservation, session);
  if (auto* f = std::get_if<locks::DbFailure>(&story_or)) return ctx.FailDatabase(*f, "show");
  const locks::StoryRows& s = std::get<locks::StoryRows>(story_or);
  if (s.painting.is_null() && s.reservations.empty() && s.events.empty() && s.audit.empty()) {
    return ctx.Fail("no " + kind + " \"" + key +
                    "\" (a painting id, a reservation UUID or a cs_… session id)");
  }
  const nlohmann::json timeline = Timeline(s);
  if (ctx.json()) {
    ctx.PrintJson({{"kind", kind},
                   {"key", key},
                   {"painting", s.painting},
                   {"reservations", s.reservations},
                   {"events", s.events},
                   {"audit", s.audit},
                   {"story", timeline}});
    return kExitOk;
  }

  std::ostream& out = ctx.out();
  if (kind == "painting") {
    const auto& p = s.painting;
    out << "painting " << Cell(p["id"]) << "  \"" << Cell(p["title"]) << "\"  "
        << p["price_minor"].get<long long>() << " " << Cell(p["currency"]) << "  "
        << Cell(p["state"]) << (p["free_at"].is_null() ? "" : " until " + Cell(p["free_at"]))
        << "\n";
    std::string holder = Cell(p["holder"]);
    if (!holder.empty()) holder += " (" + Cell(p["holder_state"]) + ")";
    std::string withdrawn = Cell(p["withdrawn_at"]);
    if (!withdrawn.empty()) withdrawn += " (" + Cell(p["withdrawn_reason"]) + ")";
    PrintFields(out, {{"sold at", Cell(p["sold_at"])},
                      {"withdrawn", withdrawn},
                      {"lock holder", holder},
                      {"held until", Cell(p["held_until"])},
                      {"sold until", Cell(p["sold_until"])},
                      {"fence", std::to_string(p["fence"].get<long long>())},
                      {"created", Cell(p["created_at"])},
                      {"updated", Cell(p["updated_at"])}});
    out << "\nreservations\n";
    if (s.reservations.empty()) {
      out << "  none\n";
    } else {
      Table t({"RESERVATION", "STATE", "CONDITION", "PAINTINGS", "HOLDS", "CREATED", "SESSION",
               "STRIPE"});
      for (const auto& r : s.reservations) {
        t.AddRow({Cell(r["id"]), Cell(r["state"]), Cell(r["condition"]), Join(PaintingsOf(r), ","),
                  r["holds"].get<bool>() ? "yes" : "no", Cell(r["created_at"]),
                  Cell(r["stripe_session_id"]), Cell(r["stripe_status"])});
      }
      t.Print(out, "  ");
      for (const auto& r : s.reservations) {
        const std::string disputes = DisputesOf(r);
        if (!disputes.empty()) out << "  disputed: " << Cell(r["id"]) << ": " << disputes << "\n";
        const auto [buyer, ship_to] = BuyerLines(r);
        if (!buyer.empty()) out << "  customer: " << Cell(r["id"]) << ": " << buyer << "\n";
        if (!ship_to.empty()) out << "  ship to: " << Cell(r["id"]) << ": " << ship_to << "\n";
      }
    }
  } else {
    for (const auto& r : s.reservations) PrintReservation(out, r);
    if (s.reservations.empty()) out << "session " << key << "  (no reservation names it)\n";
  }
  out << "\nstory\n";
  if (timeline.empty()) {
    out << "  nothing has happened to it yet\n";
    return kExitOk;
  }
  Table t({"AT", "SOURCE", "WHAT", "DETAIL"});
  for (const auto& line : timeline) {
    t.AddRow({Cell(line["at"]), Cell(line["source"]), Cell(line["what"]), Cell(line["detail"])});
  }
  t.Print(out, "  ");
  return kExitOk;
}

}  // namespace

void RegisterShowCommand(CommandRegistry& registry) {
  registry.Add({"show",
                "the whole story of a painting, a reservation or a Stripe session",
                kShowUsage,
                {},
                1,
                1,
                "show takes one PAINTING, RESERVATION or SESSION",
                Show});
}

}  // namespace paintlock::admin
