#include "locks/leases.h"

#include <doctest/doctest.h>

using namespace paintlock::locks;

TEST_CASE("leases: lease names fit in one URL path segment and the schema's CHECK") {
  CHECK(IsValidLeaseName("nightly-export"));
  CHECK(IsValidLeaseName("shard:7.primary"));
  CHECK(IsValidLeaseName(std::string(128, 'n')));
  CHECK(!IsValidLeaseName(std::string(129, 'n')));
  CHECK(!IsValidLeaseName(""));
  CHECK(!IsValidLeaseName("a/b"));
  CHECK(!IsValidLeaseName(".hidden"));
  CHECK(!IsValidLeaseName("with space"));
}

TEST_CASE("leases: holders are printable, without spaces or controls") {
  CHECK(IsValidLeaseHolder("worker-3@host-a"));
  CHECK(IsValidLeaseHolder("pid:1234/boot:abc"));
  CHECK(IsValidLeaseHolder(std::string(200, 'h')));
  CHECK(!IsValidLeaseHolder(std::string(201, 'h')));
  CHECK(!IsValidLeaseHolder(""));
  CHECK(!IsValidLeaseHolder("two words"));
  CHECK(!IsValidLeaseHolder("tab\there"));
  CHECK(!IsValidLeaseHolder("caf\xc3\xa9"));
}
