#include "admin/command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace paintlock::admin {

namespace {

std::vector<std::string> Words(const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(name);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool AsksForHelp(const std::vector<std::string>& args, size_t from) {
  for (size_t i = from; i < args.size(); ++i) {
    if (args[i] == "--") return false;
    if (args[i] == "--help" || args[i] == "-h") return true;
  }
  return false;
}

constexpr const char* kProgramIntro =
    "Usage: paintlockctl COMMAND [ARGUMENTS] [OPTIONS]\n"
    "\n"
    "Administers a paintlock database: holds, releases, sales, the catalogue and\n"
    "what Stripe said. Connects with DATABASE_URL; the commands that ask Stripe use\n"
    "STRIPE_SECRET_KEY, STRIPE_API_BASE and STRIPE_CA_FILE, as the gateway does.\n"
    "\n"
    "Commands:\n";

constexpr const char* kProgramOutro =
    "\n"
    "Every command takes --help, and --json for one JSON document instead of a table.\n"
    "Exit codes: 0 success, 1 failure, 2 bad usage.\n";

}  // namespace

int CommandContext::Fail(const std::string& line) {
  err_ << "paintlockctl: " << line << "\n";
  return kExitFailed;
}

int CommandContext::BadUsage(const std::string& line) {
  err_ << "paintlockctl " << command_.name << ": " << line << " (see paintlockctl " << command_.name
       << " --help)\n";
  return kExitBadUsage;
}

void CommandContext::Warn(const std::string& line) {
  err_ << "paintlockctl: warning: " << line << "\n";
}

int CommandContext::FailDatabase(const locks::DbFailure& failure, const std::string& doing) {
  switch (failure.kind) {
    case locks::DbFailureKind::kUnavailable:
      return Fail(doing + ": the database is unavailable (" + failure.detail +
                  "); nothing was changed, try again");
    case locks::DbFailureKind::kContended:
      return Fail(doing +
                  ": the rows are locked by a checkout or a webhook right now; try again "
                  "in a moment");
    case locks::DbFailureKind::kInternal:
      break;
  }
  std::string detail = failure.detail;
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  return Fail(doing + ": database error: " + detail);
}

void CommandContext::PrintJson(const nlohmann::json& document) { out_ << document.dump(2) << "\n"; }

locks::Database* CommandContext::Database() {
  std::string error;
  locks::Database* db = env_.Database(&error);
  if (!db) Fail(error);
  return db;
}

void CommandRegistry::Add(Command command) {
  for (const auto& c : commands_) {
    if (c.name == command.name) {
      // Two files claiming one name is a bug in this binary, not a user's error.
      std::fprintf(stderr, "paintlockctl: command \"%s\" registered twice\n", c.name.c_str());
      std::abort();
    }
  }
  commands_.push_back(std::move(command));
}

const Command* CommandRegistry::Find(const std::vector<std::string>& args, size_t* words) const {
  const Command* best = nullptr;
  size_t best_words = 0;
  for (const auto& c : commands_) {
    const auto name = Words(c.name);
    if (name.size() > args.size() || name.size() <= best_words) continue;
    if (std::equal(name.begin(), name.end(), args.begin())) {
      best = &c;
      best_words = name.size();
    }
  }
  *words = best_words;
  return best;
}

void CommandRegistry::PrintOverview(std::ostream& out, const std::string& group) const {
  if (group.empty()) out << kProgramIntro;
  size_t width = 0;
  for (const auto& c : commands_) width = std::max(width, c.name.size());
  for (const auto& c : commands_) {
    if (!group.empty() && Words(c.name)[0] != group) continue;
    out << "  " << std::left << std::setw(static_cast<int>(width) + 2) << c.name << c.summary
        << "\n";
  }
  if (group.empty()) out << kProgramOutro;
}

int CommandRegistry::Run(const std::vector<std::string>& args, AdminEnvironment& env,
                         std::ostream& out, std::ostream& err) const {
  if (args.empty()) {
    err << "paintlockctl: name a command (see paintlockctl --help)\n";
    return kExitBadUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args[0] == "help" && args.size() > 1) {
      size_t words = 0;
      const std::vector<std::string> rest(args.begin() + 1, args.end());
      if (const Command* c = Find(rest, &words)) {
        out << c->usage;
        return kExitOk;
      }
      err << "paintlockctl: unknown command \"" << args[1] << "\" (see paintlockctl --help)\n";
      return kExitBadUsage;
    }
    PrintOverview(out);
    return kExitOk;
  }

  size_t words = 0;
  const Command* command = Find(args, &words);
  if (command == nullptr) {
    std::vector<std::string> group;
    for (const auto& c : commands_) {
      if (Words(c.name).size() > 1 && Words(c.name)[0] == args[0]) group.push_back(c.name);
    }
    if (group.empty()) {
      err << "paintlockctl: unknown command \"" << args[0] << "\" (see paintlockctl --help)\n";
      return kExitBadUsage;
    }
    if (AsksForHelp(args, 1)) {
      PrintOverview(out, args[0]);
      return kExitOk;
    }
    std::string names;
    for (const auto& g : group) names += (names.empty() ? "" : ", ") + Words(g)[1];
    if (args.size() > 1) {
      err << "paintlockctl: unknown " << args[0] << " command \"" << args[1] << "\" (" << args[0]
          << " has: " << names << ")\n";
    } else {
      err << "paintlockctl: " << args[0] << " needs a subcommand: " << names
          << " (see paintlockctl " << args[0] << " --help)\n";
    }
    return kExitBadUsage;
  }

  if (AsksForHelp(args, words)) {
    out << command->usage;
    return kExitOk;
  }
  std::vector<OptionSpec> options = command->options;
  options.push_back({"json", false});
  options.push_back({"help", false});
  std::string error;
  const std::vector<std::string> rest(args.begin() + static_cast<long>(words), args.end());
  auto parsed = ParseArgs(rest, options, &error);
  CommandContext context(*command, parsed ? *parsed : ParsedArgs(), env, out, err);
  if (!parsed) return context.BadUsage(error);
  const size_t n = parsed->positional().size();
  if (n < command->min_args || n > command->max_args)
    return context.BadUsage(command->args_problem);
  try {
    return command->run(context);
  } catch (const std::exception& e) {
    // Every module catches what it throws; this is the last resort for a bug.
    return context.Fail(std::string("internal error: ") + e.what());
  }
}

std::string Cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

}  // namespace paintlock::admin
