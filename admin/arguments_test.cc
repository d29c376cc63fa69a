#include "admin/arguments.h"

#include <doctest/doctest.h>

using namespace paintlock::admin;

namespace {
const std::vector<OptionSpec> kOptions = {
    {"reason", true}, {"force", false}, {"json", false}, {"help", false}};
}

TEST_CASE("admin: options and arguments in any order, with = or a separate value") {
  std::string error;
  auto a = ParseArgs({"R1", "--reason", "buyer asked", "--force", "--json"}, kOptions, &error);
  REQUIRE(a.has_value());
  CHECK(a->positional() == std::vector<std::string>{"R1"});
  CHECK(a->Value("reason") == "buyer asked");
  CHECK(a->Has("force"));
  CHECK(a->Has("json"));
  CHECK(!a->Value("missing").has_value());

  auto b = ParseArgs({"--reason=x=y", "R1", "-h"}, kOptions, &error);
  REQUIRE(b.has_value());
  CHECK(b->Value("reason") == "x=y");
  CHECK(b->Has("help"));

  // After "--" everything is an argument, and a value may start with a dash.
  auto c = ParseArgs({"--reason", "--force", "--", "--json", "-"}, kOptions, &error);
  REQUIRE(c.has_value());
  CHECK(c->Value("reason") == "--force");
  CHECK(!c->Has("force"));
  CHECK(c->positional() == std::vector<std::string>{"--json", "-"});
}

TEST_CASE("admin: bad options are named in one line") {
  struct Case {
    std::vector<std::string> args;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{{{"--nope"}, "unknown option --nope"},
                                         {{"-x"}, "unknown option -x"},
                                         {{"--reason"}, "--reason needs a value"},
                                         {{"--force=yes"}, "--force takes no value"},
                                         {{"--force", "--force"}, "--force is given twice"}}) {
    std::string error;
    CHECK(!ParseArgs(c.args, kOptions, &error).has_value());
    CHECK(error == c.error);
  }
}
