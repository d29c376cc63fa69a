#include "locks/quotas_config.h"

#include <regex>
#include <set>
#include <sstream>

#include "base/text.h"

namespace paintlock::locks {

namespace {

// IANA zone names: "UTC", "Europe/Paris", "America/Argentina/Buenos_Aires",
// "Etc/GMT+5". POSIX rules ("EST5EDT,M3.2.0,M11.1.0") and bare offsets are
// refused: PostgreSQL reads "+3" with POSIX's inverted sign, a classic trap.
bool LooksLikeZoneName(const std::string& zone) {
  static const std::regex re(R"(^[A-Za-z][A-Za-z0-9_+-]{0,40}(/[A-Za-z0-9_+-]{1,40}){0,3}$)");
  return std::regex_match(zone, re);
}

}  // namespace

std::vector<QuotaPolicy> DefaultQuotaPolicies() { return {{"downloads", 5, "UTC"}}; }

bool IsValidQuotaName(const std::string& name) {
  static const std::regex re("^[a-z][a-z0-9_-]{0,31}$");
  return std::regex_match(name, re);
}

std::optional<std::vector<QuotaPolicy>> ParseQuotaPolicies(const std::string& text,
                                                           std::vector<std::string>* problems) {
  std::vector<QuotaPolicy> out;
  std::set<std::string> names;
  const size_t problems_before = problems->size();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = base::Trim(item);
    if (item.empty()) continue;
    const size_t first = item.find(':');
    const size_t second = first == std::string::npos ? first : item.find(':', first + 1);
    if (second == std::string::npos) {
      problems->push_back("\"" + item + "\" must be NAME:LIMIT:TIME_ZONE, e.g. downloads:5:UTC");
      continue;
    }
    QuotaPolicy p;
    p.name = base::Trim(item.substr(0, first));
    const std::string limit = base::Trim(item.substr(first + 1, second - first - 1));
    p.time_zone = base::Trim(item.substr(second + 1));
    bool ok = true;
    if (!IsValidQuotaName(p.name)) {
      problems->push_back("\"" + p.name +
                          "\" is not a quota name (a lowercase letter, then up to 31 of a-z, 0-9, "
                          "_ and -)");
      ok = false;
    } else if (!names.insert(p.name).second) {
      problems->push_back("quota \"" + p.name + "\" is configured twice");
      ok = false;
    }
    if (limit.empty() || limit.size() > 10 ||
        limit.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(limit) > kMaxQuotaLimit) {
      problems->push_back(p.name + ": the limit must be a whole number from 0 to " +
                          std::to_string(kMaxQuotaLimit) + ", got \"" + limit + "\"");
      ok = false;
    } else {
      p.limit = static_cast<int>(std::stoll(limit));
    }
    if (!LooksLikeZoneName(p.time_zone)) {
      problems->push_back(p.name + ": \"" + p.time_zone +
                          "\" is not a time zone name (use an IANA name such as UTC or "
                          "Europe/Paris)");
      ok = false;
    }
    if (ok) out.push_back(std::move(p));
  }
  if (problems->size() > problems_before) return std::nullopt;
  if (out.empty()) {
    problems->push_back("names no quota (NAME:LIMIT:TIME_ZONE[,…], e.g. downloads:5:UTC)");
    return std::nullopt;
  }
  return out;
}

std::string FormatQuotaPolicies(const std::vector<QuotaPolicy>& policies) {
  std::string out;
  for (const auto& p : policies) {
    if (!out.empty()) out += ",";
    out += p.name + ":" + std::to_string(p.limit) + ":" + p.time_zone;
  }
  return out;
}

}  // namespace paintlock::locks
