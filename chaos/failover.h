// What the HA campaign (CampaignShape::ha) adds to the checker: for every
// primary kill, how long each gateway took to acknowledge a write again, and
// whether everything acknowledged before it is on the primary the cluster
// ended with.
//
// An outage is measured per gateway from the SIGKILL (fixtures/ha/cluster.sh
// notes the moment just before it) to the end of the first write that started
// after the kill and was answered 2xx. "Acknowledged" means: a checkout or
// reservation answered 201 (the reservation), a webhook delivery of a paid
// completion or a succeeded delayed payment answered 2xx (the sale: the
// reservation ends sold, or refunded when the painting had gone to someone
// else), a hold commit answered 200 (the committed hold), a top-up answered 200.
//
// A scheduled kill the rig could not carry out (the cluster had no primary with
// a sync standby within 30 s, or no primary answered) says nothing about the
// gateways: the report names it and why, and the run is judged on the kills
// that were made. A run in which no kill was made fails: it tested nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chaos/checker.h"

namespace paintlock::chaos {

struct GatewayOutage {
  std::optional<double> seconds;  // nullopt: no write was acknowledged after the kill
  int failed_meanwhile = 0;       // writes that started after the kill and were not 2xx before
};

struct KillOutage {
  int step = 0;
  bool injected = false;
  std::string not_carried_out;  // when not injected: why (the rig's words)
  std::string node;             // host:port of the killed primary
  double killed_unix = 0;
  GatewayOutage gateway[2];
};

// The kills of a run and each gateway's outage; pure.
std::vector<KillOutage> MeasureOutages(const std::vector<Answer>& answers);

// One kind of acknowledged write: how many there were before each kill (in
// kill order) and in all, and which are missing from the database.
struct Tally {
  std::string what;
  std::vector<int> before_kill;
  int acknowledged = 0;
  std::vector<std::string> lost;  // ids
};

// What one node of the cluster serves at the end.
struct NodeState {
  std::string url;
  bool reachable = false, primary = false;
  int listeners = 0;  // availability listeners (application_name paintlock-availability)
  int paintlock = 0;  // every paintlock connection (pool, listener, paintlockctl)
};

struct FailoverReport {
  std::vector<KillOutage> kills;
  std::vector<Tally> tallies;  // reservations, sales, committed holds, top-ups
  std::vector<NodeState> nodes;
  InvariantResult result;  // the eighth invariant
  std::string Render(double max_outage_seconds) const;
};

// Reads the database of in.database_url (and in.stripe_events), and the shop's
// database on each of node_urls (one per cluster node). Never throws: a
// database that cannot be read is a violation. Fails a kill that was not
// carried out, a gateway slower than max_outage_seconds, anything lost, a
// cluster without exactly one primary, a primary without `gateways`
// availability listeners (each reconnected after the kills), and any paintlock
// connection on a standby.
FailoverReport CheckFailover(const CheckInput& in, double max_outage_seconds,
                             const std::vector<std::string>& node_urls = {}, int gateways = 2);

}  // namespace paintlock::chaos
