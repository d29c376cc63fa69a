#include "tests/support/private_cluster.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/support/harness.h"

namespace paintlock::testing {

PrivateCluster::PrivateCluster()
    : dir_(BuildDir() + "/pg-private-" + std::to_string(getpid())),
      script_(SourceDir() + "/fixtures/pg-cluster.sh") {
  CompletedProcess started = RunToCompletion({script_, "start", dir_}, {});
  REQUIRE_MESSAGE(started.exit_code == 0, started.err);
  url_ = started.out.substr(0, started.out.find('\n'));
  setenv("PAINTLOCK_TEST_ADMIN_URL", url_.c_str(), 1);
}

PrivateCluster::~PrivateCluster() {
  RunToCompletion({script_, "stop", dir_}, {});
  RunToCompletion({"/bin/sh", "-c", "rm -rf \"$(readlink -f \"$0/cluster\")\" \"$0\"", dir_}, {});
}

void PrivateCluster::Stop(const std::string& mode) {
  REQUIRE(RunToCompletion({script_, "stop", dir_, mode}, {}).exit_code == 0);
}

void PrivateCluster::Start() {
  CompletedProcess started = RunToCompletion({script_, "start", dir_}, {});
  REQUIRE_MESSAGE(started.exit_code == 0, started.err);
}

}  // namespace paintlock::testing
