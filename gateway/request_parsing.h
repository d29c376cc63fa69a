// Reading carts and forms from requests. Pure functions: thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace paintlock::gateway {

constexpr std::size_t kMaxCartItems = 100;  // Stripe's line-item limit

// application/x-www-form-urlencoded → ordered (name, value) pairs, decoded.
// nullopt for a malformed percent-escape.
std::optional<std::vector<std::pair<std::string, std::string>>> ParseForm(const std::string& body);

bool IsValidPaintingId(const std::string& id);

struct CartRequest {
  std::vector<std::string> paintings;
  std::optional<std::string> buyer_ref;  // reservations API only
};

// Parses {"paintings": ["p1", …]} (and "buyer" when `allow_buyer`), or a form
// with painting=p1&painting=p2. On failure returns nullopt with *error a
// sentence for the buyer and *param the offending field.
std::optional<CartRequest> ParseCartJson(const std::string& body, bool allow_buyer,
                                         std::string* error, std::string* param);
std::optional<CartRequest> ParseCartForm(const std::string& body, std::string* error,
                                         std::string* param);

// Non-empty, at most kMaxCartItems, valid ids, no duplicates.
bool ValidateCart(const std::vector<std::string>& paintings, std::string* error);

}  // namespace paintlock::gateway
