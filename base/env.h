// Where settings come from: the process environment, or a map in tests.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace paintlock::base {

// The value of a setting, nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (an empty value counts as unset).
std::optional<std::string> ProcessEnv(const std::string& name);

// Settings from a map, for tests and tools (an empty value counts as unset).
EnvLookup MapEnv(std::map<std::string, std::string> vars);

}  // namespace paintlock::base
