// GET /v1/paintings and GET /v1/paintings/{id}: the catalogue with each
// painting's availability computed now (available, reserved with free_at,
// sold, withdrawn).
//
// The list follows Stripe's list convention: {"object": "list", "url",
// "has_more", "data": [...]}, in id order, at most `limit` (1..100, default
// 100) paintings after `starting_after`. `paintings` repeats `data` for the
// clients written before pagination; they see the first page.
#include "gateway/http_errors.h"
#include "gateway/limit_routes_parsing.h"
#include "gateway/request_parsing.h"
#include "gateway/routes.h"
#include "locks/painting_id.h"

namespace paintlock::gateway {

namespace {

nlohmann::json PaintingJson(const locks::PaintingView& v) {
  nlohmann::json j = {{"id", v.entry.id},
                      {"title", v.entry.title},
                      {"price_minor", v.entry.price_minor},
                      {"currency", v.entry.currency},
                      {"state", v.state}};
  if (!v.free_at.empty()) j["free_at"] = v.free_at;
  if (!v.entry.image_url.empty()) j["image_url"] = v.entry.image_url;
  if (!v.entry.description.empty()) j["description"] = v.entry.description;
  return j;
}

constexpr int kDefaultPageSize = locks::Catalogue::kMaxPageSize;

// limit and starting_after, or the 400 that names the bad one.
bool ParsePageQuery(const httplib::Request& req, int* limit,
                    std::optional<std::string>* starting_after, HttpError* error) {
  *limit = kDefaultPageSize;
  if (req.has_param("limit")) {
    auto n = ParseWholeNumber(req.get_param_value("limit"), 1, locks::Catalogue::kMaxPageSize);
    if (req.get_param_value_count("limit") != 1 || !n) {
      *error = InvalidRequest("limit must be one whole number from 1 to " +
                                  std::to_string(locks::Catalogue::kMaxPageSize) + ".",
                              "limit");
      return false;
    }
    *limit = static_cast<int>(*n);
  }
  if (req.has_param("starting_after")) {
    const std::string after = req.get_param_value("starting_after");
    if (req.get_param_value_count("starting_after") != 1 || !locks::IsPaintingId(after)) {
      *error = InvalidRequest(
          "starting_after must be one painting id: the id of the last painting of the page "
          "before.",
          "starting_after");
      return false;
    }
    *starting_after = after;
  }
  return true;
}

}  // namespace

void InstallPaintingRoutes(httplib::Server& server, const Api& api) {
  locks::Catalogue& catalogue = api.services.catalogue;
  server.Get("/v1/paintings", [&catalogue](const httplib::Request& req, httplib::Response& res) {
    int limit = 0;
    std::optional<std::string> starting_after;
    HttpError bad;
    if (!ParsePageQuery(req, &limit, &starting_after, &bad)) return WriteError(res, bad);
    auto page_or = catalogue.Page(limit, starting_after);
    if (auto* f = std::get_if<locks::DbFailure>(&page_or)) return WriteError(res, ErrorFor(*f));
    const auto& page = std::get<locks::CataloguePage>(page_or);
    if (!page.cursor_known) return WriteError(res, StartingAfterNotFound(*starting_after));
    nlohmann::json items = nlohmann::json::array();
    for (const auto& v : page.paintings) items.push_back(PaintingJson(v));
    WriteJson(res, 200,
              {{"object", "list"},
               {"url", "/v1/paintings"},
               {"has_more", page.has_more},
               {"data", items},
               {"paintings", items}});
  });
  server.Get(R"(/v1/paintings/([^/]+))",
             [&catalogue](const httplib::Request& req, httplib::Response& res) {
               const std::string id = req.matches[1];
               if (!locks::IsPaintingId(id)) {
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
