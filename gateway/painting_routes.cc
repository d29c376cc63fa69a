// GET /v1/paintings and GET /v1/paintings/{id}: the catalogue with each
// painting's availability computed now (free, reserved with free_at, sold).
#include "gateway/http_errors.h"
#include "gateway/request_parsing.h"
#include "gateway/routes.h"

namespace paintlock::gateway {

namespace {

nlohmann::json PaintingJson(const locks::PaintingView& v) {
  nlohmann::json j = {{"id", v.entry.id},
                      {"title", v.entry.title},
                      {"price_minor", v.entry.price_minor},
                      {"currency", v.entry.currency},
                      {"state", v.state}};
  if (!v.free_at.empty()) j["free_at"] = v.free_at;
  return j;
}

}  // namespace

void InstallPaintingRoutes(httplib::Server& server, const Api& api) {
  locks::Catalogue& catalogue = api.services.catalogue;
  server.Get("/v1/paintings", [&catalogue](const httplib::Request&, httplib::Response& res) {
    auto list = catalogue.List();
    if (auto* f = std::get_if<locks::DbFailure>(&list)) return WriteError(res, ErrorFor(*f));
    nlohmann::json items = nlohmann::json::array();
    for (const auto& v : std::get<std::vector<locks::PaintingView>>(list)) {
      items.push_back(PaintingJson(v));
    }
    WriteJson(res, 200, {{"paintings", items}});
  });
  server.Get(R"(/v1/paintings/([^/]+))",
             [&catalogue](const httplib::Request& req, httplib::Response& res) {
               const std::string id = req.matches[1];
               if (!IsValidPaintingId(id)) {
                 return WriteError(res, ErrorFor(locks::Unknown{id.substr(0, 64)}));
               }
               auto got = catalogue.Get(id);
               if (auto* f = std::get_if<locks::DbFailure>(&got))
                 return WriteError(res, ErrorFor(*f));
               const auto& v = std::get<std::optional<locks::PaintingView>>(got);
               if (!v) return WriteError(res, ErrorFor(locks::Unknown{id}));
               WriteJson(res, 200, PaintingJson(*v));
             });
}

}  // namespace paintlock::gateway
