#include "base/ids.h"

#include <doctest/doctest.h>

#include <set>

namespace paintlock::base {
namespace {

TEST_CASE("RandomHex gives no bytes when the source fails") {
  const RandomSource failing = [](unsigned char*, std::size_t) { return false; };
  CHECK_FALSE(RandomHex(32, failing).has_value());
  auto ok = RandomHex(16);
  REQUIRE(ok.has_value());
  CHECK(ok->size() == 32);
}

TEST_CASE("NewRequestId is 24 hex characters and does not repeat") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewRequestId();
    CHECK(id.size() == 24);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

}  // namespace
}  // namespace paintlock::base
