// The server API for reservations (Authorization: Bearer <PAINTLOCK_API_KEY>):
//   POST   /v1/reservations {"paintings": [...], "buyer"?}  → 201, or 409 with free_at
//          (Idempotency-Key honoured: gateway/idempotency.h). Without a key,
//          a caller that left before the answer holds nothing (499 client_gone
//          in the access log; the hold released with reason client_gone).
//   GET    /v1/reservations/{id}                           → its state
//   DELETE /v1/reservations/{id}                           → released through the
//          release service (checkout/release.h): never a reservation its buyer paid.
#include "gateway/reservation_routes.h"

#include "base/json_text.h"
#include "gateway/edge/edge_server.h"
#include "gateway/http_errors.h"
#include "gateway/idempotency.h"
#include "gateway/middleware.h"
#include "gateway/request_parsing.h"
#include "gateway/routes.h"

namespace paintlock::gateway {

namespace {

nlohmann::json ReservationJson(const locks::ReservationView& v) {
  nlohmann::json j = {{"reservation_id", v.id},
                      {"state", v.state},
                      {"paintings", v.paintings},
                      {"held_until", v.held_until},
                      {"hold_live", v.state == "held" && v.hold_live && v.holds},
                      {"amount_minor", v.amount_minor},
                      {"currency", v.currency},
                      {"created_at", v.created_at}};
  if (!v.released_reason.empty()) j["released_reason"] = v.released_reason;
  if (!v.stripe_session_id.empty()) j["stripe_session_id"] = v.stripe_session_id;
  if (!v.stripe_status.empty()) j["stripe_status"] = v.stripe_status;
  return j;
}

void CreateReservation(const Api& api, const httplib::Request& req, httplib::Response& res) {
  CartRequest cart;
  if (!ReadReservationCart(req, res, &cart)) return;
  checkout::Checkout::ReserveResult result =
      api.services.checkout.Reserve(cart.paintings, cart.buyer_ref, cart.line_token);
  if (auto* granted = std::get_if<locks::Granted>(&result)) {
    // Without an Idempotency-Key nobody can ask for this answer again: if the
    // caller has left, the hold is released rather than kept for nobody. With
    // one, it stays for the retry that asks.
    if (!CarriesIdempotencyKey(req) &&
        api.services.checkout.LetGoIfLeft(*granted, edge::ClientStillThere,
                                          "reservation_client_gone")) {
      return WriteError(res, ErrorFor(checkout::BuyerLeft{}));
    }
  }
  WriteReservation(cart, result, res);
}

void GetReservation(const Api& api, const httplib::Request& req, httplib::Response& res) {
  if (!RequireApiKey(api.config, req, res)) return;
  auto got = api.services.reservations.Get(req.matches[1]);
  if (auto* f = std::get_if<locks::DbFailure>(&got)) return WriteError(res, ErrorFor(*f));
  const auto& v = std::get<std::optional<locks::ReservationView>>(got);
  if (!v) return WriteError(res, ReservationNotFound());
  WriteJson(res, 200, ReservationJson(*v));
}

void DeleteReservation(const Api& api, const httplib::Request& req, httplib::Response& res) {
  if (!RequireApiKey(api.config, req, res)) return;
  const std::string id = req.matches[1];
  const auto outcome = api.services.release.Release(id, "released_by_api");
  if (!outcome) return WriteError(res, ReservationNotFound());
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, checkout::Released>) {
          WriteJson(res, 200, {{"reservation_id", id}, {"state", "released"}});
        } else if constexpr (std::is_same_v<T, checkout::AlreadyOver>) {
          WriteJson(res, 200, {{"reservation_id", id}, {"state", o.state}});
        } else if constexpr (std::is_same_v<T, checkout::PaidRefused>) {
          WriteError(res, ErrorFor(checkout::ReservationPaid{o.state}));
        } else if constexpr (std::is_same_v<T, checkout::StripeUnreachable>) {
          WriteError(res, ErrorFor(checkout::StripeFailed{true, "api_connection_error", o.detail}));
        } else if constexpr (std::is_same_v<T, checkout::StripeRefused>) {
          WriteError(res,
                     ErrorFor(checkout::StripeFailed{false, "invalid_request_error", o.detail}));
        } else if constexpr (std::is_same_v<T, checkout::ChangedMeanwhile>) {
          // A webhook or a take-over moved it while we released: ask again.
          WriteError(res, ErrorFor(locks::DbFailure{locks::DbFailureKind::kContended, o.state}));
        } else {
          WriteError(res, ErrorFor(o));
        }
      },
      *outcome);
}

}  // namespace

bool ReadReservationCart(const httplib::Request& req, httplib::Response& res, CartRequest* cart) {
  if (MediaTypeOf(req) != "application/json") {
    WriteError(res, UnsupportedMediaType("Send {\"paintings\": [...]} as application/json."));
    return false;
  }
  std::string error, param;
  auto parsed = ParseCartJson(req.body, /*allow_buyer=*/true, &error, &param);
  if (!parsed) {
    WriteError(res, InvalidRequest(error, param));
    return false;
  }
  *cart = std::move(*parsed);
  return true;
}

void WriteReservation(const CartRequest& cart, const checkout::Checkout::ReserveResult& result,
                      httplib::Response& res) {
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, locks::Granted>) {
          res.set_header("Location", "/v1/reservations/" + o.reservation_id);
          // Written straight out, keys in nlohmann's order: an nlohmann
          // object here was about a quarter of a reserve's allocations.
          std::string body;
          body.reserve(96 + o.reservation_id.size() + o.held_until.size() +
                       16 * cart.paintings.size());
          base::JsonObjectText(body)
              .String("held_until", o.held_until)
              .Strings("paintings", cart.paintings)
              .String("reservation_id", o.reservation_id)
              .End();
          SetJsonBody(res, 201, std::move(body));
        } else {
          WriteError(res, ErrorFor(o));
        }
      },
      result);
}

void InstallReservationRoutes(httplib::Server& server, const Api& api) {
  server.Post(kReservationsRoute, [&api](const auto& req, auto& res) {
    if (!RequireApiKey(api.config, req, res)) return;
    ServeIdempotently(api.services.idempotency, req, res, Surface::kPaintings,
                      [&] { CreateReservation(api, req, res); });
  });
  server.Get(R"(/v1/reservations/([^/]+))",
             [&api](const auto& req, auto& res) { GetReservation(api, req, res); });
  server.Delete(R"(/v1/reservations/([^/]+))",
                [&api](const auto& req, auto& res) { DeleteReservation(api, req, res); });
}

}  // namespace paintlock::gateway
