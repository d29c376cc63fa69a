// The processes a campaign runs against, all real and on loopback: a private
// PostgreSQL cluster (fixtures/pg-cluster.sh; with CampaignShape::ha an etcd and
// three Patroni nodes, fixtures/ha/cluster.sh, reached by everyone through its
// multi-host URL), one database with the
// migrations and N paintings, the fake Stripe, two paintlock gateways on
// that database, and a webhook relay that hands each event to one gateway
// (alternating; the other if the first does not answer) and can hold events
// back to reorder them.
//
// Thread-safe: faults and clients call in from many threads. Each gateway has
// its own mutex (kill and restart of one gateway are serialised); PostgreSQL
// restarts are serialised by pg_mu_.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "base/http_server.h"
#include "chaos/schedule.h"
#include "tests/support/harness.h"

namespace paintlock::chaos {

// One HTTP exchange as a client saw it; status 0: no answer.
struct HttpAnswer {
  int status = 0;
  nlohmann::json json;  // null unless the body is JSON
  std::string body;
};

// One request on a fresh connection, with bounded connect and read timeouts.
HttpAnswer Call(const std::string& base, const std::string& method, const std::string& path,
                const nlohmann::json& body = nullptr, const httplib::Headers& headers = {},
                std::chrono::milliseconds read_timeout = std::chrono::milliseconds(12000));

class Rig {
 public:
  Rig(const std::string& work_dir, const CampaignShape& shape);
  ~Rig();  // stops every process, the cluster included

  std::string GatewayBase(int gw) const;
  std::string StripeBase() const { return stripe_->base(); }
  // The shop's database; HA: through the multi-host URL, which finds the primary.
  const std::string& DatabaseUrl() const { return database_url_; }

  // Faults. Each returns false when it could not be carried out.
  bool KillGateway(int gw);
  bool StartGateway(int gw);             // no-op when it runs; retries for up to 20 s
  bool RestartPostgres(bool immediate);  // not in HA mode
  bool EnsurePostgres();  // starts the cluster if it is down; HA: every node, and a sync standby

  // HA mode. Waits (up to 30 s) for a primary with a sync standby, then SIGKILLs the primary
  // node.
  struct Kill {
    std::string node;         // the killed primary's host:port
    double at_unix = 0;       // when the SIGKILL was sent (wall clock)
    std::string failure;      // why no primary was killed (cluster.sh's words); empty when one was
    std::string cluster_log;  // then: everything cluster.sh printed (its logs' last lines)
  };
  Kill KillPrimary();
  bool StartKilledNodes();  // each rejoins as a replica
  // The shop's database on each node by itself (no target_session_attrs): for looking at
  // what each node serves. Empty outside HA mode.
  std::vector<std::string> NodeUrls() const;
  void DelayNextWebhooks(int n, std::chrono::milliseconds delay);

  // paintlockctl with the gateways' environment.
  testing::CompletedProcess Ctl(const std::vector<std::string>& args,
                                std::chrono::seconds timeout = std::chrono::seconds(60));

  struct RelayStats {
    long forwarded = 0, delayed = 0, unanswered = 0;
  };
  RelayStats relay_stats() const;

 private:
  void Relay(const httplib::Request& req, httplib::Response& res);

  // Runs the cluster script with `args` after the command word and the cluster folder.
  testing::CompletedProcess Cluster(const std::string& command,
                                    const std::vector<std::string>& args = {},
                                    std::chrono::seconds timeout = std::chrono::seconds(60));
  void Stop();  // every process, the cluster included; safe to call twice
  // HA: waits (up to 30 s) until the shop's database takes connections on every node.
  bool EveryNodeHas() const;

  std::string cluster_dir_, script_, database_url_;
  std::string pool_url_;  // the gateways' DATABASE_URL: database_url_, or PgBouncer's
  CampaignShape shape_;
  std::unique_ptr<testing::TestDatabase> db_;
  base::HttpServer relay_;
  std::thread relay_thread_;
  int relay_port_ = 0;
  std::unique_ptr<testing::FakeStripe> stripe_;
  int gateway_ports_[2] = {0, 0};
  std::mutex gateway_mu_[2];
  std::unique_ptr<testing::Gateway> gateways_[2];  // guarded by gateway_mu_[i]
  std::mutex pg_mu_;

  mutable std::mutex relay_mu_;
  int delay_next_ = 0;                  // guarded by relay_mu_
  std::chrono::milliseconds delay_{0};  // guarded by relay_mu_
  RelayStats stats_;                    // guarded by relay_mu_
  std::atomic<unsigned> relay_turn_{0};
};

}  // namespace paintlock::chaos
