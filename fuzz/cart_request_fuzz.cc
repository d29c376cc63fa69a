// Checkout and reservation bodies (gateway/request_parsing.h): JSON with and
// without "buyer", and the HTML form. The first byte picks the parser.
// Properties: an accepted cart passes ValidateCart (1..100 valid, distinct
// ids) and a buyer is at most 200 bytes and only where allowed; a refusal
// comes with a sentence that fits in a JSON error body (valid UTF-8), since
// the gateway answers it as one. And the JSON reader (nlohmann's SAX
// interface, no document) answers as a reading through nlohmann's document
// does (Reference below): the same cart, or the same refusal word for word.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fuzz/fuzz_support.h"
#include "gateway/request_parsing.h"
#include "locks/lines.h"
#include "locks/painting_id.h"

using namespace paintlock;

namespace {

// The cart's rules read from nlohmann's document: what ParseCartJson did
// before it read the body as a stream, kept as this target's oracle.
std::optional<gateway::CartRequest> Reference(const std::string& body, bool allow_buyer,
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
  gateway::CartRequest cart;
  auto it = j.find("paintings");
  *param = "paintings";
  if (it == j.end() || !it->is_array()) {
    *error = "\"paintings\" must be a list of painting ids.";
    return std::nullopt;
  }
  if (it->size() > gateway::kMaxCartItems) {
    *error = "A cart holds at most " + std::to_string(gateway::kMaxCartItems) + " paintings.";
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
    *param = "line_token";
    if (!t->is_string()) {
      *error = "\"line_token\" must be a string.";
      return std::nullopt;
    }
    if (!locks::LooksLikeLineToken(t->get<std::string>())) {
      *error = "\"line_token\" must be the token POST /v1/paintings/{id}/line returned (plt_…).";
      return std::nullopt;
    }
    cart.line_token = t->get<std::string>();
  }
  *param = "paintings";
  if (!gateway::ValidateCart(cart.paintings, error)) return std::nullopt;
  param->clear();
  return cart;
}

bool SameCart(const gateway::CartRequest& a, const gateway::CartRequest& b) {
  return a.paintings == b.paintings && a.buyer_ref == b.buyer_ref && a.line_token == b.line_token;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  const std::string body(fuzz::AsText(data + 1, size - 1));

  std::string error;
  std::string param;
  std::optional<gateway::CartRequest> cart;
  if (mode == 2) {
    cart = gateway::ParseCartForm(body, &error, &param);
  } else {
    cart = gateway::ParseCartJson(body, /*allow_buyer=*/mode == 1, &error, &param);
    std::string reference_error, reference_param;
    const auto reference = Reference(body, mode == 1, &reference_error, &reference_param);
    FUZZ_CHECK(cart.has_value() == reference.has_value());
    if (cart && reference) FUZZ_CHECK(SameCart(*cart, *reference));
    if (!cart && !reference) FUZZ_CHECK(error == reference_error && param == reference_param);
  }
  if (cart) {
    std::string again;
    FUZZ_CHECK(gateway::ValidateCart(cart->paintings, &again));
    FUZZ_CHECK(!cart->paintings.empty() && cart->paintings.size() <= gateway::kMaxCartItems);
    std::set<std::string> distinct(cart->paintings.begin(), cart->paintings.end());
    FUZZ_CHECK(distinct.size() == cart->paintings.size());
    for (const auto& id : cart->paintings) FUZZ_CHECK(locks::IsPaintingId(id));
    if (cart->buyer_ref) FUZZ_CHECK(mode == 1 && cart->buyer_ref->size() <= 200);
    FUZZ_CHECK(param.empty());
  } else {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(fuzz::Describable(error));
    FUZZ_CHECK(fuzz::Describable(param));
  }
  return 0;
}
