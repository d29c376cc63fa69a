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

// `text` cut to at most `max_bytes`, with every byte outside printable ASCII
// shown as '?': safe to quote back to a caller in any message, since a JSON
// error body must be valid UTF-8 and a request may carry any bytes.
std::string PrintableExcerpt(const std::string& text, std::size_t max_bytes);

struct CartRequest {
  std::vector<std::string> paintings;
  std::optional<std::string> buyer_ref;   // reservations API only
  std::optional<std::string> line_token;  // a place in a waiting line (locks/lines.h)
};

// Parses {"paintings": ["p1", …]} (and "buyer" when `allow_buyer`), or a form
// with painting=p1&painting=p2; either may carry one "line_token". On failure returns nullopt with
// *error a sentence for the buyer and *param the offending field.
std::optional<CartRequest> ParseCartJson(const std::string& body, bool allow_buyer,
                                         std::string* error, std::string* param);
std::optional<CartRequest> ParseCartForm(const std::string& body, std::string* error,
                                         std::string* param);

// Non-empty, at most kMaxCartItems, valid ids, no duplicates.
bool ValidateCart(const std::vector<std::string>& paintings, std::string* error);

}  // namespace paintlock::gateway
