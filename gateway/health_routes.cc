// GET /healthz: the process answers. GET /readyz: it can reach its database
// (load balancers route only to ready gateways).
#include "gateway/http_errors.h"
#include "gateway/routes.h"

namespace paintlock::gateway {

void InstallHealthRoutes(httplib::Server& server, const Api& api) {
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    WriteJson(res, 200, {{"status", "ok"}});
  });
  server.Get("/readyz",
             [&services = api.services](const httplib::Request&, httplib::Response& res) {
               if (std::holds_alternative<locks::DbFailure>(services.health.Ping())) {
                 return WriteError(res, NotReady());
               }
               nlohmann::json body = {{"status", "ready"}};
               if (services.availability)
                 body["open_streams"] = services.availability->OpenStreams();
               WriteJson(res, 200, body);
             });
}

}  // namespace paintlock::gateway
