// POST /v1/reservations, in halves shared by the workers' handler
// (gateway/reservation_routes.cc) and the reactor's (gateway/reactor_routes.h):
// reading the cart, and writing what the reserve decided.
#pragma once

#include <httplib.h>

#include "checkout/checkout.h"
#include "gateway/request_parsing.h"

namespace paintlock::gateway {

inline constexpr const char* kReservationsRoute = "/v1/reservations";

// False with the 4xx written when the body is not a cart.
bool ReadReservationCart(const httplib::Request& req, httplib::Response& res, CartRequest* cart);
// 201 with the hold (and its Location), or the refusal's error.
void WriteReservation(const CartRequest& cart, const checkout::Checkout::ReserveResult& result,
                      httplib::Response& res);

}  // namespace paintlock::gateway
