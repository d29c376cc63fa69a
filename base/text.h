// Small text helpers shared by the parsers of list-valued settings
// (PAINTLOCK_QUOTAS, PAINTLOCK_RATE_LIMITS). Pure functions.
#pragma once

#include <string>

namespace paintlock::base {

// `s` without leading and trailing spaces and tabs.
inline std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace paintlock::base
