// The configuration of daily quotas (PAINTLOCK_QUOTAS; locks/QUOTAS.md),
// apart from the store so that gateway/config.h needs no database headers.
// Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace paintlock::locks {

struct QuotaPolicy {
  std::string name;       // [a-z][a-z0-9_-]{0,31}
  int limit = 0;          // allowed a day; 0: only licence holders
  std::string time_zone;  // IANA name whose midnight starts a new day ("UTC", "Europe/Paris")
};

constexpr int kMaxQuotaLimit = 1000000000;

// The default when PAINTLOCK_QUOTAS is unset: 5 downloads a day, UTC.
std::vector<QuotaPolicy> DefaultQuotaPolicies();

// Parses "downloads:5:UTC,exports:20:Europe/Paris" (spaces around items are
// ignored). nullopt with one *problem line per bad item: names, limits and
// the shape of zone names are checked here; whether the database knows a
// zone is checked at start-up (QuotaStore::UnknownTimeZones).
std::optional<std::vector<QuotaPolicy>> ParseQuotaPolicies(const std::string& text,
                                                           std::vector<std::string>* problems);

// "name:limit:zone,…", the inverse of ParseQuotaPolicies.
std::string FormatQuotaPolicies(const std::vector<QuotaPolicy>& policies);

bool IsValidQuotaName(const std::string& name);

}  // namespace paintlock::locks
