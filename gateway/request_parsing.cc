#include "gateway/request_parsing.h"

#include <nlohmann/json.hpp>
#include <set>

#include "base/form.h"
#include "locks/lines.h"
#include "locks/painting_id.h"

namespace paintlock::gateway {

std::optional<std::vector<std::pair<std::string, std::string>>> ParseForm(const std::string& body) {
  base::FormFields fields;
  if (!base::DecodeForm(body, &fields)) return std::nullopt;
  return fields;
}

std::string PrintableExcerpt(const std::string& text, std::size_t max_bytes) {
  std::string out = text.substr(0, max_bytes);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

namespace {

// A line token, if present, must look like one: anything else is refused
// before the database is asked.
bool ValidLineToken(const std::string& token, std::string* error, std::string* param) {
  *param = "line_token";
  if (locks::LooksLikeLineToken(token)) return true;
  *error = "\"line_token\" must be the token POST /v1/paintings/{id}/line returned (plt_…).";
  return false;
}

}  // namespace

bool ValidateCart(const std::vector<std::string>& paintings, std::string* error) {
  if (paintings.empty()) {
    *error = "The cart is empty: name at least one painting.";
    return false;
  }
  if (paintings.size() > kMaxCartItems) {
    *error = "A cart holds at most " + std::to_string(kMaxCartItems) + " paintings.";
    return false;
  }
  std::set<std::string> seen;
  for (const auto& id : paintings) {
    if (!locks::IsPaintingId(id)) {
      *error = "\"" + PrintableExcerpt(id, 80) +
               "\" is not a painting id (1-64 letters, digits, '_', '.', '-').";
      return false;
    }
    if (!seen.insert(id).second) {
      *error = "Painting \"" + id + "\" is in the cart twice; each painting exists once.";
      return false;
    }
  }
  return true;
}

std::optional<CartRequest> ParseCartJson(const std::string& body, bool allow_buyer,
                                         std::string* error, std::string* param) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    *error = "The body is not valid JSON.";
    return std::nullopt;
  }
  if (!j.is_object()) {
    *error = "The body must be a JSON object such as {\"paintings\": [\"p1\"]}.";
    return std::nullopt;
  }
  CartRequest cart;
  auto it = j.find("paintings");
  *param = "paintings";
  if (it == j.end() || !it->is_array()) {
    *error = "\"paintings\" must be a list of painting ids.";
    return std::nullopt;
  }
  if (it->size() > kMaxCartItems) {
    *error = "A cart holds at most " + std::to_string(kMaxCartItems) + " paintings.";
    return std::nullopt;
  }
  for (const auto& p : *it) {
    if (!p.is_string()) {
      *error = "\"paintings\" must contain only painting ids (strings).";
      return std::nullopt;
    }
    cart.paintings.push_back(p.get<std::string>());
  }
  if (auto b = j.find("buyer"); b != j.end() && !b->is_null()) {
    *param = "buyer";
    if (!allow_buyer || !b->is_string() || b->get<std::string>().size() > 200) {
      *error = allow_buyer ? "\"buyer\" must be a string of at most 200 characters."
                           : "\"buyer\" is not accepted here.";
      return std::nullopt;
    }
    cart.buyer_ref = b->get<std::string>();
  }
  if (auto t = j.find("line_token"); t != j.end() && !t->is_null()) {
    if (!t->is_string() || !ValidLineToken(t->get<std::string>(), error, param)) {
      *param = "line_token";
      if (!t->is_string()) *error = "\"line_token\" must be a string.";
      return std::nullopt;
    }
    cart.line_token = t->get<std::string>();
  }
  *param = "paintings";
  if (!ValidateCart(cart.paintings, error)) return std::nullopt;
  param->clear();
  return cart;
}

std::optional<CartRequest> ParseCartForm(const std::string& body, std::string* error,
                                         std::string* param) {
  auto form = ParseForm(body);
  *param = "painting";
  if (!form) {
    *error = "The form body is not valid URL encoding.";
    return std::nullopt;
  }
  CartRequest cart;
  for (const auto& [key, value] : *form) {
    if (key == "painting" || key == "painting[]") {
      cart.paintings.push_back(value);
      if (cart.paintings.size() > kMaxCartItems) break;
    } else if (key == "line_token" && !value.empty()) {
      if (cart.line_token || !ValidLineToken(value, error, param)) {
        if (cart.line_token) *error = "Send at most one \"line_token\".";
        *param = "line_token";
        return std::nullopt;
      }
      cart.line_token = value;
    }
  }
  *param = "painting";
  if (!ValidateCart(cart.paintings, error)) return std::nullopt;
  param->clear();
  return cart;
}

}  // namespace paintlock::gateway
