// JSON strings written in place are the bytes nlohmann writes.
#include "base/json_text.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using paintlock::base::AppendJsonString;

TEST_CASE("json text: a string appended in place is the bytes nlohmann's dump gives") {
  const std::vector<std::string> texts = {"",
                                          "api:alice",
                                          "/v1/ratelimits/api:x/take",
                                          "qu\"ote and back\\slash",
                                          std::string("nul \0 and \x01\x1f\x7f", 13),
                                          "tab\tnew\nline",
                                          "ünïcödé ✓",
                                          "\xff\xfe not utf-8"};
  for (const std::string& text : texts) {
    CAPTURE(text);
    std::string out = "[";
    AppendJsonString(out, text);
    CHECK(out == "[" + nlohmann::json(text).dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace));
  }
}
