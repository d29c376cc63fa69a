// For the gateway's unit tests: the settings ParseConfig requires, so that a
// test names only the ones it is about.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "base/env.h"

namespace paintlock::gateway::testing {

// A database and a Stripe key (what ParseConfig requires), plus `vars`; a
// name in `vars` wins.
inline base::EnvLookup RequiredEnvPlus(std::map<std::string, std::string> vars) {
  vars.emplace("DATABASE_URL", "postgresql:///x");
  vars.emplace("STRIPE_SECRET_KEY", "sk_test_123");
  return base::MapEnv(std::move(vars));
}

}  // namespace paintlock::gateway::testing
