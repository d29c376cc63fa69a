#include "base/text.h"

#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

namespace paintlock::base {
namespace {

TEST_CASE("EqualsIgnoringCase compares ASCII letters without their case, and nothing else") {
  CHECK(EqualsIgnoringCase("Content-Length", "content-length"));
  CHECK(EqualsIgnoringCase("", ""));
  CHECK_FALSE(EqualsIgnoringCase("Content-Length", "content-lengt"));
  CHECK_FALSE(EqualsIgnoringCase("a", "b"));
  CHECK_FALSE(EqualsIgnoringCase("\xc3\x89", "\xc3\xa9"));  // É and é: not ASCII
  CHECK_FALSE(EqualsIgnoringCase("@", "`"));                // 0x40 and 0x60: letters only
}

TEST_CASE("IsToken agrees with the regular expression it replaces") {
  // ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$, the painting id, against IsToken(s, 1, 64, "", "_.-").
  const std::regex painting("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  std::vector<std::string> samples = {"",
                                      "a",
                                      "p1",
                                      "Z9",
                                      "_a",
                                      ".a",
                                      "-a",
                                      "a_b.c-d",
                                      "a b",
                                      "a:b",
                                      "é",
                                      std::string("a\0b", 3),
                                      "a\n",
                                      "\na",
                                      std::string(64, 'x'),
                                      std::string(65, 'x'),
                                      "A-Z",
                                      "a/b"};
  for (int c = 0; c < 256; ++c) {
    samples.push_back(std::string(1, static_cast<char>(c)));
    samples.push_back("a" + std::string(1, static_cast<char>(c)));
  }
  for (const auto& s : samples) {
    CAPTURE(s);
    CHECK(IsToken(s, 1, 64, "", "_.-") == std::regex_match(s, painting));
  }
}

TEST_CASE("IsToken: length bounds and the first byte's own set") {
  CHECK(IsToken("@x", 1, 200, "_.:@-", "_.:@-"));
  CHECK(!IsToken("@x", 1, 64, "", "_.:@-"));
  CHECK(!IsToken("", 1, 5, "", ""));
  CHECK(IsToken("abcde", 1, 5, "", ""));
  CHECK(!IsToken("abcdef", 1, 5, "", ""));
  CHECK(!IsToken("ab", 3, 5, "", ""));
}

}  // namespace
}  // namespace paintlock::base
