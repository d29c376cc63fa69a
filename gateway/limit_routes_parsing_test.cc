#include "gateway/limit_routes_parsing.h"

#include <doctest/doctest.h>

using namespace paintlock::gateway;
using nlohmann::json;

namespace {

std::string ErrorOf(const std::variant<std::int64_t, FieldError>& v) {
  const auto* e = std::get_if<FieldError>(&v);
  return e ? e->message : "";
}

}  // namespace

TEST_CASE(
    "credits, rate limits, leases: bodies must be JSON objects, an empty body is {} only where "
    "every field is optional") {
  CHECK(std::holds_alternative<json>(ParseJsonObject("{\"a\":1}", false)));
  CHECK(std::holds_alternative<json>(ParseJsonObject("  ", true)));
  CHECK(std::holds_alternative<FieldError>(ParseJsonObject("", false)));
  CHECK(std::holds_alternative<FieldError>(ParseJsonObject("[1]", true)));
  CHECK(std::holds_alternative<FieldError>(ParseJsonObject("{\"a\":", true)));
  CHECK(std::holds_alternative<FieldError>(ParseJsonObject("42", true)));
}

TEST_CASE("credits, rate limits, leases: whole numbers: JSON integers in range, nothing else") {
  const json body = json::parse(R"({"int": 5, "zero": 0, "neg": -3, "frac": 5.5, "float": 5.0,
      "exp": 1e3, "str": "5", "bool": true, "big": 18446744073709551615, "huge": 1e300,
      "null": null})");
  CHECK(std::get<std::int64_t>(WholeNumberField(body, "int", 1, 10, std::nullopt)) == 5);
  CHECK(ErrorOf(WholeNumberField(body, "zero", 1, 10, std::nullopt)).find("from 1 to 10") !=
        std::string::npos);
  for (const char* field : {"neg", "frac", "float", "exp", "str", "bool", "big", "huge"}) {
    auto v = WholeNumberField(body, field, 1, 1000000, std::nullopt);
    REQUIRE_MESSAGE(std::holds_alternative<FieldError>(v), field);
    CHECK(std::get<FieldError>(v).param == field);
  }
  CHECK(ErrorOf(WholeNumberField(body, "frac", 1, 10, std::nullopt)).find("got number") !=
        std::string::npos);
  CHECK(ErrorOf(WholeNumberField(body, "str", 1, 10, std::nullopt)).find("string") !=
        std::string::npos);
  // Absent or null: the fallback, or a "required" error naming the field.
  CHECK(std::get<std::int64_t>(WholeNumberField(body, "missing", 1, 10, 7)) == 7);
  CHECK(std::get<std::int64_t>(WholeNumberField(body, "null", 1, 10, 7)) == 7);
  CHECK(ErrorOf(WholeNumberField(body, "missing", 1, 10, std::nullopt)).find("required") !=
        std::string::npos);
  // The top of the range is inclusive, even at int64's end.
  const json max = json::parse("{\"t\": 9223372036854775807}");
  CHECK(std::get<std::int64_t>(WholeNumberField(max, "t", 1, INT64_MAX, std::nullopt)) ==
        INT64_MAX);
}

TEST_CASE("credits, rate limits, leases: text fields are strings") {
  const json body = json::parse(R"({"s": "api", "n": 3})");
  CHECK(std::get<std::string>(TextField(body, "s", std::nullopt)) == "api");
  CHECK(std::get<std::string>(TextField(body, "missing", std::string("d"))) == "d");
  CHECK(std::holds_alternative<FieldError>(TextField(body, "n", std::nullopt)));
  CHECK(std::holds_alternative<FieldError>(TextField(body, "missing", std::nullopt)));
}

TEST_CASE("credits, rate limits, leases: query-parameter numbers are plain decimal digits") {
  CHECK(ParseWholeNumber("42", 1, 100) == 42);
  CHECK(!ParseWholeNumber("", 1, 100));
  CHECK(!ParseWholeNumber("-1", 1, 100));
  CHECK(!ParseWholeNumber("+1", 1, 100));
  CHECK(!ParseWholeNumber("1.0", 1, 100));
  CHECK(!ParseWholeNumber("0", 1, 100));
  CHECK(!ParseWholeNumber("101", 1, 100));
  CHECK(!ParseWholeNumber("99999999999999999999", 1, INT64_MAX));
}
