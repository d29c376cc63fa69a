#include "webhooks/offline_sale.h"

#include <doctest/doctest.h>

using namespace paintlock::webhooks;
using paintlock::locks::CatalogueEntry;

namespace {

std::optional<paintlock::locks::OfflineCart> Read(const std::map<std::string, std::string>& md) {
  std::string error;
  auto cart = OfflineCartOf(md, &error);
  if (md.count(kOfflineMarkerKey) && !cart) CHECK_FALSE(error.empty());
  return cart;
}

}  // namespace

TEST_CASE("offline cart: a full cart of long ids fits Stripe's metadata limits and reads back") {
  std::vector<CatalogueEntry> entries;
  for (int i = 0; i < 100; ++i) {
    std::string id = std::to_string(1000 + i) + std::string(60, 'x');
    entries.push_back({id, "title", 99999999999 - i, "eur"});
  }
  std::map<std::string, std::string> md = {{"reservation_id", "r"}};
  PutOfflineCart(entries, &md);
  CHECK(md.size() <= 50);
  for (const auto& [key, value] : md) {
    CHECK(key.size() <= 40);
    CHECK(value.size() <= 500);
  }
  auto cart = Read(md);
  REQUIRE(cart);
  CHECK(cart->currency == "eur");
  REQUIRE(cart->paintings.size() == 100);
  CHECK(cart->paintings[7] == entries[7].id);
  CHECK(cart->prices_minor[7] == entries[7].price_minor);
}

TEST_CASE("offline cart: an ordinary session has none, a bad one is refused with a reason") {
  CHECK_FALSE(Read({{"reservation_id", "r"}}));
  std::map<std::string, std::string> good;
  PutOfflineCart({{"p2", "b", 500, "eur"}, {"p1", "a", 1200, "eur"}}, &good);
  auto cart = Read(good);
  REQUIRE(cart);
  CHECK(cart->paintings == std::vector<std::string>{"p1", "p2"});
  CHECK(cart->prices_minor == std::vector<std::int64_t>{1200, 500});

  auto with = [&](const std::string& key, const std::string& value) {
    auto md = good;
    md[key] = value;
    return md;
  };
  CHECK_FALSE(Read(with("paintlock_offline", "yes")));
  CHECK_FALSE(Read(with("paintlock_currency", "EUR")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1:0")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1:-5")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1:100000000000")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1:5,p1:6")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p 1:5")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1")));
  CHECK_FALSE(Read(with("paintlock_cart_0", ":5")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1:5:6")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "-p1:5")));
  CHECK_FALSE(Read(with("paintlock_cart_0", "p1:05")));
  CHECK_FALSE(Read(with("paintlock_cart_0", std::string(65, 'a') + ":5")));
  CHECK_FALSE(Read(with("paintlock_cart_0", std::string(501, '1'))));
  std::vector<CatalogueEntry> too_many;
  for (int i = 0; i < 101; ++i) too_many.push_back({"q" + std::to_string(i), "t", 1, "eur"});
  std::map<std::string, std::string> md;
  PutOfflineCart(too_many, &md);
  CHECK_FALSE(Read(md));
}
