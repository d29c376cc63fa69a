// PAINTLOCK_DB_STATEMENTS=unnamed: every query runs as an unnamed statement,
// so nothing outlives a transaction and PgBouncer's transaction pooling can
// hand each transaction any server connection. Through PgBouncer itself the
// HA campaign runs it (chaos/); here: what each mode leaves on a connection,
// and a whole sale, credit hold and paintlockctl run in unnamed mode.
#include "locks/statements.h"

#include <doctest/doctest.h>

#include "locks/database.h"
#include "locks/health.h"
#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"

using namespace paintlock::testing;
using nlohmann::json;
namespace locks = paintlock::locks;

namespace {

// Opens a one-connection pool in `mode`, runs a query of sql/queries on it,
// and counts the prepared statements its (only) connection holds afterwards.
int PreparedAfterOneQuery(TestDatabase& db, locks::StatementMode mode) {
  locks::DatabaseOptions options;
  options.url = db.url();
  options.pool_size = 1;
  options.statements = mode;
  std::string error;
  auto database = locks::Database::Open(options, &error);
  REQUIRE_MESSAGE(database, error);
  auto ping = locks::Health(*database).Ping();
  REQUIRE(std::holds_alternative<bool>(ping));
  auto count = database->RunIdempotent("count prepared", [](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return n.exec("SELECT count(*) FROM pg_prepared_statements")[0][0].as<int>();
  });
  REQUIRE(std::holds_alternative<int>(count));
  return std::get<int>(count);
}

}  // namespace

TEST_CASE("statements: unnamed mode prepares nothing on a connection, named mode does") {
  TestDatabase db;
  CHECK(PreparedAfterOneQuery(db, locks::StatementMode::kUnnamed) == 0);
  CHECK(PreparedAfterOneQuery(db, locks::StatementMode::kNamed) >= 1);
}

TEST_CASE("statements: only named and unnamed are statement modes") {
  locks::StatementMode mode = locks::StatementMode::kNamed;
  CHECK(locks::ParseStatementMode("unnamed", &mode));
  CHECK(mode == locks::StatementMode::kUnnamed);
  CHECK(locks::ParseStatementMode("named", &mode));
  CHECK(mode == locks::StatementMode::kNamed);
  CHECK_FALSE(locks::ParseStatementMode("Unnamed", &mode));
  CHECK_FALSE(locks::ParseStatementMode("", &mode));
  CHECK_THROWS_AS(locks::NamedQuerySql("no_such_query"), std::logic_error);
  CHECK(locks::NamedQuerySql("ping").find("SELECT") != std::string::npos);
}

TEST_CASE("statements: a sale, a credit hold and paintlockctl work with unnamed statements") {
  TestDatabase db;
  const std::map<std::string, std::string> unnamed{{"PAINTLOCK_DB_STATEMENTS", "unnamed"}};
  Shop shop(db, unnamed);

  const auto bought = Bought(shop, {"p1", "p2"});
  const std::string reservation = bought.first;  // (clang 14: no structured binding in a lambda)
  const std::string session = bought.second;
  Reply taken = Checkout(shop, {"p2"});
  CHECK(taken.status == 409);
  Pay(shop, session);
  REQUIRE(Eventually([&] { return State(db, reservation) == "sold"; }));

  const std::string base = shop.gateway.base();
  httplib::Headers top_up_headers = ApiKeyHeader();
  top_up_headers.emplace("Idempotency-Key", "statements-top-up");
  CHECK(PostJson(base, "/v1/accounts/acct_s/credits", {{"amount", 100}}, top_up_headers).status ==
        200);
  Reply hold = PostJson(base, "/v1/accounts/acct_s/holds", {{"amount", 60}, {"ttl_seconds", 60}},
                        ApiKeyHeader());
  REQUIRE(hold.status == 201);
  Reply second = PostJson(base, "/v1/accounts/acct_s/holds", {{"amount", 60}, {"ttl_seconds", 60}},
                          ApiKeyHeader());
  CHECK(second.status == 409);
  Reply commit =
      Request(base, "POST", "/v1/holds/" + hold.json["hold_id"].get<std::string>() + "/commit", "",
              "application/json", ApiKeyHeader());
  CHECK(commit.status == 200);

  CompletedProcess shown = Ctl(db, shop.stripe.base(), {"show", reservation}, unnamed);
  CHECK(shown.exit_code == 0);
  CHECK(shown.out.find("sold") != std::string::npos);
  CheckInvariants(db);
}
