#include "webhooks/offline_sale.h"

#include <algorithm>
#include <regex>
#include <sstream>

#include "locks/painting_id.h"

namespace paintlock::webhooks {

namespace {

constexpr size_t kMaxValue = 500;                // Stripe's limit on a metadata value
constexpr size_t kMaxPaintings = 100;            // a cart's limit, as for every checkout
constexpr int kMaxCartKeys = 20;                 // 100 items of at most 77 characters need 16
constexpr std::int64_t kMaxPrice = 99999999999;  // paintings.price_minor's CHECK

std::string CartKey(int i) { return "paintlock_cart_" + std::to_string(i); }

}  // namespace

void PutOfflineCart(const std::vector<locks::CatalogueEntry>& entries,
                    std::map<std::string, std::string>* metadata) {
  (*metadata)[kOfflineMarkerKey] = "1";
  if (!entries.empty()) (*metadata)["paintlock_currency"] = entries.front().currency;
  int key = 0;
  std::string chunk;
  for (const auto& e : entries) {
    const std::string item = e.id + ":" + std::to_string(e.price_minor);
    if (!chunk.empty() && chunk.size() + 1 + item.size() > kMaxValue) {
      (*metadata)[CartKey(key++)] = chunk;
      chunk.clear();
    }
    chunk += (chunk.empty() ? "" : ",") + item;
  }
  if (!chunk.empty()) (*metadata)[CartKey(key)] = chunk;
}

std::optional<locks::OfflineCart> OfflineCartOf(const std::map<std::string, std::string>& metadata,
                                                std::string* error) {
  auto marker = metadata.find(kOfflineMarkerKey);
  if (marker == metadata.end()) return std::nullopt;
  auto fail = [&](const std::string& why) -> std::optional<locks::OfflineCart> {
    *error = why;
    return std::nullopt;
  };
  if (marker->second != "1") return fail("paintlock_offline is not 1");
  static const std::regex currency_re("^[a-z]{3}$");
  static const std::regex price_re("^[1-9][0-9]{0,10}$");
  auto currency = metadata.find("paintlock_currency");
  if (currency == metadata.end() || !std::regex_match(currency->second, currency_re)) {
    return fail("paintlock_currency is not a currency code");
  }
  std::vector<std::pair<std::string, std::int64_t>> items;
  for (int i = 0; i < kMaxCartKeys; ++i) {
    auto chunk = metadata.find(CartKey(i));
    if (chunk == metadata.end()) break;
    if (chunk->second.size() > kMaxValue) return fail(CartKey(i) + " is too long");
    std::stringstream in(chunk->second);
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto colon = item.find(':');  // "id:price"; ids have no ':'
      if (colon == std::string::npos) return fail(CartKey(i) + " has a bad item");
      std::string id = item.substr(0, colon);
      const std::string digits = item.substr(colon + 1);
      if (!locks::IsPaintingId(id) || !std::regex_match(digits, price_re)) {
        return fail(CartKey(i) + " has a bad item");
      }
      const std::int64_t price = std::stoll(digits);
      if (price > kMaxPrice) return fail(CartKey(i) + " has a bad price");
      if (items.size() == kMaxPaintings) return fail("the cart has more than 100 paintings");
      items.emplace_back(std::move(id), price);
    }
  }
  if (items.empty()) return fail("the cart is empty");
  std::sort(items.begin(), items.end());
  locks::OfflineCart cart;
  cart.currency = currency->second;
  for (const auto& [id, price] : items) {
    if (!cart.paintings.empty() && cart.paintings.back() == id) {
      return fail("the cart names a painting twice");
    }
    cart.paintings.push_back(id);
    cart.prices_minor.push_back(price);
  }
  return cart;
}

}  // namespace paintlock::webhooks
