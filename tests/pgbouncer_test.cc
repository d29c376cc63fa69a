// Integration: the gateway behind PgBouncer (transaction pooling, unnamed statements), when
// PgBouncer holds a statement in its queue because no server is there: during a failover
// until the new primary answers, here because PgBouncer is PAUSEd. The answer a buyer gets
// must match what the database holds, and the pool must be whole afterwards.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/harness.h"

using namespace paintlock::testing;
using std::chrono::milliseconds;

namespace {

// A query-string parameter of a libpq URL ("" when absent).
std::string UrlParameter(const std::string& url, const std::string& name) {
  const auto at = url.find(name + "=");
  if (at == std::string::npos) return "";
  const auto start = at + name.size() + 1;
  return url.substr(start, url.find('&', start) - start);
}

// PgBouncer 1.18 from Debian in front of the tests' PostgreSQL (its Unix socket), in
// transaction pooling, with a short query_wait_timeout. As root it drops to `postgres`
// (-u), as PostgreSQL does.
class Bouncer {
 public:
  explicit Bouncer(int query_wait_seconds) {
    REQUIRE_MESSAGE(access("/usr/sbin/pgbouncer", X_OK) == 0,
                    "PgBouncer is missing: run `make test-deps`");
    const std::string admin = AdminUrl();
    user_ = UrlParameter(admin, "user");
    char dir_template[] = "/tmp/paintlock-pgbouncer-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    dir_.path = dir_template;
    chmod(dir_template, 0755);  // PgBouncer reads its files after it drops to postgres
    port_ = FreeLoopbackPort();
    std::ofstream(dir_.path + "/userlist.txt") << "\"" << user_ << "\" \"\"\n";
    std::ofstream(dir_.path + "/pgbouncer.ini")
        << "[databases]\n* = host=" << UrlParameter(admin, "host") << "\n"
        << "[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = " << port_
        << "\nunix_socket_dir =\nauth_type = trust\nauth_file = " << dir_.path
        << "/userlist.txt\nadmin_users = " << user_
        << "\npool_mode = transaction\ndefault_pool_size = 8\nquery_wait_timeout = "
        << query_wait_seconds
        << "\nignore_startup_parameters = extra_float_digits,options\n"
           "log_connections = 0\nlog_disconnections = 0\n";
    std::vector<std::string> argv = {"/usr/sbin/pgbouncer"};
    if (getuid() == 0) argv.insert(argv.end(), {"-u", "postgres"});
    argv.push_back(dir_.path + "/pgbouncer.ini");
    process_ = std::make_unique<Process>("pgbouncer", argv, std::map<std::string, std::string>{});
    REQUIRE_MESSAGE(Eventually([&] { return Admin("SHOW VERSION").exit_code == 0; }),
                    process_->Log());
  }
  // A URL of database `name` through PgBouncer.
  std::string Url(const std::string& name) const {
    return "postgresql://" + user_ + "@127.0.0.1:" + std::to_string(port_) + "/" + name;
  }
  // A command on PgBouncer's admin console (PAUSE, RESUME, SHOW …), through psql: libpqxx
  // refuses the console's server version.
  CompletedProcess Admin(const std::string& command) {
    return RunToCompletion({"/usr/bin/psql", Url("pgbouncer"), "-XAtq", "-c", command}, {});
  }

 private:
  struct Dir {  // removed however the test ends, after PgBouncer has stopped
    std::string path;
    ~Dir() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
  } dir_;
  std::string user_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace

TEST_CASE(
    "pgbouncer: a reservation whose statement waited out query_wait_timeout tells the truth") {
  TestDatabase db;
  Bouncer bouncer(/*query_wait_seconds=*/2);
  FakeStripe stripe;
  Gateway gw(db, stripe.base(),
             {{{"DATABASE_URL", bouncer.Url(db.name())},
               {"PAINTLOCK_DB_STATEMENTS", "unnamed"},
               {"PAINTLOCK_LISTEN_DATABASE_URL", db.url()}}});
  // Through PgBouncer at all.
  REQUIRE(PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p1"}}}, ApiKeyHeader()).status ==
          201);

  // No server for the next statement: it waits in PgBouncer's queue, and after 2 s PgBouncer
  // fails it and closes the connection. Nothing ran, but the gateway cannot know that.
  REQUIRE(bouncer.Admin("PAUSE").exit_code == 0);
  Reply reply;
  std::thread buyer([&] {
    reply = PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p2"}}}, ApiKeyHeader());
  });
  const auto failed = [&] {
    return !gw.process().Events("database_outcome_unknown").empty() ||
           !gw.process().Events("database_unavailable").empty();
  };
  const bool seen = Eventually(failed, milliseconds(15000));
  const bool resumed = bouncer.Admin("RESUME").exit_code == 0;
  buyer.join();
  REQUIRE(seen);
  REQUIRE(resumed);
  CAPTURE(reply.body);
  CAPTURE(gw.process().Log());
  // The log says what happened to the connection, not libpqxx's "Could not obtain client
  // encoding", which is how libpqxx 6 reports a connection closed during a statement
  // (a worker's words: "closed while the statement ran"; the reactor's asynchronous
  // connection passes on libpq's: "server closed the connection unexpectedly").
  auto failures = gw.process().Events("database_outcome_unknown");
  for (auto& e : gw.process().Events("database_unavailable")) failures.push_back(e);
  REQUIRE(!failures.empty());
  const std::string error = failures[0].value("error", "");
  CHECK(error.find("closed") != std::string::npos);
  CHECK(error.find("client encoding") == std::string::npos);
  // The answer matches the database: nothing was reserved, and the buyer is told so.
  CHECK(db.HeldOn("p2") == "0");
  CHECK(reply.status == 503);
  CHECK(reply.json["message"].get<std::string>().find("Nothing was reserved") != std::string::npos);
  // And the pool is whole: the painting can be reserved at once.
  CHECK(PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p2"}}}, ApiKeyHeader()).status ==
        201);
  CHECK(db.HeldOn("p2") == "1");
  CheckInvariants(db);
}
