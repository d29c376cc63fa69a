#include "admin/duration.h"

#include <regex>

namespace paintlock::admin {

namespace {

struct Unit {
  char symbol;
  std::int64_t seconds;
};
// In the order they must appear: largest first.
constexpr Unit kUnits[] = {{'w', 7 * 86400}, {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
constexpr std::int64_t kLongest = 100LL * 366 * 86400;

}  // namespace

std::optional<std::chrono::seconds> ParseDuration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  size_t next_unit = 0;  // units must come largest first, each at most once
  size_t i = 0;
  while (i < text.size()) {
    std::int64_t n = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > kLongest) return std::nullopt;
      ++i;
      ++digits;
    }
    if (digits == 0 || i == text.size()) return std::nullopt;
    const char symbol = text[i++];
    size_t u = next_unit;
    while (u < std::size(kUnits) && kUnits[u].symbol != symbol) ++u;
    if (u == std::size(kUnits)) return std::nullopt;
    next_unit = u + 1;
    total += n * kUnits[u].seconds;
    if (total > kLongest) return std::nullopt;
  }
  return std::chrono::seconds(total);
}

std::string FormatDuration(std::chrono::seconds d) {
  std::int64_t left = d.count() < 0 ? -d.count() : d.count();
  if (left == 0) return "0s";
  std::string out;
  int shown = 0;
  for (const Unit& u : kUnits) {
    const std::int64_t n = left / u.seconds;
    if (n > 0) {
      out += std::to_string(n) + u.symbol;
      left -= n * u.seconds;
      if (++shown == 2) break;
    } else if (shown > 0) {
      break;  // "1h" rather than "1h0m5s": the two largest adjacent units only
    }
  }
  return out;
}

std::string FormatOffset(std::int64_t seconds_from_now) {
  if (seconds_from_now == 0) return "now";
  const std::string span = FormatDuration(std::chrono::seconds(seconds_from_now));
  return seconds_from_now > 0 ? "in " + span : span + " ago";
}

bool IsRfc3339(std::string_view text) {
  static const std::regex re(
      R"(^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$)");
  std::cmatch m;
  if (!std::regex_match(text.data(), text.data() + text.size(), m, re)) return false;
  auto field = [&](int i) { return std::stoi(m[i].str()); };
  const bool zone_ok = !m[9].matched || (field(9) <= 23 && field(10) <= 59);
  return field(2) >= 1 && field(2) <= 12 && field(3) >= 1 && field(3) <= 31 && field(4) <= 23 &&
         field(5) <= 59 && field(6) <= 60 && zone_ok;
}

std::optional<Since> ParseSince(std::string_view text) {
  if (auto d = ParseDuration(text)) return Since{d, ""};
  if (IsRfc3339(text)) return Since{std::nullopt, std::string(text)};
  return std::nullopt;
}

}  // namespace paintlock::admin
