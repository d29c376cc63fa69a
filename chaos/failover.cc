#include "chaos/failover.h"

#include <algorithm>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <sstream>

namespace paintlock::chaos {

namespace {

using nlohmann::json;

bool IsWrite(StepKind k) {
  switch (k) {
    case StepKind::kCheckout:
    case StepKind::kReserve:
    case StepKind::kDelete:
    case StepKind::kTopUp:
    case StepKind::kCreditHold:
    case StepKind::kCreditCommit:
    case StepKind::kCreditRelease:
    case StepKind::kQuotaConsume:
    case StepKind::kLeaseAcquire:
    case StepKind::kLeaseRenew:
    case StepKind::kLeaseRelease:
      return true;
    default:
      return false;
  }
}

bool Is2xx(int status) { return status >= 200 && status < 300; }

std::string Fixed(double v, int precision) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(precision);
  o << v;
  return o.str();
}

// An acknowledged write: its id and when the acknowledgement came.
struct Acked {
  std::string id;
  double at_unix = 0;
};

class Tallier {
 public:
  explicit Tallier(const std::vector<KillOutage>& kills) : kills_(kills) {}

  Tally Count(const std::string& what, const std::vector<Acked>& acked,
              const std::set<std::string>& present) const {
    Tally t;
    t.what = what;
    t.before_kill.assign(kills_.size(), 0);
    for (const Acked& a : acked) {
      ++t.acknowledged;
      for (size_t k = 0; k < kills_.size(); ++k) {
        if (a.at_unix < kills_[k].killed_unix) ++t.before_kill[k];
      }
      if (!present.count(a.id)) t.lost.push_back(a.id);
    }
    return t;
  }

 private:
  const std::vector<KillOutage>& kills_;
};

std::set<std::string> Column(pqxx::nontransaction& n, const std::string& sql) {
  std::set<std::string> out;
  for (const auto& row : n.exec(sql)) out.insert(row[0].is_null() ? "" : row[0].as<std::string>());
  return out;
}

// The sales Stripe was told were applied: deliveries of a paid completion or a
// succeeded delayed payment that a gateway answered 2xx. Ids are reservation ids.
std::vector<Acked> AckedSales(const json& events) {
  std::vector<Acked> out;
  if (!events.is_array()) return out;
  std::set<std::string> seen;
  for (const json& e : events) {
    const std::string type = e.value("type", "");
    const json object = e.contains("data") ? e["data"].value("object", json::object()) : json();
    if (!object.is_object() || e.value("delivered", 0) <= 0) continue;
    const bool paid =
        (type == "checkout.session.completed" && object.value("payment_status", "") == "paid") ||
        type == "checkout.session.async_payment_succeeded";
    const std::string rid = object.value("client_reference_id", "");
    if (!paid || rid.empty() || !seen.insert(rid).second) continue;
    out.push_back({rid, e.value("created", 0.0)});
  }
  return out;
}

}  // namespace

std::vector<KillOutage> MeasureOutages(const std::vector<Answer>& answers) {
  std::vector<KillOutage> kills;
  for (const Answer& a : answers) {
    if (a.step.kind != StepKind::kKillPrimary) continue;
    KillOutage k;
    k.step = a.step.index;
    k.injected = !a.skipped && a.status != 0 && a.body.is_object();
    if (k.injected) {
      k.node = a.body.value("node", "");
      k.killed_unix = a.body.value("killed_unix", 0.0);
    } else if (a.skipped) {
      k.not_carried_out = a.skip_reason;
    } else {
      k.not_carried_out = a.body.is_object() ? a.body.value("not_carried_out", "no reason given")
                                             : "no reason given";
    }
    kills.push_back(k);
  }
  for (KillOutage& k : kills) {
    if (!k.injected) continue;
    for (int gw = 0; gw < 2; ++gw) {
      const Answer* first = nullptr;
      for (const Answer& a : answers) {
        if (a.skipped || a.step.gw != gw || !IsWrite(a.step.kind) ||
            a.started_unix <= k.killed_unix || !Is2xx(a.status)) {
          continue;
        }
        if (!first || a.ended_unix < first->ended_unix) first = &a;
      }
      GatewayOutage& o = k.gateway[gw];
      if (first) o.seconds = first->ended_unix - k.killed_unix;
      for (const Answer& a : answers) {
        if (!a.skipped && a.step.gw == gw && IsWrite(a.step.kind) &&
            a.started_unix > k.killed_unix && !Is2xx(a.status) &&
            (!first || a.ended_unix <= first->ended_unix)) {
          ++o.failed_meanwhile;
        }
      }
    }
  }
  return kills;
}

std::vector<NodeState> ReadNodes(const std::vector<std::string>& node_urls) {
  std::vector<NodeState> nodes;
  for (const std::string& url : node_urls) {
    NodeState node;
    node.url = url;
    try {
      pqxx::connection c(url);
      pqxx::nontransaction n(c);
      const auto row = n.exec1(
          "SELECT pg_is_in_recovery(), count(*) FILTER (WHERE application_name = "
          "'paintlock-availability'), count(*) FILTER (WHERE application_name LIKE 'paintlock%') "
          "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
      node.reachable = true;
      node.primary = !row[0].as<bool>();
      node.listeners = row[1].as<int>();
      node.paintlock = row[2].as<int>();
    } catch (const std::exception&) {
      // A node still rejoining: it serves nobody.
    }
    nodes.push_back(node);
  }
  return nodes;
}

FailoverReport CheckFailover(const CheckInput& in, double max_outage_seconds,
                             const std::vector<std::string>& node_urls, int gateways) {
  FailoverReport r;
  r.result.name = "8. after each primary kill every gateway acknowledges a write within " +
                  Fixed(max_outage_seconds, 0) + " s; nothing acknowledged is lost";
  r.kills = MeasureOutages(in.answers);
  auto violation = [&](const std::string& detail, std::vector<std::string> tags) {
    r.result.violations.push_back({detail, std::move(tags)});
  };
  const bool any_kill =
      std::any_of(r.kills.begin(), r.kills.end(), [](const KillOutage& k) { return k.injected; });
  if (r.kills.empty()) violation("no primary was killed (the run is too short)", {});
  for (const KillOutage& k : r.kills) {
    if (!k.injected) {
      // Not the gateways' doing (see failover.h); fatal only when no kill was made.
      if (!any_kill) {
        violation("kill #" + std::to_string(k.step) + " was not carried out (" + k.not_carried_out +
                      "), and no other was",
                  {});
      }
      continue;
    }
    for (int gw = 0; gw < 2; ++gw) {
      ++r.result.checked;
      const GatewayOutage& o = k.gateway[gw];
      const std::string who = std::string("gateway ") + (gw ? "B" : "A");
      if (!o.seconds) {
        violation(who + " acknowledged no write after kill #" + std::to_string(k.step), {});
      } else if (*o.seconds > max_outage_seconds) {
        violation(
            who + " needed " + Fixed(*o.seconds, 2) + " s after kill #" + std::to_string(k.step),
            {});
      }
    }
  }

  std::vector<Acked> reservations, holds, topups;
  for (const Answer& a : in.answers) {
    if (a.skipped) continue;
    const StepKind kind = a.step.kind;
    if ((kind == StepKind::kCheckout || kind == StepKind::kReserve) && a.status == 201) {
      reservations.push_back({a.reservation_id, a.ended_unix});
    } else if (kind == StepKind::kCreditCommit && a.status == 200) {
      holds.push_back({a.hold_id, a.ended_unix});
    } else if (kind == StepKind::kTopUp && a.status == 200) {
      topups.push_back({a.step.key + "/" + a.step.holder, a.ended_unix});
    }
  }
  try {
    pqxx::connection c(in.database_url);
    pqxx::nontransaction n(c);
    const Tallier tallier(r.kills);
    r.tallies.push_back(tallier.Count("reservations (201)", reservations,
                                      Column(n, "SELECT id::text FROM reservations")));
    r.tallies.push_back(
        tallier.Count("sales (webhook 2xx)", AckedSales(in.stripe_events),
                      Column(n,
                             "SELECT id::text FROM reservations "
                             "WHERE state IN ('sold', 'refund_pending', 'refunded')")));
    r.tallies.push_back(
        tallier.Count("committed holds (200)", holds,
                      Column(n, "SELECT id::text FROM credit_holds WHERE state = 'committed'")));
    r.tallies.push_back(
        tallier.Count("top-ups (200)", topups,
                      Column(n, "SELECT account_id || '/' || idempotency_key FROM credit_topups")));
  } catch (const std::exception& e) {
    violation(std::string("the failover check could not read the database: ") + e.what(), {});
  }
  for (const Tally& t : r.tallies) {
    r.result.checked += t.acknowledged;
    for (const std::string& id : t.lost) violation(t.what + ": " + id + " is lost", {id});
  }
  if (!node_urls.empty()) {
    r.nodes = ReadNodes(node_urls);
    int primaries = 0;
    for (const NodeState& node : r.nodes) {
      ++r.result.checked;
      if (node.primary) {
        ++primaries;
        if (node.listeners != gateways) {
          violation("the primary " + node.url + " has " + std::to_string(node.listeners) +
                        " availability listeners, not one per gateway (" +
                        std::to_string(gateways) + ")",
                    {});
        }
      } else if (node.paintlock > 0) {
        violation("the standby " + node.url + " serves " + std::to_string(node.paintlock) +
                      " paintlock connections",
                  {});
      }
    }
    if (primaries != 1) {
      violation("the cluster ended with " + std::to_string(primaries) + " primaries", {});
    }
  }
  return r;
}

std::string FailoverReport::Render(double max_outage_seconds) const {
  std::ostringstream o;
  o << "## failover (primary kills)\n";
  for (const KillOutage& k : kills) {
    o << "  kill #" << k.step << ": ";
    if (!k.injected) {
      o << "not carried out: " << k.not_carried_out << " (no gateway's doing; not judged)\n";
      continue;
    }
    o << "primary " << k.node << " SIGKILLed\n";
    for (int gw = 0; gw < 2; ++gw) {
      const GatewayOutage& g = k.gateway[gw];
      o << "    gateway " << (gw ? "B" : "A") << ": outage "
        << (g.seconds ? Fixed(*g.seconds, 2) + " s" : std::string("NEVER ENDED"))
        << (g.seconds && *g.seconds <= max_outage_seconds ? "" : "  FAIL") << " ("
        << g.failed_meanwhile << " writes failed meanwhile)\n";
    }
  }
  for (const NodeState& n : nodes) {
    o << "  node " << n.url << ": "
      << (!n.reachable ? std::string("unreachable")
                       : std::string(n.primary ? "primary" : "standby") + ", " +
                             std::to_string(n.paintlock) + " paintlock connections (" +
                             std::to_string(n.listeners) + " availability listeners)")
      << "\n";
  }
  o << "  acknowledged, and present on the final primary:\n";
  for (const Tally& t : tallies) {
    std::string before;  // per kill that was made
    for (size_t k = 0; k < t.before_kill.size(); ++k) {
      if (!kills[k].injected) continue;
      before += (before.empty() ? "" : ", ") + std::to_string(t.before_kill[k]) + " before kill #" +
                std::to_string(kills[k].step);
    }
    o << "    " << t.what << ": " << t.acknowledged << " acknowledged"
      << (before.empty() ? "" : " (" + before + ")") << ", "
      << t.acknowledged - static_cast<int>(t.lost.size()) << " present, " << t.lost.size()
      << " lost\n";
  }
  o << "\n";
  return o.str();
}

}  // namespace paintlock::chaos
