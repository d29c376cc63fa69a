#include "stripe/stripe_metrics.h"

#include <doctest/doctest.h>

namespace paintlock::stripe {

TEST_CASE("stripe metrics: the endpoint label names the route, never an id or a query") {
  CHECK(EndpointLabel("POST", "/v1/checkout/sessions") == "POST /v1/checkout/sessions");
  CHECK(EndpointLabel("POST", "/v1/checkout/sessions/cs_test_a1B2/expire") ==
        "POST /v1/checkout/sessions/{id}/expire");
  CHECK(EndpointLabel("GET", "/v1/checkout/sessions/cs_test_a1B2") ==
        "GET /v1/checkout/sessions/{id}");
  CHECK(EndpointLabel("GET", "/v1/checkout/sessions?limit=100&created%5Bgte%5D=1") ==
        "GET /v1/checkout/sessions");
  CHECK(EndpointLabel("POST", "/v1/refunds") == "POST /v1/refunds");
}

}  // namespace paintlock::stripe
