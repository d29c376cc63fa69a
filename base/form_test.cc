#include "base/form.h"

#include <doctest/doctest.h>

#include <string>

namespace paintlock::base {
namespace {

TEST_CASE("FormKey nests with brackets") {
  CHECK(FormKey("mode") == "mode");
  CHECK(FormKey("metadata", {"reservation_id"}) == "metadata[reservation_id]");
  CHECK(FormKey("line_items", {"0", "price_data", "product_data", "name"}) ==
        "line_items[0][price_data][product_data][name]");
}

TEST_CASE("PercentEncode keeps only RFC 3986 unreserved characters") {
  CHECK(PercentEncode("AZaz09-._~") == "AZaz09-._~");
  CHECK(PercentEncode("a b") == "a%20b");
  CHECK(PercentEncode("&=+%/?#[]{}") == "%26%3D%2B%25%2F%3F%23%5B%5D%7B%7D");
  CHECK(PercentEncode(std::string("\0\n", 2)) == "%00%0A");
  // UTF-8 byte by byte, upper-case hex: "é" is C3 A9.
  CHECK(PercentEncode("caf\xC3\xA9") == "caf%C3%A9");
}

TEST_CASE("EncodeForm keeps brackets raw in keys, encodes them in values, keeps order") {
  FormFields fields = {{"mode", "payment"},
                       {"metadata[reservation_id]", "r-1 [x]"},
                       {"line_items[0][quantity]", "1"}};
  CHECK(EncodeForm(fields) ==
        "mode=payment&metadata[reservation_id]=r-1%20%5Bx%5D&line_items[0][quantity]=1");
  CHECK(EncodeForm({}).empty());
  CHECK(EncodeForm({{"k", ""}}) == "k=");
  // A key byte that is neither unreserved nor a bracket is escaped too.
  CHECK(EncodeForm({{"metadata[a b&c]", "v"}}) == "metadata[a%20b%26c]=v");
}

TEST_CASE("PercentDecode accepts both hex cases and '+', and refuses bad escapes") {
  std::string out;
  REQUIRE(PercentDecode("a%20b+c%2b%2B%c3%A9", &out));
  CHECK(out == "a b c++\xC3\xA9");
  CHECK_FALSE(PercentDecode("%", &out));
  CHECK_FALSE(PercentDecode("%4", &out));
  CHECK_FALSE(PercentDecode("ab%G0", &out));
  CHECK_FALSE(PercentDecode("%0G", &out));
}

TEST_CASE("DecodeForm reads brackets raw or escaped, skips empty pairs") {
  FormFields out;
  REQUIRE(DecodeForm("metadata%5Breservation_id%5D=r1&&metadata[k]=v&flag&e=", &out));
  REQUIRE(out.size() == 4);
  CHECK(out[0] == std::pair<std::string, std::string>("metadata[reservation_id]", "r1"));
  CHECK(out[1] == std::pair<std::string, std::string>("metadata[k]", "v"));
  CHECK(out[2] == std::pair<std::string, std::string>("flag", ""));
  CHECK(out[3] == std::pair<std::string, std::string>("e", ""));
  CHECK_FALSE(DecodeForm("a=%ZZ", &out));
  REQUIRE(DecodeForm("", &out));
  CHECK(out.empty());
}

TEST_CASE("Round trip: reserved characters, unicode and {CHECKOUT_SESSION_ID} survive") {
  const std::string nasty = "a&b=c+d %25 #frag ?q /p [x] {y} \"q\" 'a' \\ ~ \t\r\n";
  const std::string unicode =
      "Nymph\xC3\xA9"
      "as \xE6\xB0\xB4\xE8\x93\xAE \xF0\x9F\x8E\xA8";  // é, 水蓮, 🎨
  const std::string success = "https://shop.example/thanks?session_id={CHECKOUT_SESSION_ID}&x=1";
  FormFields in = {{"a", nasty},
                   {FormKey("line_items", {"0", "price_data", "product_data", "name"}), unicode},
                   {"success_url", success},
                   {FormKey("metadata", {"k"}), ""}};
  const std::string body = EncodeForm(in);
  // Nothing that could split or terminate a field is left raw in the body.
  CHECK(body.find(' ') == std::string::npos);
  CHECK(body.find('{') == std::string::npos);
  CHECK(body.find("%7BCHECKOUT_SESSION_ID%7D") != std::string::npos);
  FormFields out;
  REQUIRE(DecodeForm(body, &out));
  CHECK(out == in);
}

}  // namespace
}  // namespace paintlock::base
