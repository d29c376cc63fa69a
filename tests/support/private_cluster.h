// A PostgreSQL cluster of one test's own (fixtures/pg-cluster.sh), for tests
// that stop or restart the database, which would break the tests running
// beside them on the shared one. TestDatabase objects made after it are
// created on it (it sets PAINTLOCK_TEST_ADMIN_URL); it must be running when
// they are destroyed.
#pragma once

#include <string>

namespace paintlock::testing {

class PrivateCluster {
 public:
  PrivateCluster();   // creates and starts it
  ~PrivateCluster();  // stops and removes it
  // A fast shutdown (every backend told to end; mode "immediate": a crash),
  // and a start on the same data.
  void Stop(const std::string& mode = "fast");
  void Start();
  void Restart() {
    Stop();
    Start();
  }

 private:
  std::string dir_, script_, url_;
};

}  // namespace paintlock::testing
