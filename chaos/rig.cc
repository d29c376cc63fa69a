#include "chaos/rig.h"

#include <signal.h>
#include <stdlib.h>

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

std::map<std::string, std::string> GatewayEnv(const CampaignShape& shape) {
  return {
      {"PAINTLOCK_HOLD_SECONDS", std::to_string(shape.hold_seconds)},
      {"PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS", "60"},
      {"STRIPE_TIMEOUT_MS", std::to_string(shape.stripe_timeout_ms)},
      {"STRIPE_DEADLINE_MS", std::to_string(shape.stripe_timeout_ms * 3)},
      {"STRIPE_MAX_RETRIES", "2"},
      {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"},
      {"PAINTLOCK_VISITOR_KEY", "chaos-visitor-key-0123456789"},
      {"PAINTLOCK_QUOTAS", "downloads:" + std::to_string(shape.quota_limit) + ":UTC"},
      {"PAINTLOCK_HTTP_THREADS", "16"},
      {"PAINTLOCK_DB_POOL", "6"},
  };
}

}  // namespace

Rig::Rig(const std::string& work_dir, const CampaignShape& shape)
    : cluster_dir_(work_dir + "/pg"),
      script_(testing::SourceDir() + "/fixtures/pg-cluster.sh"),
      shape_(shape) {
  testing::CompletedProcess started =
      testing::RunToCompletion({script_, "start", cluster_dir_}, {});
  if (started.exit_code != 0) throw std::runtime_error("PostgreSQL did not start: " + started.err);
  const std::string admin_url = started.out.substr(0, started.out.find('\n'));
  setenv("PAINTLOCK_TEST_ADMIN_URL", admin_url.c_str(), 1);
  std::map<std::string, long long> paintings;
  for (int i = 1; i <= shape.paintings; ++i) paintings["p" + std::to_string(i)] = 1000 + 10 * i;
  db_ = std::make_unique<testing::TestDatabase>(paintings);

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
}

Rig::~Rig() {
  for (int gw = 0; gw < 2; ++gw) {
    std::lock_guard<std::mutex> lock(gateway_mu_[gw]);
    gateways_[gw].reset();
  }
  stripe_.reset();
  relay_.stop();
  if (relay_thread_.joinable()) relay_thread_.join();
  db_.reset();
  testing::RunToCompletion({script_, "stop", cluster_dir_}, {});
  testing::RunToCompletion(
      {"/bin/sh", "-c",
       "rm -rf \"$(readlink -f \"$0/cluster\")\" \"$0\"; rmdir \"${0%/*}\" 2>/dev/null || true",
       cluster_dir_},
      {});  // and the run's folder, once empty
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
      gateways_[gw] = std::make_unique<testing::Gateway>(
          *db_, stripe_->base(), testing::GatewayOptions{GatewayEnv(shape_), gateway_ports_[gw]});
      return true;
    } catch (const std::exception&) {
      // PostgreSQL restarting, or the port still closing: try again shortly.
      std::this_thread::sleep_for(500ms);
    }
  }
  return false;
}

bool Rig::RestartPostgres(bool immediate) {
  std::lock_guard<std::mutex> lock(pg_mu_);
  // pg-cluster.sh stops with -m fast; an immediate stop is a crash (recovery at start).
  const std::string stop_immediate =
      "root=$(readlink -f \"$0/cluster\"); bin=/usr/lib/postgresql/15/bin; "
      "if [ \"$(id -u)\" = 0 ]; then runuser -u postgres -- $bin/pg_ctl -D \"$root/data\" "
      "-m immediate -w stop; else $bin/pg_ctl -D \"$root/data\" -m immediate -w stop; fi";
  const auto stopped =
      immediate ? testing::RunToCompletion({"/bin/sh", "-c", stop_immediate, cluster_dir_}, {})
                : testing::RunToCompletion({script_, "stop", cluster_dir_}, {});
  // Start again whatever the stop said: the campaign must go on with a database.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (testing::RunToCompletion({script_, "start", cluster_dir_}, {}, 60s).exit_code == 0) {
      return stopped.exit_code == 0;
    }
    std::this_thread::sleep_for(1s);
  }
  return false;
}

bool Rig::EnsurePostgres() {
  std::lock_guard<std::mutex> lock(pg_mu_);
  return testing::RunToCompletion({script_, "start", cluster_dir_}, {}, 60s).exit_code == 0;
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
                                  {{"DATABASE_URL", db_->url()},
                                   {"STRIPE_SECRET_KEY", testing::kStripeKey},
                                   {"STRIPE_API_BASE", stripe_->base()},
                                   {"STRIPE_TIMEOUT_MS", "2000"},
                                   {"STRIPE_MAX_RETRIES", "1"}},
                                  timeout);
}

}  // namespace paintlock::chaos
