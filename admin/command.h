// The command registry of paintlockctl.
//
// A command is a name of one or more words ("holds", "catalog import"), a
// one-line summary, its --help text, its options, and a function. Each group
// of commands lives in its own file (holds_command.cc, …) and adds itself to
// the registry in a Register…Commands function (admin/commands.h); the main
// file only lists those functions. The registry owns the conventions every
// command shares:
//   * --help (and -h) prints the usage and exits 0; --json asks for one JSON
//     document on stdout instead of a table.
//   * Exit codes: 0 success, 1 failure, 2 bad usage. A failure or a usage
//     error is one line on stderr that says what to do; nothing is written
//     to stdout for a usage error.
//   * Options are checked before anything is opened, so a usage error never
//     needs a database.
// Not thread-safe: built once by main, then read.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "admin/arguments.h"
#include "admin/environment.h"
#include "locks/database.h"

namespace paintlock::admin {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadUsage = 2;

class CommandContext;

struct Command {
  std::string name;     // "holds", "catalog import"
  std::string summary;  // one line for `paintlockctl --help`
  std::string usage;    // the whole `paintlockctl NAME --help` text, ending in a newline
  std::vector<OptionSpec> options;  // besides --json and --help, which every command has
  size_t min_args = 0;              // positional arguments
  size_t max_args = 0;
  std::string args_problem;  // the usage error when their count is wrong
  std::function<int(CommandContext&)> run;
};

// What a running command sees: its arguments, the environment, its output.
class CommandContext {
 public:
  CommandContext(const Command& command, ParsedArgs args, AdminEnvironment& env, std::ostream& out,
                 std::ostream& err)
      : command_(command), args_(std::move(args)), env_(env), out_(out), err_(err) {}

  const ParsedArgs& args() const { return args_; }
  const std::string& arg(size_t i) const { return args_.positional().at(i); }
  AdminEnvironment& env() { return env_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  bool json() const { return args_.Has("json"); }

  // "paintlockctl: LINE" on stderr; returns kExitFailed.
  int Fail(const std::string& line);
  // "paintlockctl NAME: LINE (see paintlockctl NAME --help)"; returns kExitBadUsage.
  int BadUsage(const std::string& line);
  // "paintlockctl: warning: LINE" on stderr.
  void Warn(const std::string& line);
  // A database failure while `doing` something, with what to do about it.
  int FailDatabase(const locks::DbFailure& failure, const std::string& doing);
  // The JSON document of --json, pretty-printed.
  void PrintJson(const nlohmann::json& document);

  // The database, or nullptr after printing why (the caller returns kExitFailed).
  locks::Database* Database();

 private:
  const Command& command_;
  ParsedArgs args_;
  AdminEnvironment& env_;
  std::ostream& out_;
  std::ostream& err_;
};

class CommandRegistry {
 public:
  // Names must be unique; a name's first word may be shared (a group).
  void Add(Command command);

  // Runs the command named by the leading words of `args` (argv without the
  // program name) and returns its exit code. Prints the overview for
  // "--help", "-h" or "help", and a command's usage for "help NAME".
  int Run(const std::vector<std::string>& args, AdminEnvironment& env, std::ostream& out,
          std::ostream& err) const;

  // The command list of `paintlockctl --help` (or of one group).
  void PrintOverview(std::ostream& out, const std::string& group = "") const;

 private:
  const Command* Find(const std::vector<std::string>& args, size_t* words) const;

  std::vector<Command> commands_;
};

// A JSON value as a table cell: "" for null, strings unquoted, else dumped.
std::string Cell(const nlohmann::json& value);

}  // namespace paintlock::admin
