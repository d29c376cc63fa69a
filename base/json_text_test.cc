// JSON strings written in place are the bytes nlohmann writes.
#include "base/json_text.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using paintlock::base::AppendJsonString;
using paintlock::base::JsonObjectText;

namespace {

const std::vector<std::string> kHostileTexts = {"",
                                                "api:alice",
                                                "/v1/ratelimits/api:x/take",
                                                "qu\"ote and back\\slash",
                                                std::string("nul \0 and \x01\x1f\x7f", 13),
                                                "tab\tnew\nline",
                                                "ünïcödé ✓",
                                                "\xff\xfe not utf-8"};

std::string NlohmannDump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

TEST_CASE("json text: a string appended in place is the bytes nlohmann's dump gives") {
  for (const std::string& text : kHostileTexts) {
    CAPTURE(text);
    std::string out = "[";
    AppendJsonString(out, text);
    CHECK(out == "[" + NlohmannDump(text));
  }
}

TEST_CASE("json text: an object written member by member is the bytes nlohmann's dump gives") {
  for (const std::string& text : kHostileTexts) {
    for (std::int64_t n :
         {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
          std::numeric_limits<std::int64_t>::max()}) {
      CAPTURE(text);
      CAPTURE(n);
      const std::vector<std::string> list = {text, "p1", text};
      std::string out;
      JsonObjectText(out)
          .Bool("allowed", n == 0)
          .Strings("empty", {})
          .Int("n", n)
          .Strings("paintings", list)
          .String("text", text)
          .End();
      CHECK(out == NlohmannDump({{"allowed", n == 0},
                                 {"empty", nlohmann::json::array()},
                                 {"n", n},
                                 {"paintings", list},
                                 {"text", text}}));
    }
  }
  std::string empty;
  JsonObjectText(empty).End();
  CHECK(empty == NlohmannDump(nlohmann::json::object()));
}
