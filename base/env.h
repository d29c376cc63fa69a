// Where settings come from: the process environment, or a map in tests.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace paintlock::base {

// The value of a setting, nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (an empty value counts as unset).
std::optional<std::string> ProcessEnv(const std::string& name);

}  // namespace paintlock::base
