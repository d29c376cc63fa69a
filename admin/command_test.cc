#include "admin/command.h"

#include <doctest/doctest.h>

#include <sstream>

#include "admin/commands.h"

using namespace paintlock::admin;

namespace {

struct Ran {
  int code = -1;
  std::string out, err;
};

// A registry with two made-up commands (one in a group) that record what they saw.
struct Fixture {
  Fixture() {
    registry.Add({"greet",
                  "say hello",
                  "Usage: paintlockctl greet NAME [--loud]\n",
                  {{"loud", false}, {"times", true}},
                  1,
                  1,
                  "greet takes one NAME",
                  [this](CommandContext& ctx) {
                    seen_name = ctx.arg(0);
                    seen_json = ctx.json();
                    ctx.out() << (ctx.args().Has("loud") ? "HELLO " : "hello ") << ctx.arg(0)
                              << "\n";
                    return kExitOk;
                  }});
    registry.Add(
        {"shelf list",
         "list the shelf",
         "Usage: paintlockctl shelf list\n",
         {},
         0,
         0,
         "shelf list takes no arguments",
         [](CommandContext& ctx) { return ctx.Fail("the shelf is on fire: call someone"); }});
  }
  Ran Run(std::vector<std::string> args) {
    AdminEnvironment env([](const std::string&) { return std::optional<std::string>(); });
    std::ostringstream out, err;
    Ran r;
    r.code = registry.Run(args, env, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }
  CommandRegistry registry;
  std::string seen_name;
  bool seen_json = false;
};

bool OneLine(const std::string& s) {
  return !s.empty() && s.back() == '\n' && s.find('\n') == s.size() - 1;
}

}  // namespace

TEST_CASE("admin: the registry runs a command with its options and arguments") {
  Fixture f;
  Ran r = f.Run({"greet", "--loud", "ada", "--json"});
  CHECK(r.code == kExitOk);
  CHECK(r.out == "HELLO ada\n");
  CHECK(r.err.empty());
  CHECK(f.seen_name == "ada");
  CHECK(f.seen_json);

  Ran failed = f.Run({"shelf", "list"});
  CHECK(failed.code == kExitFailed);
  CHECK(failed.err == "paintlockctl: the shelf is on fire: call someone\n");
}

TEST_CASE("admin: --help anywhere prints the usage, and the overview lists every command") {
  Fixture f;
  for (const auto& args : std::vector<std::vector<std::string>>{{"greet", "--help"},
                                                                {"greet", "x", "-h"},
                                                                {"help", "greet"},
                                                                {"greet", "--nope", "--help"}}) {
    Ran r = f.Run(args);
    CHECK(r.code == kExitOk);
    CHECK(r.out == "Usage: paintlockctl greet NAME [--loud]\n");
  }
  Ran overview = f.Run({"--help"});
  CHECK(overview.code == kExitOk);
  CHECK(overview.out.find("greet       say hello") != std::string::npos);
  CHECK(overview.out.find("shelf list  list the shelf") != std::string::npos);
  Ran group = f.Run({"shelf", "--help"});
  CHECK(group.code == kExitOk);
  CHECK(group.out == "  shelf list  list the shelf\n");
  // "--" ends options: a --help after it is an argument.
  CHECK(f.Run({"greet", "--", "--help"}).out == "hello --help\n");
}

TEST_CASE("admin: bad usage exits 2 with one line on stderr and nothing on stdout") {
  Fixture f;
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{}, "paintlockctl: name a command (see paintlockctl --help)\n"},
      {{"frobnicate"}, "paintlockctl: unknown command \"frobnicate\" (see paintlockctl --help)\n"},
      {{"help", "frobnicate"},
       "paintlockctl: unknown command \"frobnicate\" (see paintlockctl --help)\n"},
      {{"greet"}, "paintlockctl greet: greet takes one NAME (see paintlockctl greet --help)\n"},
      {{"greet", "a", "b"},
       "paintlockctl greet: greet takes one NAME (see paintlockctl greet --help)\n"},
      {{"greet", "a", "--nope"},
       "paintlockctl greet: unknown option --nope (see paintlockctl greet --help)\n"},
      {{"greet", "a", "--times"},
       "paintlockctl greet: --times needs a value (see paintlockctl greet --help)\n"},
      {{"shelf"}, "paintlockctl: shelf needs a subcommand: list (see paintlockctl shelf --help)\n"},
      {{"shelf", "burn"}, "paintlockctl: unknown shelf command \"burn\" (shelf has: list)\n"},
  };
  for (const auto& c : cases) {
    INFO(c.err);
    Ran r = f.Run(c.args);
    CHECK(r.code == kExitBadUsage);
    CHECK(r.out.empty());
    CHECK(r.err == c.err);
    CHECK(OneLine(r.err));
  }
}

TEST_CASE("admin: every paintlockctl command has a summary and a usage with an example") {
  CommandRegistry registry;
  RegisterAllCommands(registry);
  std::ostringstream overview;
  registry.PrintOverview(overview);
  for (const char* name : {"holds", "show", "release", "sold", "unsold", "reconcile", "events",
                           "sweep", "contacts forget", "catalog import", "migrate"}) {
    INFO(name);
    CHECK(overview.str().find(std::string("  ") + name + " ") != std::string::npos);
    AdminEnvironment env([](const std::string&) { return std::optional<std::string>(); });
    std::ostringstream out, err;
    std::vector<std::string> args;
    std::istringstream words(name);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    CHECK(registry.Run(args, env, out, err) == kExitOk);
    CHECK(out.str().rfind(std::string("Usage: paintlockctl ") + name, 0) == 0);
    CHECK(out.str().find("Example") != std::string::npos);
  }
}

TEST_CASE("admin: a command that needs the database says how to give it one") {
  CommandRegistry registry;
  RegisterAllCommands(registry);
  AdminEnvironment env([](const std::string&) { return std::optional<std::string>(); });
  std::ostringstream out, err;
  CHECK(registry.Run({"holds"}, env, out, err) == kExitFailed);
  CHECK(
      err.str() ==
      "paintlockctl: DATABASE_URL is not set: export the database's libpq URI (postgresql://…)\n");
  CHECK(out.str().empty());
}
