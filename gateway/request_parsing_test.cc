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

// The JSON cart is read as a stream (nlohmann's SAX interface), with the
// answers a document would give. fuzz/cart_request_fuzz.cc compares the two
// on every input it makes; these are the cases a stream could get wrong.
TEST_CASE("a JSON cart read as a stream answers as the whole document would") {
  struct Case {
    const char* body;
    const char* error;  // "" when the cart is taken
    const char* param;
    std::vector<std::string> paintings;
  };
  const std::string not_json = "The body is not valid JSON.";
  const Case cases[] = {
      // The last of a repeated key wins, whatever the first was.
      {R"({"paintings": 5, "paintings": ["p1"]})", "", "", {"p1"}},
      {R"({"paintings": ["p1"], "paintings": 5})",
       "\"paintings\" must be a list of painting ids.",
       "paintings",
       {}},
      {R"({"paintings": ["p1"], "paintings": ["p2", "p3"]})", "", "", {"p2", "p3"}},
      // Other keys, and fields of the same name nested in them, are passed over.
      {R"({"x": {"paintings": [1], "buyer": 2}, "paintings": ["p1"], "y": [[{}]]})",
       "",
       "",
       {"p1"}},
      // An element that is not a string, however nested, is refused...
      {R"({"paintings": [["p1"]]})",
       "\"paintings\" must contain only painting ids (strings).",
       "paintings",
       {}},
      {R"({"paintings": ["p1", {"id": "p2"}]})",
       "\"paintings\" must contain only painting ids (strings).",
       "paintings",
       {}},
      {R"({"paintings": {"p1": true}})",
       "\"paintings\" must be a list of painting ids.",
       "paintings",
       {}},
      // ...and escapes are read as JSON reads them.
      {R"({"paintings": ["p\u0031", "p\u002e2"]})", "", "", {"p1", "p.2"}},
      {R"({"paintings": ["p1"], "buyer": null, "line_token": null})", "", "", {"p1"}},
      {R"({"paintings": ["p1"], "line_token": 7})",
       "\"line_token\" must be a string.",
       "line_token",
       {}},
      {R"({"paintings": ["p1"], "buyer": ["b"]})", "\"buyer\" is not accepted here.", "buyer", {}},
      // A syntax error anywhere, even after what settles the answer, is one.
      {R"({"paintings": ["p1"]} x)", not_json.c_str(), "", {}},
      {R"(["p1", )", not_json.c_str(), "", {}},
      {R"({"paintings": 5, )", not_json.c_str(), "", {}},
      {R"(["p1"])", "The body must be a JSON object such as {\"paintings\": [\"p1\"]}.", "", {}},
      {R"("p1")", "The body must be a JSON object such as {\"paintings\": [\"p1\"]}.", "", {}},
  };
  for (const Case& c : cases) {
    const std::string body = c.body;
    CAPTURE(body);
    std::string error, param;
    const auto cart = ParseCartJson(body, /*allow_buyer=*/false, &error, &param);
    CHECK(error == std::string(c.error));
    CHECK(param == std::string(c.param));
    CHECK(cart.has_value() == (std::string(c.error).empty()));
    if (cart) CHECK(cart->paintings == c.paintings);
  }

  // Past 100 elements the count is the answer, whatever they are; only the
  // elements count, not what is nested in them.
  const auto of = [](int elements) {
    std::string body = "{\"paintings\": [";
    for (int i = 0; i < elements; ++i) body += i ? ",[1, 2]" : "[1, 2]";
    return body + "]}";
  };
  std::string error, param;
  CHECK(!ParseCartJson(of(101), false, &error, &param));
  CHECK(error == "A cart holds at most 100 paintings.");
  CHECK(!ParseCartJson(of(60), false, &error, &param));
  CHECK(error == "\"paintings\" must contain only painting ids (strings).");
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
