#include "stripe/buyer_details.h"

namespace paintlock::stripe {

namespace {

using json = nlohmann::json;

// The string at `key`, cut to kMaxBuyerFieldBytes without splitting a UTF-8
// character; "" when absent, null or not a string.
std::string Bounded(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  std::string s = it->get<std::string>();
  if (s.size() <= kMaxBuyerFieldBytes) return s;
  std::size_t cut = kMaxBuyerFieldBytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s;
}

const json* ObjectAt(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

BuyerDetails BuyerDetailsOf(const json& session) {
  BuyerDetails b;
  if (const json* customer = ObjectAt(session, "customer_details")) {
    b.name = Bounded(*customer, "name");
    b.email = Bounded(*customer, "email");
    b.phone = Bounded(*customer, "phone");
  }
  const json* shipping = nullptr;
  if (const json* collected = ObjectAt(session, "collected_information")) {
    shipping = ObjectAt(*collected, "shipping_details");
  }
  if (shipping == nullptr) shipping = ObjectAt(session, "shipping_details");
  if (shipping != nullptr) {
    b.shipping_name = Bounded(*shipping, "name");
    if (const json* address = ObjectAt(*shipping, "address")) {
      b.shipping_address.line1 = Bounded(*address, "line1");
      b.shipping_address.line2 = Bounded(*address, "line2");
      b.shipping_address.city = Bounded(*address, "city");
      b.shipping_address.postal_code = Bounded(*address, "postal_code");
      b.shipping_address.state = Bounded(*address, "state");
      b.shipping_address.country = Bounded(*address, "country");
    }
  }
  return b;
}

}  // namespace paintlock::stripe
