#include "chaos/rig.h"

#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <stdexcept>

namespace paintlock::chaos {

using namespace std::chrono_literals;
using nlohmann::json;

HttpAnswer Call(const std::string& base, const std::string& method, const std::string& path,
                const json& body, const httplib::Headers& headers,
                std::chrono::milliseconds read_timeout) {
  httplib::Client client(base);
  client.set_connection_timeout(2, 0);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(read_timeout);
  client.set_read_timeout(
      secs.count(),
      std::chrono::duration_cast<std::chrono::microseconds>(read_timeout - secs).count());
  client.set_write_timeout(5, 0);
  const std::string text = body.is_null() ? "" : body.dump();
  httplib::Result res = method == "GET" ? client.Get(path.c_str(), headers)
                        : method == "POST"
                            ? client.Post(path.c_str(), headers, text, "application/json")
                            : client.Delete(path.c_str(), headers);
  HttpAnswer a;
  if (!res) return a;
  a.status = res->status;
  a.body = res->body;
  a.json = json::parse(res->body, nullptr, false);
  if (a.json.is_discarded()) a.json = nullptr;
  return a;
}

namespace {

// "postgresql://hosts/NAME?…" → NAME
std::string DatabaseName(const std::string& url) {
  const auto slash = url.find('/', url.find("://") + 3);
  return url.substr(slash + 1, url.find('?', slash) - slash - 1);
}

std::map<std::string, std::string> GatewayEnv(const CampaignShape& shape) {
  return {
      {"PAINTLOCK_HOLD_SECONDS", std::to_string(shape.hold_seconds)},
      {"PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS", "60"},
      {"STRIPE_TIMEOUT_MS", std::to_string(shape.stripe_timeout_ms)},
      {"STRIPE_DEADLINE_MS", std::to_string(shape.stripe_deadline_ms())},
      {"STRIPE_MAX_RETRIES", "2"},
      {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"},
      {"PAINTLOCK_VISITOR_KEY", "chaos-visitor-key-0123456789"},
      {"PAINTLOCK_QUOTAS", "downloads:" + std::to_string(shape.quota_limit) + ":UTC"},
      {"PAINTLOCK_HTTP_THREADS", "16"},
      {"PAINTLOCK_DB_POOL", "6"},
  };
}

// Why a cluster.sh command failed, in its own words: its first "ha:" line (the
// cluster's log tails it prints after it go to the answers file whole).
std::string ClusterFailure(const std::string& command, const testing::CompletedProcess& p) {
  if (p.exit_code == -1) return command + " overran its time limit";
  std::istringstream err(p.err);
  for (std::string line; std::getline(err, line);) {
    if (line.rfind("ha: ", 0) == 0) return command + ": " + line.substr(4);
  }
  return command + " exited " + std::to_string(p.exit_code);
}

}  // namespace

Rig::Rig(const std::string& work_dir, const CampaignShape& shape)
    : cluster_dir_(work_dir + "/pg"),
      script_(testing::SourceDir() +
              (shape.ha ? "/fixtures/ha/cluster.sh" : "/fixtures/pg-cluster.sh")),
      shape_(shape) {
  // A constructor that throws runs no destructor: whatever started is stopped here.
  try {
    testing::CompletedProcess started = Cluster("start", {}, std::chrono::seconds(150));
    if (started.exit_code != 0) {
      throw std::runtime_error("PostgreSQL did not start: " + started.err);
    }
    const std::string admin_url = started.out.substr(0, started.out.find('\n'));
    // HA: the shop's database is made on the primary alone. libpq does not try a multi-host
    // URL's next host after a server's refusal, and a standby refuses a database it has not
    // replayed yet ("does not exist"), so the URL is handed out once every node has it.
    std::string create_url = admin_url;
    if (shape.ha) {
      const auto primary = Cluster("primary");
      if (primary.exit_code != 0) throw std::runtime_error("no primary: " + primary.err);
      create_url = "postgresql://" + primary.out.substr(0, primary.out.find('\n')) +
                   "/postgres?user=postgres&connect_timeout=2";
    }
    setenv("PAINTLOCK_TEST_ADMIN_URL", create_url.c_str(), 1);
    std::map<std::string, long long> paintings;
    for (int i = 1; i <= shape.paintings; ++i) paintings["p" + std::to_string(i)] = 1000 + 10 * i;
    db_ = std::make_unique<testing::TestDatabase>(paintings);
    // The database is dropped (at the end) through whichever node is primary then.
    setenv("PAINTLOCK_TEST_ADMIN_URL", admin_url.c_str(), 1);
    database_url_ = db_->url();
    if (shape.ha) {
      const std::string name = DatabaseName(db_->url());
      database_url_ = admin_url;
      database_url_.replace(database_url_.find("/postgres?"), 10, "/" + name + "?");
      if (!EveryNodeHas()) throw std::runtime_error("a standby never had the shop's database");
    }
    pool_url_ = database_url_;
    if (shape.ha && shape.pgbouncer) {
      const auto bouncer = testing::RunToCompletion(
          {testing::SourceDir() + "/fixtures/ha/pgbouncer.sh", "start", cluster_dir_},
          {{"PAINTLOCK_PGBOUNCER_QUERY_WAIT_SECONDS",
            std::to_string(shape.pgbouncer_query_wait_seconds)}},
          60s);
      if (bouncer.exit_code != 0)
        throw std::runtime_error("PgBouncer did not start: " + bouncer.err);
      pool_url_ = bouncer.out.substr(0, bouncer.out.find('\n'));
      pool_url_.replace(pool_url_.find("/postgres?"), 10, "/" + DatabaseName(database_url_) + "?");
    }

    relay_.Post("/hook",
                [this](const httplib::Request& req, httplib::Response& res) { Relay(req, res); });
    relay_port_ = relay_.bind_to_any_port("127.0.0.1");
    if (relay_port_ <= 0) throw std::runtime_error("the webhook relay could not bind");
    relay_thread_ = std::thread([this] { relay_.listen_after_bind(); });

    stripe_ = std::make_unique<testing::FakeStripe>(
        "http://127.0.0.1:" + std::to_string(relay_port_) + "/hook");
    for (int gw = 0; gw < 2; ++gw) {
      gateway_ports_[gw] = testing::FreeLoopbackPort();
      if (!StartGateway(gw)) throw std::runtime_error("a gateway did not start");
    }
  } catch (...) {
    Stop();
    throw;
  }
}

Rig::~Rig() { Stop(); }

void Rig::Stop() {
  for (int gw = 0; gw < 2; ++gw) {
    std::lock_guard<std::mutex> lock(gateway_mu_[gw]);
    gateways_[gw].reset();
  }
  stripe_.reset();
  relay_.stop();
  if (relay_thread_.joinable()) relay_thread_.join();
  db_.reset();
  Cluster("stop");
  // And the run's folder, once empty; the cluster's data may live where a link points.
  testing::RunToCompletion(
      {"/bin/sh", "-c",
       "for d in cluster ha; do [ -L \"$0/$d\" ] && rm -rf \"$(readlink -f "
       "\"$0/$d\")\"; done; rm -rf \"$0\"; rmdir \"${0%/*}\" 2>/dev/null || true",
       cluster_dir_},
      {});
}

testing::CompletedProcess Rig::Cluster(const std::string& command,
                                       const std::vector<std::string>& args,
                                       std::chrono::seconds timeout) {
  std::vector<std::string> argv = {script_, command, cluster_dir_};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunToCompletion(argv, {}, timeout);
}

std::string Rig::GatewayBase(int gw) const {
  return "http://127.0.0.1:" + std::to_string(gateway_ports_[gw]);
}

bool Rig::KillGateway(int gw) {
  std::lock_guard<std::mutex> lock(gateway_mu_[gw]);
  if (!gateways_[gw]) return false;
  gateways_[gw]->process().Signal(SIGKILL);
  gateways_[gw]->process().Wait(5s);
  gateways_[gw].reset();
  return true;
}

bool Rig::StartGateway(int gw) {
  std::lock_guard<std::mutex> lock(gateway_mu_[gw]);
  if (gateways_[gw] && gateways_[gw]->process().Running()) return true;
  gateways_[gw].reset();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      auto env = GatewayEnv(shape_);
      env["DATABASE_URL"] = pool_url_;
      if (pool_url_ != database_url_) {
        // Transaction pooling: no named statements, and LISTEN needs a session of its own.
        env["PAINTLOCK_DB_STATEMENTS"] = "unnamed";
        env["PAINTLOCK_LISTEN_DATABASE_URL"] = database_url_;
      }
      gateways_[gw] = std::make_unique<testing::Gateway>(
          *db_, stripe_->base(), testing::GatewayOptions{env, gateway_ports_[gw]});
      return true;
    } catch (...) {
      // PostgreSQL restarting, or the port still closing: try again shortly. (A gateway
      // that never listens ends in the harness's FAIL, which throws doctest's
      // TestFailureException, no std::exception: seed 5547558779376840138 restarted a
      // gateway while PostgreSQL was stopped, and the run ended in std::terminate.)
      std::this_thread::sleep_for(500ms);
    }
  }
  return false;
}

bool Rig::RestartPostgres(bool immediate) {
  if (shape_.ha) return false;  // a new cluster would be a new, empty database
  std::lock_guard<std::mutex> lock(pg_mu_);
  // An immediate stop is a crash (recovery at start).
  const auto stopped = Cluster("stop", {immediate ? "immediate" : "fast"});
  // Start again whatever the stop said: the campaign must go on with a database.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (Cluster("start").exit_code == 0) {
      return stopped.exit_code == 0;
    }
    std::this_thread::sleep_for(1s);
  }
  return false;
}

bool Rig::EnsurePostgres() {
  if (shape_.ha) return StartKilledNodes() && Cluster("wait-ready", {"60"}, 70s).exit_code == 0;
  std::lock_guard<std::mutex> lock(pg_mu_);
  return Cluster("start").exit_code == 0;
}

Rig::Kill Rig::KillPrimary() {
  std::lock_guard<std::mutex> lock(pg_mu_);
  Kill k;
  const testing::CompletedProcess ready = Cluster("wait-ready", {"30"}, 40s);
  if (ready.exit_code != 0) {
    k.failure = ClusterFailure("wait-ready", ready);
    k.cluster_log = ready.err;
    return k;
  }
  const testing::CompletedProcess killed = Cluster("kill-primary", {}, 20s);
  if (killed.exit_code != 0) {
    k.failure = ClusterFailure("kill-primary", killed);
    k.cluster_log = killed.err;
    return k;
  }
  // cluster.sh notes the moment just before its first SIGKILL.
  std::ifstream at(cluster_dir_ + "/ha/last-kill");
  if (!(at >> k.at_unix)) {
    k.failure = "kill-primary left no readable " + cluster_dir_ + "/ha/last-kill";
    return k;
  }
  k.node = killed.out.substr(0, killed.out.find('\n'));
  return k;
}

std::vector<std::string> Rig::NodeUrls() const {
  std::vector<std::string> urls;
  if (!shape_.ha) return urls;
  const std::string database = DatabaseName(database_url_);
  std::ifstream ports(cluster_dir_ + "/ha/ports.env");
  for (std::string line; std::getline(ports, line);) {
    // pg1=PORT, pg2=PORT, pg3=PORT
    if (line.size() > 4 && line.compare(0, 2, "pg") == 0 && line[3] == '=') {
      urls.push_back("postgresql://127.0.0.1:" + line.substr(4) + "/" + database +
                     "?user=postgres&connect_timeout=2");
    }
  }
  return urls;
}

bool Rig::EveryNodeHas() const {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (const std::string& url : NodeUrls()) {
    for (;;) {
      try {
        pqxx::connection c(url);
        break;
      } catch (const std::exception&) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(100ms);
      }
    }
  }
  return true;
}

bool Rig::StartKilledNodes() {
  std::lock_guard<std::mutex> lock(pg_mu_);
  return testing::RunToCompletion(
             {"/bin/sh", "-c",
              "for n in 1 2 3; do [ ! -f \"$1/ha/node$n/killed\" ] || \"$0\" start-node \"$1\" "
              "$n || exit 1; done",
              script_, cluster_dir_},
             {}, 60s)
             .exit_code == 0;
}

void Rig::DelayNextWebhooks(int n, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(relay_mu_);
  delay_next_ = n;
  delay_ = delay;
}

Rig::RelayStats Rig::relay_stats() const {
  std::lock_guard<std::mutex> lock(relay_mu_);
  return stats_;
}

void Rig::Relay(const httplib::Request& req, httplib::Response& res) {
  std::chrono::milliseconds delay{0};
  {
    std::lock_guard<std::mutex> lock(relay_mu_);
    if (delay_next_ > 0) {
      --delay_next_;
      delay = delay_;
      ++stats_.delayed;
    }
  }
  // Held back while later events pass: they arrive out of order.
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  const int first = static_cast<int>(relay_turn_++ % 2);
  httplib::Headers headers = {{"Stripe-Signature", req.get_header_value("Stripe-Signature")}};
  for (int gw : {first, 1 - first}) {
    httplib::Client client(GatewayBase(gw));
    client.set_connection_timeout(1, 0);
    client.set_read_timeout(8, 0);
    auto r = client.Post("/v1/webhooks/stripe", headers, req.body,
                         req.get_header_value("Content-Type").c_str());
    if (r) {
      std::lock_guard<std::mutex> lock(relay_mu_);
      ++stats_.forwarded;
      res.status = r->status;
      res.set_content(r->body, "application/json");
      return;
    }
  }
  std::lock_guard<std::mutex> lock(relay_mu_);
  ++stats_.unanswered;
  res.status = 503;
  res.set_content("{\"error\":\"no gateway answered\"}", "application/json");
}

testing::CompletedProcess Rig::Ctl(const std::vector<std::string>& args,
                                   std::chrono::seconds timeout) {
  std::vector<std::string> argv = {testing::BuildDir() + "/paintlockctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunToCompletion(argv,
                                  {{"DATABASE_URL", database_url_},
                                   {"STRIPE_SECRET_KEY", testing::kStripeKey},
                                   {"STRIPE_API_BASE", stripe_->base()},
                                   {"STRIPE_TIMEOUT_MS", "2000"},
                                   {"STRIPE_MAX_RETRIES", "1"}},
                                  timeout);
}

}  // namespace paintlock::chaos
