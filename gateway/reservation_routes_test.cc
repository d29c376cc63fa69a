// The reserve's answer, written straight out, is the bytes nlohmann's object gave.
#include "gateway/reservation_routes.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using paintlock::gateway::CartRequest;
using paintlock::gateway::WriteReservation;

TEST_CASE("reservations: a granted reserve's 201 is the bytes the JSON object would give") {
  const std::vector<std::vector<std::string>> carts = {
      {"p1"}, {"p1", "p2", "a.b_c-9"}, {"qu\"ote\\back", "\x01 ctl", "ünïcödé", "\xff not utf-8"}};
  for (const auto& paintings : carts) {
    CAPTURE(paintings.size());
    CartRequest cart;
    cart.paintings = paintings;
    const paintlock::locks::Granted granted{"7f0c1d9e-3b2a-4c5d-8e6f-0a1b2c3d4e5f",
                                            "2026-12-07T03:20:00Z"};
    httplib::Response res;
    WriteReservation(cart, granted, res);
    CHECK(res.status == 201);
    CHECK(res.get_header_value("Location") ==
          "/v1/reservations/7f0c1d9e-3b2a-4c5d-8e6f-0a1b2c3d4e5f");
    CHECK(res.get_header_value("Content-Type") == "application/json");
    const nlohmann::json object = {{"reservation_id", granted.reservation_id},
                                   {"held_until", granted.held_until},
                                   {"paintings", paintings}};
    CHECK(res.body == object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}
