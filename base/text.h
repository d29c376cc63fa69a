// Small text helpers for headers, settings and list-valued values. Pure
// functions; ASCII only, as HTTP and our settings are.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace paintlock::base {

// `s` without leading and trailing spaces and tabs (a view into `s`).
inline std::string_view TrimView(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// `s` without leading and trailing spaces and tabs.
inline std::string Trim(std::string_view s) { return std::string(TrimView(s)); }

// `s` with ASCII letters lower-cased; other bytes unchanged.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace paintlock::base
