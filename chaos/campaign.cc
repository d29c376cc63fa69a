#include "chaos/campaign.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>
#include <pqxx/pqxx>
#include <thread>

#include "base/loopback.h"

namespace paintlock::chaos {

using namespace std::chrono_literals;
using nlohmann::json;

namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

httplib::Headers Api() { return {{"Authorization", std::string("Bearer ") + testing::kApiKey}}; }

// A buyer who sends a checkout and hangs up: after `wait_ms`, with the whole
// request sent, or (partial) with only half of its body.
void HangUp(int port, const json& body, std::int64_t wait_ms, bool partial) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  const sockaddr_in addr = base::LoopbackAddress(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string text = body.dump();
    std::string req =
        "POST /v1/checkout HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(text.size()) + "\r\n\r\n" +
        (partial ? text.substr(0, text.size() / 2) : text);
    [[maybe_unused]] ssize_t sent = send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
  close(fd);
}

std::string SessionFromUrl(const std::string& url) {
  const auto slash = url.find_last_of('/');
  return slash == std::string::npos ? "" : url.substr(slash + 1);
}

}  // namespace

Campaign::Campaign(Rig& rig, const std::vector<Step>& steps, const CampaignShape& shape,
                   const std::atomic<bool>& interrupted)
    : rig_(rig),
      steps_(steps),
      shape_(shape),
      interrupted_(interrupted),
      ledger_(steps.size()),
      invariants_sql_(testing::InvariantsSql()) {}

std::int64_t Campaign::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start_)
      .count();
}

void Campaign::Run(std::int64_t duration_ms) {
  start_ = std::chrono::steady_clock::now();
  std::atomic<bool> running{true};
  std::thread sampler([&] {
    while (running) {
      for (int i = 0; i < 30 && running; ++i) std::this_thread::sleep_for(100ms);
      if (running) Sample();
    }
  });
  std::vector<std::thread> threads;
  const std::size_t planned = StepsWithin(steps_, duration_ms);
  std::int64_t next_progress_ms = 60000;  // a line a minute, so a long campaign shows it is alive
  for (const Step& s : steps_) {
    if (s.at_ms > duration_ms) break;
    while (NowMs() < s.at_ms && !interrupted_) std::this_thread::sleep_for(5ms);
    if (interrupted_) break;
    if (s.at_ms >= next_progress_ms) {
      std::cout << "chaos: " << next_progress_ms / 60000 << " of " << duration_ms / 60000.0
                << " min: " << threads.size() << " of " << planned << " steps started, "
                << ledger_.Recorded() << " answered" << std::endl;
      next_progress_ms += 60000;
    }
    threads.emplace_back([this, &s] { Execute(s); });
  }
  // Every step is bounded (HTTP timeouts, paintlockctl timeouts, bounded
  // waits for parents), so these joins end.
  std::cout << "chaos: " << threads.size() << " of " << planned << " steps started"
            << (interrupted_ ? " (interrupted)" : "")
            << "; waiting for the last answers, then settling and checking" << std::endl;
  for (auto& t : threads) t.join();
  running = false;
  sampler.join();
}

void Campaign::Sample() {
  try {
    pqxx::connection c(rig_.DatabaseUrl());
    pqxx::nontransaction n(c);
    ++sampled_runs_;
    for (const auto& row : n.exec(invariants_sql_)) {
      // A state in between, legitimate while work is in flight (invariants.sql).
      if (row[0].as<std::string>().find("(once settled)") != std::string::npos) continue;
      sampled_.push_back("+" + std::to_string(NowMs()) + "ms " + row[0].as<std::string>() + ": " +
                         row[1].as<std::string>(""));
    }
  } catch (const std::exception&) {
    // PostgreSQL is restarting: this sample is skipped.
  }
}

void Campaign::Execute(const Step& s) {
  Answer a;
  a.step = s;
  a.started_ms = NowMs();
  a.started_unix = UnixNow();
  for (const auto& p : s.paintings) a.tags.push_back(p);
  if (!s.key.empty()) a.tags.push_back(s.key);

  std::optional<Answer> parent;
  auto skip = [&](const std::string& why) {
    a.skipped = true;
    a.skip_reason = why;
  };
  auto need_parent = [&](int want_status) {
    parent = ledger_.WaitFor(s.parent, 25s);
    if (!parent) {
      skip("its parent did not finish in time");
      return false;
    }
    a.reservation_id = parent->reservation_id;
    a.session_id = parent->session_id;
    a.hold_id = parent->hold_id;
    a.token = parent->token;
    for (const auto& t : parent->tags) a.tags.push_back(t);
    if (parent->skipped || parent->status != want_status) {
      skip("its parent got " + parent->Outcome());
      return false;
    }
    return true;
  };
  auto take = [&](const HttpAnswer& h) {
    a.status = h.status;
    a.body = h.json;
    if (h.json.is_object()) a.code = h.json.value("code", "");
  };
  auto fake = [&](const std::string& path, const json& body) {
    take(Call(rig_.StripeBase(), "POST", path, body, {}, 5000ms));
  };
  const std::string gw = rig_.GatewayBase(s.gw);

  try {
    switch (s.kind) {
      case StepKind::kCheckout: {
        take(Call(gw, "POST", "/v1/checkout", {{"paintings", s.paintings}}));
        if (a.status == 201 && a.body.is_object()) {
          a.reservation_id = a.body.value("reservation_id", "");
          a.session_id = SessionFromUrl(a.body.value("checkout_url", ""));
        }
        break;
      }
      case StepKind::kReserve: {
        take(Call(gw, "POST", "/v1/reservations", {{"paintings", s.paintings}, {"buyer", s.key}},
                  Api()));
        if (a.status == 201 && a.body.is_object()) {
          a.reservation_id = a.body.value("reservation_id", "");
        }
        break;
      }
      case StepKind::kDisconnect: {
        const auto colon = gw.find_last_of(':');
        HangUp(std::stoi(gw.substr(colon + 1)), {{"paintings", s.paintings}}, s.amount, s.b != 0);
        a.status = 0;
        break;
      }
      case StepKind::kPay:
      case StepKind::kPayAsync: {
        if (!need_parent(201)) break;
        if (a.session_id.empty()) {
          skip("no session");
          break;
        }
        fake("/_test/sessions/" + a.session_id + "/pay",
             {{"payment_status", s.kind == StepKind::kPay ? "paid" : "unpaid"}});
        break;
      }
      case StepKind::kAsyncOutcome: {
        if (!need_parent(201) || a.session_id.empty()) break;
        fake("/_test/sessions/" + a.session_id + "/async_payment",
             {{"outcome", s.b ? "succeeded" : "failed"}});
        break;
      }
      case StepKind::kExpireSession: {
        if (!need_parent(201) || a.session_id.empty()) break;
        fake("/_test/sessions/" + a.session_id + "/expire", json::object());
        break;
      }
      case StepKind::kSuccessPage: {
        if (!need_parent(201) || a.session_id.empty()) break;
        take(Call(gw, "GET", "/v1/checkout/success?session_id=" + a.session_id));
        break;
      }
      case StepKind::kDelete: {
        if (!need_parent(201)) break;
        take(Call(gw, "DELETE", "/v1/reservations/" + a.reservation_id, nullptr, Api()));
        break;
      }
      case StepKind::kTopUp: {
        httplib::Headers h = Api();
        h.emplace("Idempotency-Key", s.holder);
        take(Call(gw, "POST", "/v1/accounts/" + s.key + "/credits", {{"amount", s.amount}}, h));
        break;
      }
      case StepKind::kCreditHold: {
        take(Call(gw, "POST", "/v1/accounts/" + s.key + "/holds",
                  {{"amount", s.amount}, {"ttl_seconds", s.b}}, Api()));
        if (a.status == 201 && a.body.is_object()) a.hold_id = a.body.value("hold_id", "");
        if (!a.hold_id.empty()) a.tags.push_back(a.hold_id);
        break;
      }
      case StepKind::kCreditCommit:
      case StepKind::kCreditRelease: {
        if (!need_parent(201)) break;
        take(Call(
            gw, "POST",
            "/v1/holds/" + a.hold_id + (s.kind == StepKind::kCreditCommit ? "/commit" : "/release"),
            json::object(), Api()));
        break;
      }
      case StepKind::kQuotaConsume: {
        take(Call(gw, "POST", "/v1/quotas/downloads/consume", {{"subject", s.key}}, Api()));
        break;
      }
      case StepKind::kLeaseAcquire: {
        take(Call(gw, "POST", "/v1/leases/" + s.key, {{"holder", s.holder}, {"ttl_seconds", s.b}},
                  Api()));
        if (a.status == 200 && a.body.is_object()) a.token = a.body.value("token", -1LL);
        break;
      }
      case StepKind::kLeaseRenew: {
        if (!need_parent(200)) break;
        take(Call(gw, "POST", "/v1/leases/" + parent->step.key + "/renew",
                  {{"holder", parent->step.holder}, {"token", a.token}, {"ttl_seconds", s.b}},
                  Api()));
        break;
      }
      case StepKind::kLeaseRelease: {
        if (!need_parent(200)) break;
        take(Call(gw, "DELETE",
                  "/v1/leases/" + parent->step.key + "?holder=" + parent->step.holder +
                      "&token=" + std::to_string(a.token),
                  nullptr, Api()));
        break;
      }
      case StepKind::kForceRelease: {
        if (!need_parent(201)) break;
        const auto done =
            rig_.Ctl({"release", a.reservation_id, "--reason", "chaos", "--force", "--json"});
        a.status = done.exit_code;
        a.body = done.Json();
        break;
      }
      case StepKind::kReconcile: {
        const auto done = rig_.Ctl({"reconcile", "--json"});
        a.status = done.exit_code;
        a.body = done.Json();
        break;
      }
      case StepKind::kKillGateway:
        a.status = rig_.KillGateway(s.gw) ? 1 : 0;
        break;
      case StepKind::kRestartGateway:
        a.status = rig_.StartGateway(s.gw) ? 1 : 0;
        break;
      case StepKind::kPgRestartFast:
      case StepKind::kPgRestartImmediate:
        a.status = rig_.RestartPostgres(s.kind == StepKind::kPgRestartImmediate) ? 1 : 0;
        break;
      case StepKind::kStripeError:
      case StepKind::kStripe429:
        fake("/_test/faults",
             {{"fail_next", s.amount}, {"status", s.kind == StepKind::kStripe429 ? 429 : 500}});
        a.status = a.status == 200 ? 1 : 0;
        break;
      case StepKind::kStripeHang:
        fake("/_test/faults", {{"delay_next", s.amount}, {"delay_ms", s.b}});
        a.status = a.status == 200 ? 1 : 0;
        break;
      case StepKind::kStripeDrop:
        fake("/_test/faults", {{"drop_next", s.amount}, {"after_processing", s.b != 0}});
        a.status = a.status == 200 ? 1 : 0;
        break;
      case StepKind::kWebhookDrop:
        fake("/_test/webhooks", {{"drop_next", s.amount}});
        a.status = a.status == 200 ? 1 : 0;
        break;
      case StepKind::kWebhookDuplicate:
        fake("/_test/webhooks", {{"duplicate_next", s.amount}});
        a.status = a.status == 200 ? 1 : 0;
        break;
      case StepKind::kWebhookHold:
      case StepKind::kWebhookUnhold:
        fake("/_test/webhooks", {{"hold", s.kind == StepKind::kWebhookHold}});
        a.status = a.status == 200 ? 1 : 0;
        break;
      case StepKind::kWebhookDelay:
        rig_.DelayNextWebhooks(static_cast<int>(s.amount), std::chrono::milliseconds(s.b));
        a.status = 1;
        break;
      case StepKind::kKillPrimary: {
        const Rig::Kill k = rig_.KillPrimary();
        if (k.failure.empty()) {
          a.status = 1;
          a.body = {{"node", k.node}, {"killed_unix", k.at_unix}};
        } else {
          a.body = {{"not_carried_out", k.failure}, {"cluster_log", k.cluster_log}};
        }
        break;
      }
      case StepKind::kStartNode:
        a.status = rig_.StartKilledNodes() ? 1 : 0;
        break;
    }
  } catch (const std::exception& e) {
    // A step that throws (a harness check, a bad body) is recorded as skipped.
    skip(std::string("threw: ") + e.what());
  } catch (...) {
    // The harness's FAIL throws doctest's TestFailureException, which is no
    // std::exception (the assert handler in chaos_main.cc converts only the
    // CHECK/REQUIRE family); uncaught on this thread it would end the run.
    skip("threw: a harness check failed");
  }
  if (!a.reservation_id.empty()) a.tags.push_back(a.reservation_id);
  if (!a.session_id.empty()) a.tags.push_back(a.session_id);
  if (!a.hold_id.empty()) a.tags.push_back(a.hold_id);
  a.ended_ms = NowMs();
  a.ended_unix = UnixNow();
  ledger_.Record(std::move(a));
}

std::vector<std::string> Campaign::Settle() {
  std::vector<std::string> did;
  auto note = [&](const std::string& what) {
    did.push_back("+" + std::to_string(NowMs()) + "ms " + what);
  };
  Call(rig_.StripeBase(), "POST", "/_test/faults/clear", json::object());
  Call(rig_.StripeBase(), "POST", "/_test/webhooks",
       {{"hold", false}, {"drop_next", 0}, {"duplicate_next", 0}});
  rig_.DelayNextWebhooks(0, 0ms);
  note("Stripe faults cleared, webhooks released, relay delays off");
  note(rig_.EnsurePostgres() ? "PostgreSQL running" : "PostgreSQL DID NOT START");
  for (int gw = 0; gw < 2; ++gw) {
    note(std::string("gateway ") + (gw ? "B" : "A") +
         (rig_.StartGateway(gw) ? " running" : " DID NOT START"));
  }
  // Delayed payments still settling end one way, so every paid session has an end.
  int settled = 0;
  HttpAnswer sessions = Call(rig_.StripeBase(), "GET", "/_test/sessions");
  if (sessions.json.is_array()) {
    for (const json& s : sessions.json) {
      if (s.value("status", "") == "complete" && s.value("payment_status", "") == "unpaid") {
        Call(rig_.StripeBase(), "POST", "/_test/sessions/" + s.value("id", "") + "/async_payment",
             {{"outcome", "succeeded"}});
        ++settled;
      }
    }
  }
  note("delayed payments settled (succeeded): " + std::to_string(settled));
  // Every hold taken during the campaign lapses.
  std::this_thread::sleep_for(std::chrono::milliseconds(shape_.hold_seconds * 1000 + 1500));
  note("waited " + std::to_string(shape_.hold_seconds) + " s + 1.5 s: every hold could lapse");
  for (int round = 0; round < 3; ++round) {
    // Let deliveries in flight land (bounded): events neither delivered nor out of retries.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      HttpAnswer events = Call(rig_.StripeBase(), "GET", "/_test/events");
      int pending = 0;
      if (events.json.is_array()) {
        for (const json& e : events.json) {
          const auto delivered = e.find("delivered");
          const bool done =
              delivered != e.end() && ((delivered->is_boolean() && delivered->get<bool>()) ||
                                       (delivered->is_number() && delivered->get<int>() > 0));
          const int attempts = e.value("delivery_attempts", 0);
          if (!done && attempts > 0 && attempts < 4) {
            ++pending;
          }
        }
      }
      if (pending == 0) break;
      std::this_thread::sleep_for(200ms);
    }
    const auto done = rig_.Ctl({"reconcile", "--json"});
    note("paintlockctl reconcile → exit " + std::to_string(done.exit_code));
    std::this_thread::sleep_for(1s);
  }
  return did;
}

}  // namespace paintlock::chaos
