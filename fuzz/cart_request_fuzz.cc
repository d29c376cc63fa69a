// Checkout and reservation bodies (gateway/request_parsing.h): JSON with and
// without "buyer", and the HTML form. The first byte picks the parser.
// Properties: an accepted cart passes ValidateCart (1..100 valid, distinct
// ids) and a buyer is at most 200 bytes and only where allowed; a refusal
// comes with a sentence that fits in a JSON error body (valid UTF-8), since
// the gateway answers it as one.
#include <set>
#include <string>

#include "fuzz/fuzz_support.h"
#include "gateway/request_parsing.h"
#include "locks/painting_id.h"

using namespace paintlock;

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
