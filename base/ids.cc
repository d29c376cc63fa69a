#include "base/ids.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace paintlock::base {

namespace {

// Bumped in a forked child: the child must not hand out the bytes its
// parent's buffers still hold (the parent will).
std::atomic<unsigned> fork_generation{0};
void AfterForkInChild() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

bool RandBytes(unsigned char* out, std::size_t size) {
  if (size > static_cast<std::size_t>(INT_MAX)) return false;
  return RAND_bytes(out, static_cast<int>(size)) == 1;
}

}  // namespace

bool SystemRandom(unsigned char* out, std::size_t size) {
  // Each RAND_bytes call has a fixed cost (OpenSSL 3 finds and locks its
  // generator, checks its reseed): for one 16-byte reservation id it was 7%
  // of the gateway's CPU a reserve. Small draws are served from a per-thread
  // buffer of the same generator's output instead. Between two refills a
  // busy thread has done much else, so a refill runs with OpenSSL's code and
  // tables out of the caches: about 28 µs in the gateway under load, against
  // 1.7 µs in a tight loop, and with a kilobyte's buffer still 1.2% of the
  // gateway's CPU a reserve. So the buffer holds 16 KiB (a refill every
  // thousand reservation ids), allocated only by the threads that draw.
  // Every byte goes out once and is wiped from the buffer as it goes.
  constexpr std::size_t kBufferBytes = 16 * 1024, kLargestBuffered = 64;
  static const bool fork_watched = pthread_atfork(nullptr, nullptr, AfterForkInChild) == 0;
  if (size > kLargestBuffered || !fork_watched) return RandBytes(out, size);
  struct Buffer {
    unsigned char bytes[kBufferBytes];
    std::size_t used = kBufferBytes;
    unsigned generation = 0;
    ~Buffer() { OPENSSL_cleanse(bytes, sizeof bytes); }
  };
  thread_local std::unique_ptr<Buffer> buffer;
  if (!buffer) buffer = std::make_unique<Buffer>();
  Buffer& b = *buffer;
  const unsigned generation = fork_generation.load(std::memory_order_relaxed);
  if (b.generation != generation) {
    b.used = kBufferBytes;
    b.generation = generation;
  }
  if (kBufferBytes - b.used < size) {
    b.used = kBufferBytes;  // a failed fill may have written anything: none of it goes out
    if (!RandBytes(b.bytes, kBufferBytes)) return false;
    b.used = 0;
  }
  std::memcpy(out, b.bytes + b.used, size);
  OPENSSL_cleanse(b.bytes + b.used, size);
  b.used += size;
  return true;
}

std::string Hex(const unsigned char* data, std::size_t size) {
  std::string hex;
  AppendHex(hex, data, size);
  return hex;
}

void AppendHex(std::string& out, const unsigned char* data, std::size_t size) {
  static const char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 0xf]);
  }
}

std::optional<std::string> RandomHex(std::size_t bytes, const RandomSource& source) {
  std::vector<unsigned char> buffer(bytes);
  if (!source(buffer.data(), buffer.size())) return std::nullopt;
  return Hex(buffer.data(), buffer.size());
}

namespace {

// splitmix64's finalizer: a bijection on 64-bit values, so distinct inputs
// give distinct outputs that look random.
std::uint64_t Mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string NewRequestId() {
  // Request ids need uniqueness, not secrecy, and one is made per request:
  // RAND_bytes per id (its DRBG locks) was 4% of a request's CPU. Instead each
  // thread draws 12 random bytes once, then numbers its ids: 4 bytes of
  // thread prefix, then the mixed (bijective, so never repeating) sum of the
  // thread's 64-bit seed and counter. Should the random source fail, a
  // process-wide counter and the clock seed the thread instead.
  struct ThreadIds {
    std::uint32_t prefix = 0;
    std::uint64_t seed = 0;
    std::uint64_t next = 0;
    bool seeded = false;
  };
  thread_local ThreadIds t;
  if (!t.seeded) {
    unsigned char bytes[12];
    if (!SystemRandom(bytes, sizeof bytes)) {
      static std::atomic<std::uint64_t> threads{0};
      const std::uint64_t n = threads.fetch_add(1, std::memory_order_relaxed);
      const auto now =
          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
      for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(now >> (8 * i));
      for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<unsigned char>(n >> (8 * i));
    }
    for (int i = 0; i < 8; ++i) t.seed |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
    for (int i = 0; i < 4; ++i) t.prefix |= static_cast<std::uint32_t>(bytes[8 + i]) << (8 * i);
    t.seeded = true;
  }
  const std::uint64_t mixed = Mix64(t.seed + t.next++);
  unsigned char id[12];
  for (int i = 0; i < 4; ++i) id[i] = static_cast<unsigned char>(t.prefix >> (8 * i));
  for (int i = 0; i < 8; ++i) id[4 + i] = static_cast<unsigned char>(mixed >> (8 * i));
  return Hex(id, sizeof id);
}

}  // namespace paintlock::base
