#include "locks/rate_limits_config.h"

#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "base/text.h"

namespace paintlock::locks {

std::optional<std::vector<RateBucket>> ParseRateBuckets(const std::string& list,
                                                        std::string* error) {
  // A decimal with at most 9 fraction digits: numeric in SQL takes it exactly.
  static const std::regex item_re(
      R"(^([a-z0-9_-]{1,32}):([0-9]{1,10}):([0-9]{1,10}(\.[0-9]{1,9})?)$)");
  std::vector<RateBucket> out;
  std::set<std::string> names;
  std::stringstream in(list);
  std::string raw;
  while (std::getline(in, raw, ',')) {
    const std::string item = base::Trim(raw);
    if (item.empty()) continue;
    std::smatch m;
    if (!std::regex_match(item, m, item_re)) {
      *error = "\"" + item +
               "\" is not NAME:CAPACITY:REFILL_PER_SECOND (name of [a-z0-9_-], whole capacity, "
               "decimal refill such as 0.5)";
      return std::nullopt;
    }
    RateBucket b;
    b.name = m[1];
    b.capacity = std::strtoll(std::string(m[2]).c_str(), nullptr, 10);
    b.refill_per_second = m[3];
    b.refill = std::strtod(b.refill_per_second.c_str(), nullptr);
    if (b.capacity < 1 || b.capacity > 1000000000) {
      *error = "\"" + item + "\": capacity must be from 1 to 1000000000";
      return std::nullopt;
    }
    // A bucket that never refills would refuse a key forever after its first
    // burst; a tiny rate (0.0001) gives a practically fixed budget instead.
    if (!(b.refill > 0) || b.refill > 1e9) {
      *error = "\"" + item + "\": refill per second must be above 0 and at most 1000000000";
      return std::nullopt;
    }
    if (!names.insert(b.name).second) {
      *error = "bucket \"" + b.name + "\" is defined twice";
      return std::nullopt;
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<RateBucket> WithDefaultBuckets(std::vector<RateBucket> list) {
  std::string unused;
  std::vector<RateBucket> defaults = *ParseRateBuckets(kDefaultRateLimits, &unused);
  for (RateBucket& d : defaults) {
    bool defined = false;
    for (const RateBucket& b : list) defined = defined || b.name == d.name;
    if (!defined) list.push_back(std::move(d));
  }
  return list;
}

bool IsValidRateKey(const std::string& key) { return base::IsToken(key, 1, 200, "_.:@-", "_.:@-"); }

std::optional<BucketKey> ResolveBucketKey(const std::vector<RateBucket>& buckets,
                                          const std::string& key, const std::string& bucket,
                                          BucketKeyProblem* problem, std::string* name) {
  std::string stored;
  if (!bucket.empty()) {
    *name = bucket;
    stored = key.rfind(bucket + ":", 0) == 0 ? key : bucket + ":" + key;
  } else {
    const size_t colon = key.find(':');
    if (colon == std::string::npos || colon == 0) {
      *problem = BucketKeyProblem::kNoBucket;
      name->clear();
      return std::nullopt;
    }
    *name = key.substr(0, colon);
    stored = key;
  }
  for (const RateBucket& b : buckets) {
    if (b.name == *name) return BucketKey{&b, stored};
  }
  *problem = BucketKeyProblem::kUnknownBucket;
  return std::nullopt;
}

}  // namespace paintlock::locks
