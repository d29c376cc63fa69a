#include <doctest/doctest.h>

#include <map>

#include "gateway/config.h"
#include "gateway/config_test_env.h"

using namespace paintlock::gateway;
using paintlock::gateway::testing::RequiredEnvPlus;

namespace {

std::vector<std::string> ProblemsWith(std::map<std::string, std::string> extra, Config* out) {
  std::vector<std::string> problems;
  *out = ParseConfig(RequiredEnvPlus(std::move(extra)), &problems);
  return problems;
}

}  // namespace

TEST_CASE("metrics config: off by default, listen defaults to 127.0.0.1:9464") {
  Config c;
  CHECK(ProblemsWith({}, &c).empty());
  CHECK(c.metrics == MetricsExposure::kOff);
  CHECK(ProblemsWith({{"PAINTLOCK_METRICS", "listen"}}, &c).empty());
  CHECK(c.metrics == MetricsExposure::kListen);
  CHECK(c.metrics_listen_host == "127.0.0.1");
  CHECK(c.metrics_listen_port == 9464);
  CHECK(ProblemsWith({{"PAINTLOCK_METRICS", "listen"}, {"PAINTLOCK_METRICS_LISTEN", "[::1]:0"}}, &c)
            .empty());
  CHECK(c.metrics_listen_host == "::1");
  CHECK(c.metrics_listen_port == 0);
}

TEST_CASE("metrics config: api-key needs the API key") {
  Config c;
  auto problems = ProblemsWith({{"PAINTLOCK_METRICS", "api-key"}}, &c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("PAINTLOCK_METRICS: api-key needs PAINTLOCK_API_KEY") == 0);
  CHECK(ProblemsWith({{"PAINTLOCK_METRICS", "api-key"}, {"PAINTLOCK_API_KEY", "0123456789abcdef"}},
                     &c)
            .empty());
  CHECK(c.metrics == MetricsExposure::kApiKey);
}

TEST_CASE("metrics config: bad values are named with what was given") {
  Config c;
  auto problems = ProblemsWith({{"PAINTLOCK_METRICS", "on"}}, &c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "PAINTLOCK_METRICS: must be off, api-key or listen, got \"on\"");

  problems =
      ProblemsWith({{"PAINTLOCK_METRICS", "listen"}, {"PAINTLOCK_METRICS_LISTEN", "9464"}}, &c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("PAINTLOCK_METRICS_LISTEN: must be HOST:PORT") == 0);

  problems = ProblemsWith({{"PAINTLOCK_METRICS_LISTEN", "127.0.0.1:9464"}}, &c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "PAINTLOCK_METRICS_LISTEN: is used only with PAINTLOCK_METRICS=listen");

  problems = ProblemsWith({{"PAINTLOCK_METRICS", "listen"},
                           {"PAINTLOCK_LISTEN", "127.0.0.1:8080"},
                           {"PAINTLOCK_METRICS_LISTEN", "127.0.0.1:8080"}},
                          &c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("PAINTLOCK_METRICS_LISTEN: must be another port") == 0);
}
