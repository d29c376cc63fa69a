// The gateway's configuration (gateway/config.h) from an environment given as
// "NAME=value" lines. Properties: no exception escapes; a config without
// problems has its numbers in their documented ranges; no problem line ever
// repeats a secret (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET,
// PAINTLOCK_API_KEY, PAINTLOCK_LICENSE_SECRET, PAINTLOCK_VISITOR_KEY).
#include <map>
#include <string>

#include "fuzz/fuzz_support.h"
#include "gateway/config.h"

using namespace paintlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::map<std::string, std::string> env;
  std::string_view text = fuzz::AsText(data, size);
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  const base::EnvLookup lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return std::nullopt;  // as ProcessEnv
    return it->second;
  };

  std::vector<std::string> problems;
  const gateway::Config c = gateway::ParseConfig(lookup, &problems);
  if (problems.empty()) {
    FUZZ_CHECK(c.listen_port >= 0 && c.listen_port <= 65535);
    FUZZ_CHECK(c.hold_ttl.count() > 0 && c.session_ttl.count() > 0);
    FUZZ_CHECK(c.http_threads > 0 && c.database.pool_size > 0 && c.max_body_bytes > 0);
    FUZZ_CHECK(!c.rate_buckets.empty());
  }
  // A secret never shows in a problem line — unless the same text is also the
  // value of a non-secret variable (which may be quoted), or too short to say.
  static const char* const kSecrets[] = {"STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET",
                                         "PAINTLOCK_API_KEY", "PAINTLOCK_LICENSE_SECRET",
                                         "PAINTLOCK_VISITOR_KEY"};
  for (const char* name : kSecrets) {
    auto it = env.find(name);
    if (it == env.end() || it->second.size() < 12 || it->second.find(' ') != std::string::npos) {
      continue;  // short or worded values could match the fixed text of a problem line
    }
    bool elsewhere = false;
    for (const auto& [other, value] : env) {
      bool secret = false;
      for (const char* s : kSecrets) secret = secret || other == s;
      if (!secret && value.find(it->second) != std::string::npos) elsewhere = true;
    }
    if (elsewhere) continue;
    // Nor when the problem lines say it anyway with the variable unset: then
    // it is their fixed wording ("postgresql://user@host/db"), not the secret.
    std::map<std::string, std::string> unset = env;
    unset.erase(name);
    std::vector<std::string> fixed_text;
    (void)gateway::ParseConfig(
        [&](const std::string& n) -> std::optional<std::string> {
          auto u = unset.find(n);
          if (u == unset.end() || u->second.empty()) return std::nullopt;
          return u->second;
        },
        &fixed_text);
    bool worded = false;
    for (const auto& line : fixed_text)
      worded = worded || line.find(it->second) != std::string::npos;
    if (worded) continue;
    for (const auto& line : problems) FUZZ_CHECK(line.find(it->second) == std::string::npos);
  }
  return 0;
}
