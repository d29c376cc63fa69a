#include "gateway/request_parsing.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace paintlock::gateway;

TEST_CASE("form bodies decode repeated keys, plus signs and escapes") {
  auto form = ParseForm("painting=p1&painting=p%202&x=a+b&empty=&flag");
  REQUIRE(form);
  REQUIRE(form->size() == 5);
  CHECK((*form)[1].second == "p 2");
  CHECK((*form)[2].second == "a b");
  CHECK((*form)[3].second == "");
  CHECK((*form)[4].first == "flag");
  CHECK(!ParseForm("painting=%4"));
  CHECK(!ParseForm("painting=%zz"));
}

TEST_CASE("carts are non-empty, without duplicates, at most 100") {
  std::string error, param;
  auto cart = ParseCartJson(R"({"paintings": ["p2", "p1"]})", false, &error, &param);
  REQUIRE(cart);
  CHECK(cart->paintings == std::vector<std::string>{"p2", "p1"});
  CHECK(!ParseCartJson(R"({"paintings": []})", false, &error, &param));
  CHECK(error.find("empty") != std::string::npos);
  CHECK(!ParseCartJson(R"({"paintings": ["a", "a"]})", false, &error, &param));
  CHECK(error.find("twice") != std::string::npos);
  CHECK(!ParseCartJson(R"({"paintings": ["a"], "buyer": "x"})", false, &error, &param));
  CHECK(param == "buyer");
  auto with_buyer =
      ParseCartJson(R"({"paintings": ["a"], "buyer": "order-1"})", true, &error, &param);
  REQUIRE(with_buyer);
  CHECK(*with_buyer->buyer_ref == "order-1");
  std::string many = "{\"paintings\": [";
  for (int i = 0; i < 101; ++i) many += (i ? ",\"p" : "\"p") + std::to_string(i) + "\"";
  many += "]}";
  CHECK(!ParseCartJson(many, false, &error, &param));
  CHECK(error.find("100") != std::string::npos);
  auto form = ParseCartForm("painting=p1&painting=p2&other=x", &error, &param);
  REQUIRE(form);
  CHECK(form->paintings.size() == 2);
  CHECK(!ParseCartForm("other=x", &error, &param));
}

// Whatever bytes a refused id carries, the sentence about it goes into a JSON
// error body, which nlohmann refuses to write for invalid UTF-8 (the gateway
// answered 500 instead of 400). Found by fuzz/cart_request_fuzz.cc.
TEST_CASE("a refused painting id is quoted in printable ASCII whatever bytes it had") {
  std::string error, param;
  CHECK(!ParseCartForm("painting=%FF%FE", &error, &param));
  CHECK(error == "\"??\" is not a painting id (1-64 letters, digits, '_', '.', '-').");
  CHECK_NOTHROW((void)nlohmann::json(error).dump());

  // An 80-byte cut through a two-byte UTF-8 character of a JSON string.
  std::string long_id;
  for (int i = 0; i < 41; ++i) long_id += "\xC3\xA9";
  CHECK(!ParseCartJson("{\"paintings\": [\"" + long_id + "\"]}", false, &error, &param));
  CHECK_NOTHROW((void)nlohmann::json(error).dump());
  CHECK(error.find(std::string(80, '?')) != std::string::npos);
}

TEST_CASE("printable excerpts cut to length and replace every non-ASCII byte") {
  CHECK(PrintableExcerpt("p1", 80) == "p1");
  CHECK(PrintableExcerpt("abcdef", 3) == "abc");
  CHECK(PrintableExcerpt("a\nb\x7f\xC3\xA9", 10) == "a?b???");
}
