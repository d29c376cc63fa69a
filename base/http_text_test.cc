#include "base/http_text.h"

#include <doctest/doctest.h>

namespace paintlock::base {
namespace {

TEST_CASE("MediaTypeOf drops parameters, spaces and case") {
  CHECK(MediaTypeOf("Application/JSON; charset=utf-8") == "application/json");
  CHECK(MediaTypeOf(" application/x-www-form-urlencoded ") == "application/x-www-form-urlencoded");
  CHECK(MediaTypeOf("") == "");
}

TEST_CASE("BearerTokenOf reads only the Bearer scheme") {
  CHECK(BearerTokenOf("Bearer abc") == std::optional<std::string>("abc"));
  CHECK(BearerTokenOf("bearer  abc ") == std::optional<std::string>("abc"));
  CHECK_FALSE(BearerTokenOf("Basic abc").has_value());
  CHECK_FALSE(BearerTokenOf("Bearer ").has_value());
  CHECK_FALSE(BearerTokenOf("Bearer").has_value());
}

TEST_CASE("ConstantTimeEquals compares contents and lengths") {
  CHECK(ConstantTimeEquals("secret", "secret"));
  CHECK_FALSE(ConstantTimeEquals("secret", "secreT"));
  CHECK_FALSE(ConstantTimeEquals("secret", "secret2"));
}

}  // namespace
}  // namespace paintlock::base
