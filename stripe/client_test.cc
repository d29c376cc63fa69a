#include "stripe/client.h"

#include <doctest/doctest.h>

#include <string>

namespace paintlock::stripe {

TEST_CASE("a Checkout Session id is cs_ and 1-250 letters, digits or underscores") {
  CHECK(IsCheckoutSessionId("cs_test_a1B2c3"));
  CHECK(IsCheckoutSessionId("cs_" + std::string(250, 'a')));
  CHECK(IsCheckoutSessionId("cs__"));
  CHECK_FALSE(IsCheckoutSessionId("cs_"));
  CHECK_FALSE(IsCheckoutSessionId("cs_" + std::string(251, 'a')));
  CHECK_FALSE(IsCheckoutSessionId("pi_123"));
  CHECK_FALSE(IsCheckoutSessionId("CS_123"));
  CHECK_FALSE(IsCheckoutSessionId("cs_12-3"));
  CHECK_FALSE(IsCheckoutSessionId("cs_12 3"));
  CHECK_FALSE(IsCheckoutSessionId("cs_1'; DROP TABLE x"));
  CHECK_FALSE(IsCheckoutSessionId(std::string("cs_1\0", 5)));
}

}  // namespace paintlock::stripe
