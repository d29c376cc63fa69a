#include "base/env.h"

#include <cstdlib>

namespace paintlock::base {

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

void SettingsReader::Integer(const std::string& name, long lo, long hi, const char* what,
                             int* out) {
  auto v = env_(name);
  if (!v) return;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (end == v->c_str() || *end != '\0' || n < lo || n > hi) {
    Problem(name, std::string("must be ") + what + " from " + std::to_string(lo) + " to " +
                      std::to_string(hi) + ", got \"" + *v + "\"");
    return;
  }
  *out = static_cast<int>(n);
}

void SettingsReader::Millis(const std::string& name, long lo, long hi,
                            std::chrono::milliseconds* out) {
  int n = -1;
  Integer(name, lo, hi, "a whole number of milliseconds", &n);
  if (n >= 0) *out = std::chrono::milliseconds(n);
}

void SettingsReader::Problem(const std::string& name, const std::string& text) {
  problems_->push_back(name + ": " + text);
}

}  // namespace paintlock::base
