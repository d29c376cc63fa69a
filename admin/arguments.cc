#include "admin/arguments.h"

namespace paintlock::admin {

std::optional<std::string> ParsedArgs::Value(const std::string& name) const {
  auto it = given_.find(name);
  if (it == given_.end()) return std::nullopt;
  return it->second;
}

std::optional<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                    const std::vector<OptionSpec>& options, std::string* error) {
  ParsedArgs parsed;
  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_ended || arg.size() < 2 || arg[0] != '-') {
      parsed.positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    std::string name;
    std::optional<std::string> inline_value;
    if (arg == "-h") {
      name = "help";
    } else if (arg.rfind("--", 0) == 0) {
      name = arg.substr(2);
      const size_t eq = name.find('=');
      if (eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name.resize(eq);
      }
    } else {
      *error = "unknown option " + arg;
      return std::nullopt;
    }
    const OptionSpec* spec = nullptr;
    for (const auto& o : options) {
      if (o.name == name) spec = &o;
    }
    if (spec == nullptr) {
      *error = "unknown option --" + name;
      return std::nullopt;
    }
    if (parsed.Has(name)) {
      *error = "--" + name + " is given twice";
      return std::nullopt;
    }
    std::string value;
    if (spec->takes_value) {
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        *error = "--" + name + " needs a value";
        return std::nullopt;
      }
    } else if (inline_value) {
      *error = "--" + name + " takes no value";
      return std::nullopt;
    }
    parsed.given_[name] = value;
  }
  return parsed;
}

}  // namespace paintlock::admin
