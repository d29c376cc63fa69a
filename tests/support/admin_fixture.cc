#include "tests/support/admin_fixture.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

namespace paintlock::testing {

using nlohmann::json;

std::string DeadStripe() { return "http://127.0.0.1:" + std::to_string(FreeLoopbackPort()); }

CompletedProcess CtlOnAnyThread(TestDatabase& db, const std::string& stripe_base,
                                const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {BuildDir() + "/paintlockctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> all = {{"DATABASE_URL", db.url()},
                                            {"STRIPE_SECRET_KEY", kStripeKey},
                                            {"STRIPE_API_BASE", stripe_base}};
  for (const auto& [k, v] : env) all[k] = v;
  return RunToCompletion(argv, all);
}

CompletedProcess Ctl(TestDatabase& db, const std::string& stripe_base,
                     const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env) {
  CompletedProcess p = CtlOnAnyThread(db, stripe_base, args, env);
  INFO("paintlockctl " <<
       [&] {
         std::string s;
         for (const auto& a : args) s += a + " ";
         return s;
       }() << "\nexit " << p.exit_code
                       << "\nstdout:\n"
                       << p.out << "\nstderr:\n"
                       << p.err);
  CHECK(p.exit_code >= 0);  // it finished
  return p;
}

bool OneLine(const std::string& s) {
  return !s.empty() && s.back() == '\n' && s.find('\n') == s.size() - 1;
}

Reply Checkout(Shop& shop, const json& paintings) {
  return PostJson(shop.gateway.base(), "/v1/checkout", {{"paintings", paintings}});
}

std::pair<std::string, std::string> Bought(Shop& shop, const json& paintings) {
  Reply r = Checkout(shop, paintings);
  REQUIRE_MESSAGE(r.status == 201, r.body);
  const std::string id = r.json["reservation_id"];
  for (const auto& s : shop.stripe.Sessions()) {
    if (s["metadata"].value("reservation_id", "") == id) return {id, s["id"]};
  }
  FAIL("no session for reservation " << id);
  return {};
}

json Session(Shop& shop, const std::string& id) {
  for (const auto& s : shop.stripe.Sessions()) {
    if (s["id"] == id) return s;
  }
  FAIL("no session " << id);
  return nullptr;
}

std::string State(TestDatabase& db, const std::string& reservation_id) {
  return db.Scalar("SELECT state FROM reservations WHERE id = '" + reservation_id + "'");
}

std::string PaintingState(TestDatabase& db, const std::string& painting) {
  return db.Scalar("SELECT state FROM painting_states WHERE id = '" + painting + "'");
}

void Age(TestDatabase& db, const std::string& reservation_id) {
  db.Exec("UPDATE painting_locks SET held_until = now() - interval '1 second' WHERE holder = '" +
          reservation_id + "'");
  db.Exec("UPDATE reservations SET held_until = now() - interval '1 second' WHERE id = '" +
          reservation_id + "'");
}

void Pay(Shop& shop, const std::string& session, const std::string& payment_status) {
  shop.stripe.Control("POST", "/_test/sessions/" + session + "/pay",
                      {{"payment_status", payment_status}});
}

void WebhooksSettled(Shop& shop, int dropped) {
  CHECK(Eventually([&] {
    int unattempted = 0;
    for (const auto& e : shop.stripe.Control("GET", "/_test/events")) {
      const int attempts = e.value("delivery_attempts", 0);
      if (e.value("delivered", 0) > 0 || attempts >= 4) continue;
      if (attempts > 0) return false;  // retrying
      ++unattempted;
    }
    return unattempted == dropped;
  }));
}

std::string WriteFile(const std::string& name, const std::string& text) {
  mkdir((BuildDir() + "/test-logs").c_str(), 0755);
  const std::string path = BuildDir() + "/test-logs/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string Reserve(TestDatabase& db, const std::string& painting) {
  return db.Scalar("SELECT reservation_id FROM paintlock_reserve('{" + painting +
                   "}', interval '7 minutes', NULL) WHERE outcome = 'granted'");
}

std::vector<std::string> Conditions(const json& holds) {
  std::vector<std::string> out;
  for (const auto& h : holds["holds"]) out.push_back(h["condition"]);
  return out;
}

}  // namespace paintlock::testing
