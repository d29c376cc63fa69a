#include "base/visitor.h"

#include <doctest/doctest.h>

using namespace paintlock::base;

TEST_CASE("networks match IPv4 and IPv6 addresses by prefix") {
  auto n = Network::Parse("10.1.0.0/16");
  REQUIRE(n);
  CHECK(n->Contains("10.1.200.3"));
  CHECK(!n->Contains("10.2.0.1"));
  CHECK(Network::Parse("127.0.0.1")->Contains("127.0.0.1"));
  CHECK(!Network::Parse("127.0.0.1")->Contains("127.0.0.2"));
  CHECK(Network::Parse("fd00::/8")->Contains("fd12::1"));
  CHECK(!Network::Parse("fd00::/8")->Contains("fe80::1"));
  CHECK(!Network::Parse("10.0.0.0/33"));
  CHECK(!Network::Parse("example.com"));
  std::string bad;
  CHECK(!ParseNetworks("127.0.0.1, nonsense", &bad));
  CHECK(bad == "nonsense");
}

TEST_CASE("X-Forwarded-For is believed only from trusted proxies") {
  VisitorIdentity id("k" + std::string(31, 'x'), *ParseNetworks("127.0.0.1,10.0.0.0/8", nullptr));
  httplib::Request direct;
  direct.remote_addr = "203.0.113.9";
  direct.headers.emplace("X-Forwarded-For", "1.2.3.4");
  CHECK(id.ClientAddress(direct) == "203.0.113.9");  // a client cannot pick its own identity

  httplib::Request proxied;
  proxied.remote_addr = "127.0.0.1";
  proxied.headers.emplace("X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.0.0.5");
  CHECK(id.ClientAddress(proxied) == "198.51.100.7");

  CHECK(id.VisitorOf(direct).size() == 32);
  CHECK(id.VisitorOf(direct) != id.Hash("198.51.100.7"));
  CHECK(id.VisitorOf(direct).find("203") == std::string::npos);
  VisitorIdentity other_key("y" + std::string(31, 'x'), {});
  CHECK(other_key.Hash("203.0.113.9") != id.Hash("203.0.113.9"));
}

TEST_CASE("visitor addresses are canonical: IPv4-mapped is IPv4, IPv6 counts per /64") {
  CHECK(CanonicalVisitorAddress("203.0.113.9") == "v4:203.0.113.9");
  CHECK(CanonicalVisitorAddress("::ffff:203.0.113.9") == "v4:203.0.113.9");
  CHECK(CanonicalVisitorAddress("2001:DB8:1:2::1") ==
        CanonicalVisitorAddress("2001:db8:1:2:ffff::9"));
  CHECK(CanonicalVisitorAddress("2001:db8:1:2::1") != CanonicalVisitorAddress("2001:db8:1:3::1"));
  VisitorIdentity id(std::string(32, 'k'), {});
  CHECK(id.Hash("::ffff:10.0.0.1") == id.Hash("10.0.0.1"));
}

TEST_CASE("A visitor key is never drawn from a failing random source") {
  const RandomSource failing = [](unsigned char*, std::size_t) { return false; };
  CHECK_FALSE(VisitorKeyOrRandom("", failing).has_value());
  CHECK(VisitorKeyOrRandom("configured-key", failing) ==
        std::optional<std::string>("configured-key"));
  auto random = VisitorKeyOrRandom("");
  REQUIRE(random.has_value());
  CHECK(random->size() == 32);
  CHECK(*random != *VisitorKeyOrRandom(""));
}
