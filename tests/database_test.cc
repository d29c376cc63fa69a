// locks::Database against a real PostgreSQL: what the pool does with a
// connection whose server changed role under it.
#include "locks/database.h"

#include <doctest/doctest.h>

#include "tests/support/harness.h"

using namespace paintlock::testing;
namespace locks = paintlock::locks;

TEST_CASE(
    "database: a write refused as read-only (a demoted primary) runs again on a fresh "
    "connection") {
  TestDatabase db;
  locks::DatabaseOptions options;
  options.url = db.url();
  options.pool_size = 1;
  std::string error;
  auto database = locks::Database::Open(options, &error);
  REQUIRE_MESSAGE(database, error);

  std::vector<int> pids;
  auto written = database->Run("demoted write", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pids.push_back(n.exec("SELECT pg_backend_pid()")[0][0].as<int>());
    // The first connection's server turns read-only, as a demoted primary does.
    if (pids.size() == 1) n.exec("SET default_transaction_read_only = on");
    return n.exec("UPDATE paintings SET title = title WHERE id = 'p1'").affected_rows();
  });
  REQUIRE(std::holds_alternative<std::size_t>(written));
  CHECK(std::get<std::size_t>(written) == 1);
  REQUIRE(pids.size() == 2);
  CHECK(pids[0] != pids[1]);  // the read-only connection was dropped, not pooled again

  // And the pool's connection now is the fresh one.
  auto pid = database->RunIdempotent("pid", [](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return n.exec("SELECT pg_backend_pid()")[0][0].as<int>();
  });
  REQUIRE(std::holds_alternative<int>(pid));
  CHECK(std::get<int>(pid) == pids[1]);
}
