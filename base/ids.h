// Random identifiers and keys from the operating system's CSPRNG (OpenSSL's
// RAND_bytes).
//
// RAND_bytes can fail (an unseeded generator, a broken provider). Nothing here
// hands out bytes it did not get: the functions that can fail say so in their
// result, and the caller decides (a process that cannot make a key refuses to
// start; a request id falls back to a counter-based id, which needs no secrecy).
// Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace paintlock::base {

// Fills `size` bytes at `out`; false when no random bytes could be had
// (then `out` must not be used). A seam so tests can make the source fail.
using RandomSource = std::function<bool(unsigned char* out, std::size_t size)>;

// The operating system's CSPRNG through OpenSSL. Draws of up to 64 bytes come
// from a per-thread buffer of its output (ids.cc); a forked child never hands
// out what its parent's buffer held.
bool SystemRandom(unsigned char* out, std::size_t size);

// `bytes` random bytes as 2*bytes lowercase hex characters; nullopt when the
// source failed.
std::optional<std::string> RandomHex(std::size_t bytes, const RandomSource& source = SystemRandom);

// A request id: 24 hex characters, unique within the process (a per-thread
// random prefix and a numbered, mixed sequence; see ids.cc), even when the
// random source fails. Not a secret: never use one as a token.
std::string NewRequestId();

// Lowercase hex of `size` bytes.
std::string Hex(const unsigned char* data, std::size_t size);
// The same, appended to `out`.
void AppendHex(std::string& out, const unsigned char* data, std::size_t size);

}  // namespace paintlock::base
