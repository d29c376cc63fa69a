// Durations and instants as paintlockctl reads them from a command line and
// prints them in tables. Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace paintlock::admin {

// "90s", "30m", "2h", "3d", "1w", or several in decreasing order ("1h30m"),
// as whole seconds. nullopt for anything else: empty, a bare number, an
// unknown or repeated unit, or more than 100 years.
std::optional<std::chrono::seconds> ParseDuration(std::string_view text);

// The two largest non-zero units, rounded down: "0s", "45s", "1m15s", "2h",
// "3d4h", "2w1d". Negative durations print as their magnitude.
std::string FormatDuration(std::chrono::seconds d);

// An offset from now for a table cell: "in 5m", "5m ago", or "now" within a
// second.
std::string FormatOffset(std::int64_t seconds_from_now);

// True for an RFC 3339 instant with a zone: 2026-05-01T12:00:00Z,
// 2026-05-01T12:00:00.5+02:00 (fields range-checked, not the calendar).
bool IsRfc3339(std::string_view text);

// --since: a duration back from now (measured on the database clock), or an
// RFC 3339 instant. Exactly one of the two is set.
struct Since {
  std::optional<std::chrono::seconds> ago;
  std::string instant;
};
std::optional<Since> ParseSince(std::string_view text);

}  // namespace paintlock::admin
