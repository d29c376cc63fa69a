// Who a visitor is, without storing who they are.
//
// A visitor is a truncated keyed hash (HMAC-SHA256 with PAINTLOCK_VISITOR_KEY)
// of the client's IP address: stable across requests and gateway instances
// that share the key, useless to anyone without it, and the raw address is
// never stored or logged. X-Forwarded-For is believed only when the TCP peer
// is a configured trusted proxy (PAINTLOCK_TRUSTED_PROXIES); then the client
// is the right-most address in the header that is not itself a trusted proxy.
// Pure functions and an immutable class: thread-safe.
#pragma once

#include <httplib.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"

namespace paintlock::base {

// An IPv4 or IPv6 network: "10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8".
struct Network {
  std::array<unsigned char, 16> address{};  // IPv4 as IPv4-mapped IPv6
  int prefix_bits = 128;
  static std::optional<Network> Parse(const std::string& text);
  bool Contains(const std::string& ip) const;
};

// What a visitor hash is computed over: IPv4 (also IPv4-mapped IPv6) as
// dotted quad, IPv6 as its /64 network; anything unparsable as given.
std::string CanonicalVisitorAddress(const std::string& address);

// Parses a comma-separated list; nullopt (and *bad = the offending item) on error.
std::optional<std::vector<Network>> ParseNetworks(const std::string& list, std::string* bad);

// The configured visitor key, or (when none is configured) 32 fresh random
// bytes; nullopt when the random source fails — never a key made of whatever
// happened to be in memory.
std::optional<std::string> VisitorKeyOrRandom(const std::string& configured,
                                              const RandomSource& source = SystemRandom);

class VisitorIdentity {
 public:
  VisitorIdentity(std::string key, std::vector<Network> trusted_proxies)
      : key_(std::move(key)), trusted_(std::move(trusted_proxies)) {}

  // The client's address as far as it can be trusted.
  std::string ClientAddress(const httplib::Request& req) const;
  // 32 lowercase hex characters: 128 bits of HMAC-SHA256(key,
  // CanonicalVisitorAddress(address)).
  std::string VisitorOf(const httplib::Request& req) const { return Hash(ClientAddress(req)); }
  std::string Hash(const std::string& address) const;

 private:
  bool Trusted(const std::string& ip) const;
  const std::string key_;
  const std::vector<Network> trusted_;
};

}  // namespace paintlock::base
