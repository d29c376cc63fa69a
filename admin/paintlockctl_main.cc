// paintlockctl: the admin CLI. Only this file wires concrete objects: the
// command registry (each group adds itself, admin/commands.h) and the
// environment it connects with. Exit codes: 0 success, 1 failure, 2 bad usage.
#include <iostream>
#include <string>
#include <vector>

#include "admin/command.h"
#include "admin/commands.h"
#include "admin/environment.h"
#include "base/log.h"
#include "base/version.h"

int main(int argc, char** argv) {
  using namespace paintlock;
  base::SetLogComponent("paintlockctl");
  // The CLI speaks in tables and one-line errors; the modules' JSON log lines
  // would only get in the way of both.
  base::SetLogLevel(base::LogLevel::kOff);
  admin::CommandRegistry registry;
  admin::RegisterAllCommands(registry);
  admin::AdminEnvironment env(base::ProcessEnv);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << "paintlockctl " << base::kVersion << "\n";
    return 0;
  }
  const int code = registry.Run(args, env, std::cout, std::cerr);
  std::cout.flush();
  return code;
}
