#include "base/ids.h"

#include <openssl/rand.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <vector>

namespace paintlock::base {

bool SystemRandom(unsigned char* out, std::size_t size) {
  if (size > static_cast<std::size_t>(INT_MAX)) return false;
  return RAND_bytes(out, static_cast<int>(size)) == 1;
}

std::string Hex(const unsigned char* data, std::size_t size) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    hex.push_back(kHex[data[i] >> 4]);
    hex.push_back(kHex[data[i] & 0xf]);
  }
  return hex;
}

std::optional<std::string> RandomHex(std::size_t bytes, const RandomSource& source) {
  std::vector<unsigned char> buffer(bytes);
  if (!source(buffer.data(), buffer.size())) return std::nullopt;
  return Hex(buffer.data(), buffer.size());
}

std::string NewRequestId() {
  if (auto id = RandomHex(12)) return *id;
  // Request ids need uniqueness, not secrecy: a counter and the clock give it.
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  const auto now =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  unsigned char bytes[12];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(now >> (8 * i));
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<unsigned char>(n >> (8 * i));
  return Hex(bytes, sizeof bytes);
}

}  // namespace paintlock::base
