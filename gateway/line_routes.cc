// The waiting line of a painting (locks/lines.h), for the storefront: no API
// key, the same CORS and visitor rules as POST /v1/checkout.
//
//   POST   /v1/paintings/{id}/line  join: 201 {position, line_token, expires_at, …}
//   GET    /v1/paintings/{id}/line  with the token: where the entry stands;
//                                   without: only the line's length
//   DELETE /v1/paintings/{id}/line  with the token: leave
//
// The token travels in the Paintlock-Line-Token header (or ?token= where a
// header cannot be set). It is a secret: never logged, never echoed but on
// the join that makes it. A visitor (the keyed hash of the client address)
// may hold PAINTLOCK_LINE_PER_VISITOR places per line.
#include "gateway/http_errors.h"
#include "gateway/request_parsing.h"
#include "gateway/routes.h"
#include "locks/painting_id.h"

namespace paintlock::gateway {

namespace {

constexpr char kLinePath[] = R"(/v1/paintings/([^/]+)/line)";
constexpr char kTokenHeader[] = "Paintlock-Line-Token";

nlohmann::json EntryJson(const locks::LineEntryView& v) {
  nlohmann::json j = {{"painting", v.painting}, {"state", v.state}, {"line_length", v.line_length}};
  if (v.position) j["position"] = *v.position;
  if (!v.window_from.empty()) j["window_from"] = v.window_from;
  if (!v.window_until.empty()) j["window_until"] = v.window_until;
  if (v.starts_in_ms) j["starts_in_ms"] = *v.starts_in_ms;
  if (v.ends_in_ms) j["ends_in_ms"] = *v.ends_in_ms;
  if (!v.reservation_id.empty()) j["reservation_id"] = v.reservation_id;
  return j;
}

// The painting id of the path, or nullopt with 404 written.
std::optional<std::string> PaintingOf(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  if (!locks::IsPaintingId(id)) {
    WriteError(res, ErrorFor(locks::Unknown{PrintableExcerpt(id, 64)}));
    return std::nullopt;
  }
  return id;
}

// The token of the request: "" when none was sent; nullopt with 400 written
// when what was sent is not a token.
std::optional<std::string> TokenOf(const httplib::Request& req, httplib::Response& res) {
  std::string token = req.get_header_value(kTokenHeader);
  if (token.empty()) token = req.get_param_value("token");
  if (token.empty() || locks::LooksLikeLineToken(token)) return token;
  WriteError(res, InvalidRequest("The line token must be the one POST /v1/paintings/{id}/line "
                                 "returned (plt_…), in the Paintlock-Line-Token header.",
                                 "line_token"));
  return std::nullopt;
}

// Calls on_ok for the Ok alternative of `outcome`; any other is an error
// of the one table.
template <class Ok, class Outcome, class OnOk>
void Answer(httplib::Response& res, const Outcome& outcome, OnOk&& on_ok) {
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, Ok>) {
          on_ok(o);
        } else {
          WriteError(res, ErrorFor(o));
        }
      },
      outcome);
}

void Join(locks::LineStore& lines, const Api& api, const httplib::Request& req,
          httplib::Response& res) {
  auto painting = PaintingOf(req, res);
  if (!painting) return;
  Answer<locks::LineJoined>(res, lines.Join(*painting, api.services.visitors.VisitorOf(req)),
                            [&](const locks::LineJoined& j) {
                              nlohmann::json body = EntryJson(j.entry);
                              body["line_token"] = j.token;
                              // The token is good while its entry waits: at the latest until its
                              // window ends, which moves when holds change or others leave.
                              body["expires_at"] = j.entry.window_until;
                              body["claim_seconds"] = lines.settings().claim_window.count();
                              WriteJson(res, 201, body);
                            });
}

void Show(locks::LineStore& lines, const httplib::Request& req, httplib::Response& res) {
  auto painting = PaintingOf(req, res);
  if (!painting) return;
  auto token = TokenOf(req, res);
  if (!token) return;
  if (token->empty()) {
    auto length = lines.Length(*painting);
    if (auto* f = std::get_if<locks::DbFailure>(&length)) return WriteError(res, ErrorFor(*f));
    const auto& n = std::get<std::optional<std::int64_t>>(length);
    if (!n) return WriteError(res, ErrorFor(locks::Unknown{*painting}));
    return WriteJson(res, 200, {{"painting", *painting}, {"line_length", *n}});
  }
  Answer<locks::LineEntryView>(
      res, lines.Entry(*painting, *token),
      [&](const locks::LineEntryView& v) { WriteJson(res, 200, EntryJson(v)); });
}

void Leave(locks::LineStore& lines, const httplib::Request& req, httplib::Response& res) {
  auto painting = PaintingOf(req, res);
  if (!painting) return;
  auto token = TokenOf(req, res);
  if (!token) return;
  if (token->empty()) {
    return WriteError(res, InvalidRequest("Send the line token in the Paintlock-Line-Token header "
                                          "to leave the line.",
                                          "line_token"));
  }
  Answer<locks::LineLeft>(res, lines.Leave(*painting, *token), [&](const locks::LineLeft& l) {
    WriteJson(res, 200, {{"painting", l.painting}, {"state", "left"}, {"was", l.state_before}});
  });
}

}  // namespace

void InstallLineRoutes(httplib::Server& server, const Api& api) {
  locks::LineStore* lines = api.services.lines;
  if (lines == nullptr) return;
  server.Post(kLinePath, [lines, &api](const httplib::Request& req, httplib::Response& res) {
    Join(*lines, api, req, res);
  });
  server.Get(kLinePath, [lines](const httplib::Request& req, httplib::Response& res) {
    Show(*lines, req, res);
  });
  server.Delete(kLinePath, [lines](const httplib::Request& req, httplib::Response& res) {
    Leave(*lines, req, res);
  });
}

}  // namespace paintlock::gateway
