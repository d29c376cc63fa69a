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

// True when `a` and `b` are equal but for the case of ASCII letters: a header
// name checked without a lower-cased copy.
inline bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// True when `s` is min..max bytes, the first an ASCII letter or digit or one
// of `first_extra`, each other an ASCII letter or digit or one of
// `rest_extra`. IsToken(s, 1, 64, "", "_.-") is ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$.
// For identifiers checked on every request: std::regex_match cost ~1 µs
// a call and showed in the gateway's profile; this is a loop.
inline bool IsToken(std::string_view s, size_t min, size_t max, std::string_view first_extra,
                    std::string_view rest_extra) {
  if (s.size() < min || s.size() > max) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 ? first_extra : rest_extra).find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace paintlock::base
