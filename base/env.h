// Where settings come from: the process environment, or a map in tests.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace paintlock::base {

// The value of a setting, nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (an empty value counts as unset).
std::optional<std::string> ProcessEnv(const std::string& name);

// Settings from a map, for tests and tools (an empty value counts as unset).
EnvLookup MapEnv(std::map<std::string, std::string> vars);

// Reads settings and collects every problem ("NAME: what is wrong") rather
// than stopping at the first, so a start-up error lists them all. A setting
// that is unset or has a problem leaves its output as it was (the default).
class SettingsReader {
 public:
  SettingsReader(const EnvLookup& env, std::vector<std::string>* problems)
      : env_(env), problems_(problems) {}

  std::optional<std::string> Get(const std::string& name) const { return env_(name); }
  // A whole number from lo to hi; `what` names it in the problem ("a whole number").
  void Integer(const std::string& name, long lo, long hi, const char* what, int* out);
  template <class Duration>
  void Seconds(const std::string& name, long lo, long hi, Duration* out) {
    int n = -1;
    Integer(name, lo, hi, "a whole number of seconds", &n);
    if (n >= 0) *out = std::chrono::duration_cast<Duration>(std::chrono::seconds(n));
  }
  void Millis(const std::string& name, long lo, long hi, std::chrono::milliseconds* out);
  void Problem(const std::string& name, const std::string& text);

 private:
  const EnvLookup& env_;
  std::vector<std::string>* problems_;
};

}  // namespace paintlock::base
