#include "base/visitor.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "base/ids.h"
#include "base/text.h"

namespace paintlock::base {

namespace {

std::optional<std::array<unsigned char, 16>> ParseIp(std::string text) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  std::array<unsigned char, 16> out{};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return out;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Network> Network::Parse(const std::string& text) {
  std::string ip = Trim(text);
  int bits = -1;
  if (auto slash = ip.find('/'); slash != std::string::npos) {
    const std::string b = ip.substr(slash + 1);
    if (b.empty() || b.size() > 3 || b.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    bits = std::stoi(b);
    ip = ip.substr(0, slash);
  }
  auto addr = ParseIp(ip);
  if (!addr) return std::nullopt;
  const bool v4 = ip.find(':') == std::string::npos;
  if (bits < 0) bits = v4 ? 32 : 128;
  if (bits > (v4 ? 32 : 128)) return std::nullopt;
  Network n;
  n.address = *addr;
  n.prefix_bits = v4 ? bits + 96 : bits;
  return n;
}

bool Network::Contains(const std::string& ip) const {
  auto addr = ParseIp(ip);
  if (!addr) return false;
  int bits = prefix_bits;
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const unsigned char mask = bits >= 8 ? 0xff : static_cast<unsigned char>(0xff << (8 - bits));
    if (((*addr)[i] & mask) != (address[i] & mask)) return false;
  }
  return true;
}

std::optional<std::vector<Network>> ParseNetworks(const std::string& list, std::string* bad) {
  std::vector<Network> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (Trim(item).empty()) continue;
    auto n = Network::Parse(item);
    if (!n) {
      *bad = Trim(item);
      return std::nullopt;
    }
    out.push_back(*n);
  }
  return out;
}

bool VisitorIdentity::Trusted(const std::string& ip) const {
  for (const auto& n : trusted_) {
    if (n.Contains(ip)) return true;
  }
  return false;
}

std::string VisitorIdentity::ClientAddress(const httplib::Request& req) const {
  std::string client = req.remote_addr;
  if (!Trusted(client)) return client;
  // Walk X-Forwarded-For from the right: each hop was added by the proxy
  // before it; stop at the first address no trusted proxy vouches for.
  std::vector<std::string> hops;
  std::stringstream in(req.get_header_value("X-Forwarded-For"));
  std::string hop;
  while (std::getline(in, hop, ',')) hops.push_back(Trim(hop));
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    if (!ParseIp(*it)) break;  // garbage: trust what we had
    client = *it;
    if (!Trusted(client)) break;
  }
  return client;
}

std::string CanonicalVisitorAddress(const std::string& address) {
  auto ip = ParseIp(address);
  if (!ip) return "raw:" + address;
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  char text[64];
  if (std::memcmp(ip->data(), kMapped, 12) == 0) {
    std::snprintf(text, sizeof text, "v4:%u.%u.%u.%u", (*ip)[12], (*ip)[13], (*ip)[14], (*ip)[15]);
    return text;
  }
  // One IPv6 subscriber usually owns a whole /64: count the network, not the
  // address, or a visitor could take a fresh quota with every address.
  std::snprintf(text, sizeof text, "v6:%02x%02x:%02x%02x:%02x%02x:%02x%02x::/64", (*ip)[0],
                (*ip)[1], (*ip)[2], (*ip)[3], (*ip)[4], (*ip)[5], (*ip)[6], (*ip)[7]);
  return text;
}

std::string VisitorIdentity::Hash(const std::string& raw_address) const {
  const std::string address = CanonicalVisitorAddress(raw_address);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(address.data()), address.size(), mac, &len);
  return Hex(mac, std::min(len, 16u));
}

std::optional<std::string> VisitorKeyOrRandom(const std::string& configured,
                                              const RandomSource& source) {
  if (!configured.empty()) return configured;
  std::string key(32, '\0');
  if (!source(reinterpret_cast<unsigned char*>(key.data()), key.size())) return std::nullopt;
  return key;
}

}  // namespace paintlock::base
