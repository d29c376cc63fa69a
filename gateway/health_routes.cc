// GET /healthz: the process answers. GET /readyz: it can reach its database
// (load balancers route only to ready gateways), or, with
// PAINTLOCK_ON_DATABASE_DOWN=sell and a catalogue snapshot read, it can still
// sell ("database": "unavailable"): a shop that prefers to sell keeps its
// gateways in the pool through an outage. Both count the checkouts made while
// the database was down (offline_checkouts) when selling is configured.
#include "gateway/http_errors.h"
#include "gateway/routes.h"

namespace paintlock::gateway {

void InstallHealthRoutes(httplib::Server& server, const Api& api) {
  server.Get("/healthz",
             [&services = api.services](const httplib::Request&, httplib::Response& res) {
               nlohmann::json body = {{"status", "ok"}};
               if (services.offline_snapshot) {
                 body["offline_checkouts"] = services.checkout.OfflineCheckouts();
               }
               WriteJson(res, 200, body);
             });
  server.Get(
      "/readyz", [&services = api.services](const httplib::Request&, httplib::Response& res) {
        const bool database_up = !std::holds_alternative<locks::DbFailure>(services.health.Ping());
        const bool can_sell = services.offline_snapshot && services.offline_snapshot->Loaded();
        if (!database_up && !can_sell) return WriteError(res, NotReady());
        nlohmann::json body = {{"status", "ready"},
                               {"database", database_up ? "available" : "unavailable"}};
        if (services.offline_snapshot) {
          body["offline_checkouts"] = services.checkout.OfflineCheckouts();
        }
        if (services.availability) body["open_streams"] = services.availability->OpenStreams();
        WriteJson(res, 200, body);
      });
}

}  // namespace paintlock::gateway
