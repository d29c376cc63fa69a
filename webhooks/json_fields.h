// Reading fields of Stripe objects in event payloads (already parsed).
#pragma once

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

namespace paintlock::webhooks {

// The string at `key`, or "" when absent or not a string.
inline std::string StringOr(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// Stripe ids: a prefix, an underscore, and letters, digits or underscores.
inline bool IsStripeId(const std::string& id, const char* prefix = "") {
  static const std::regex re("^[a-z]{1,8}_[A-Za-z0-9_]{1,250}$");
  return id.rfind(prefix, 0) == 0 && std::regex_match(id, re);
}

}  // namespace paintlock::webhooks
