// The options and arguments of one paintlockctl command: "--name VALUE",
// "--name=VALUE", boolean "--name", "-h" for "--help"; "--" ends options (so
// a reason may start with a dash). Pure; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace paintlock::admin {

struct OptionSpec {
  std::string name;  // without the dashes: "reason"
  bool takes_value = false;
};

class ParsedArgs {
 public:
  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(const std::string& name) const { return given_.count(name) > 0; }
  // The value of an option that takes one; nullopt when not given.
  std::optional<std::string> Value(const std::string& name) const;

 private:
  friend std::optional<ParsedArgs> ParseArgs(const std::vector<std::string>&,
                                             const std::vector<OptionSpec>&, std::string*);
  std::vector<std::string> positional_;
  std::map<std::string, std::string> given_;  // name → value ("" for booleans)
};

// nullopt and *error (one line naming the option) for an unknown option, a
// missing value, a value given to a boolean option, or an option given twice.
std::optional<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                    const std::vector<OptionSpec>& options, std::string* error);

}  // namespace paintlock::admin
